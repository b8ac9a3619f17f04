// The agent that runs in the page, built the way an embedding developer would build one on @cairn/core: each
// model step gets the plan in its context (in the chosen family's format) through a context feed, so the system
// prompt stays byte-identical for the provider's prompt cache while what others changed comes as short messages;
// the model's tool calls go through the toolkit's dispatch, and the results go back to the model until it answers.
// Everything it says and every tool call with its result is written to the plan's chat, so everyone sees it.
import {
  type Chat,
  type ChatEntry,
  type ContextFeed,
  createContextFeed,
  createToolkit,
  FAMILY_FORMATS,
  type FamilyName,
  isToolError,
  learnedProcedures,
  learnedProcedureTool,
  type Plan,
  type Presence as RenderPresence,
  type Skill,
  type Toolkit,
  traceRecorder,
} from '@cairn/core';
import type * as Y from 'yjs';
import type { Model, ModelMessage } from './model.js';

const MAX_STEPS = 8;
const MAX_HISTORY = 30;
/** Tool results go into the chat and the next request; a huge list is cut (the model can ask again). */
const MAX_RESULT_CHARS = 8_000;

export interface AgentOptions {
  /** The person's plan; the toolkit makes the agent its own view, so its writes (and undo) are its own. */
  plan: Plan;
  /** The chat as the agent writes it (its actor). */
  chat: Chat;
  actor: string;
  /** Asked each turn: the person may rename themselves (and so their agent) meanwhile. */
  name: () => string;
  /** The person this agent works for: their messages are requests. */
  owner: string;
  nameOf: (actor: string) => string;
  presence: () => RenderPresence[];
  /** Told which task the agent is on (for presence), or null when the turn ends. */
  onActivity?: (taskId: string | null) => void;
  /** The plan's trace document: every tool call is recorded there, and the procedures offered. */
  traces: Y.Doc;
  /** The scope's learned skills, as they are now. */
  skills: () => readonly Skill[];
}

export class BrowserAgent {
  private toolkit: Toolkit | null = null;
  private feed: ContextFeed | null = null;
  /** What others changed, told since the plan text was last rendered, each after the chat entry it followed. */
  private deltas: Array<{ after: string | null; text: string }> = [];
  private family: FamilyName = 'cairn';
  private busy: Promise<void> = Promise.resolve();

  constructor(
    private readonly options: AgentOptions,
    public model: Model,
  ) {}

  setFamily(family: FamilyName): void {
    if (family === this.family && this.toolkit) return;
    this.toolkit?.destroy();
    this.toolkit = null;
    this.feed = null;
    this.deltas = [];
    this.family = family;
  }

  get currentFamily(): FamilyName {
    return this.family;
  }

  /** Answers the latest request in the chat; turns queue up, one at a time. */
  respond(): Promise<void> {
    const next = this.busy.then(() => this.turn());
    this.busy = next.catch(() => undefined);
    return next;
  }

  private kit(): Toolkit {
    if (!this.toolkit) {
      this.toolkit = createToolkit(this.options.plan, {
        actor: this.options.actor,
        families: [this.family],
        onCall: traceRecorder(this.options.traces),
        extraTools: [learnedProcedureTool(this.options.skills)],
      });
    }
    return this.toolkit;
  }

  private async turn(): Promise<void> {
    const { chat, actor } = this.options;
    const toolkit = this.kit();
    const tools = toolkit.definitions('openai');
    const stop = toolkit.plan.onChange((event) => {
      const mine = event.changes.filter((c) => c.actor === actor && c.kind !== 'removed');
      const last = mine.at(-1);
      if (last) this.options.onActivity?.(last.id);
    });
    try {
      for (let step = 0; step < MAX_STEPS; step++) {
        const reply = await this.model.complete({ messages: this.context(), tools });
        if (!reply.text && reply.toolCalls.length === 0) break;
        const entry = chat.append({
          role: 'assistant',
          text: reply.text.slice(0, 20_000),
          ...(reply.toolCalls.length > 0 ? { toolCalls: reply.toolCalls } : {}),
        });
        if (reply.toolCalls.length === 0) return;
        for (const [i, call] of reply.toolCalls.entries()) {
          const result = await toolkit.dispatch(call.name, call.arguments);
          const callId = entry.toolCalls?.[i]?.id ?? call.id;
          chat.setToolResult(entry.id, callId, clip(JSON.stringify(result ?? null)), isToolError(result));
        }
      }
      chat.append({ role: 'system', text: `Stopped after ${MAX_STEPS} model steps without a final answer.` });
    } catch (error) {
      chat.append({
        role: 'system',
        text: `The model could not answer: ${error instanceof Error ? error.message : String(error)}`,
      });
    } finally {
      stop();
      this.options.onActivity?.(null);
    }
  }

  /**
   * The system prompt with the plan (unchanged since its last render), then the conversation as chat-completions
   * messages, with what others changed told where it happened.
   */
  private context(): ModelMessage[] {
    const { plan, actor, owner, nameOf, chat } = this.options;
    const name = this.options.name();
    // Presence is read again at each full render, not frozen when the feed is made.
    const presence = { [Symbol.iterator]: () => this.options.presence()[Symbol.iterator]() };
    this.feed ??= createContextFeed(plan, {
      format: FAMILY_FORMATS[this.family],
      actor,
      presence,
      maxTokens: 4000,
    });
    const history = chat.list().slice(-MAX_HISTORY);
    const turn = this.feed.turn();
    if (turn.reRendered) this.deltas = [];
    else if (turn.delta) this.deltas.push({ after: history.at(-1)?.id ?? null, text: turn.delta });
    const learned = learnedProcedures(
      plan,
      { skills: this.options.skills(), traces: this.options.traces },
      actor,
      Date.now(),
    );
    const system = [
      `You are ${name}, an agent working on a shared plan with the people in this chat.`,
      `Change the plan only with your tools (the ${this.family} family); say briefly what you did.`,
      '',
      turn.plan || '(The plan is empty.)',
      ...(learned ? ['', learned] : []),
    ].join('\n');
    const messages: ModelMessage[] = [{ role: 'system', content: system }];
    const shown = new Set(history.map((e) => e.id));
    const told = (after: string | null) =>
      this.deltas
        .filter((d) => d.after === after)
        .map((d): ModelMessage => ({ role: 'system', content: d.text }));
    // Deltas whose chat entry has scrolled out of the window are older than everything shown.
    for (const delta of this.deltas) {
      if (delta.after !== null && !shown.has(delta.after))
        messages.push({ role: 'system', content: delta.text });
    }
    messages.push(...told(null));
    for (const entry of history) {
      messages.push(...asMessages(entry, actor, owner, nameOf), ...told(entry.id));
    }
    return messages;
  }
}

function asMessages(
  entry: ChatEntry,
  self: string,
  owner: string,
  nameOf: (a: string) => string,
): ModelMessage[] {
  if (entry.role === 'user') {
    return [
      {
        role: 'user',
        content: entry.actor === owner ? entry.text : `${nameOf(entry.actor)} says: ${entry.text}`,
      },
    ];
  }
  if (entry.role !== 'assistant' || entry.actor !== self) return [];
  const calls = entry.toolCalls ?? [];
  const out: ModelMessage[] = [
    {
      role: 'assistant',
      content: entry.text || null,
      ...(calls.length > 0
        ? {
            tool_calls: calls.map((c) => ({
              id: c.id,
              type: 'function' as const,
              function: { name: c.name, arguments: c.arguments },
            })),
          }
        : {}),
    },
  ];
  // Every call needs an answer in the request; one still running (or cut off by a reload) says so.
  for (const c of calls) {
    out.push({ role: 'tool', tool_call_id: c.id, content: c.result ?? '{"error":{"message":"no result"}}' });
  }
  return out;
}

function clip(text: string): string {
  return text.length > MAX_RESULT_CHARS ? `${text.slice(0, MAX_RESULT_CHARS)}… (cut)` : text;
}
