// The agent that runs in the page, built the way an embedding developer would build one on @cairn/core: each
// model step gets the plan rendered into its context (renderPlan, in the chosen family's format), the model's
// tool calls go through the toolkit's dispatch, and the results go back to the model until it answers in text.
// Everything it says and every tool call with its result is written to the plan's chat, so everyone sees it.
import {
  type Chat,
  type ChatEntry,
  createToolkit,
  type FamilyName,
  isToolError,
  learnedProcedures,
  learnedProcedureTool,
  type Plan,
  type RenderFormat,
  type Presence as RenderPresence,
  renderPlan,
  type Skill,
  type Toolkit,
  traceRecorder,
} from '@cairn/core';
import type * as Y from 'yjs';
import type { Model, ModelMessage } from './model.js';

/** The context format that goes with each family: the one its seed's agents read. */
export const FORMAT_OF: Record<FamilyName, RenderFormat> = {
  cairn: 'native',
  task_manage: 'checklist',
  todo: 'reminder',
  task_graph: 'native',
  ongoing_task: 'open-tasks',
};

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

  /** The system prompt with the rendered plan, then the conversation as chat-completions messages. */
  private context(): ModelMessage[] {
    const { plan, actor, owner, nameOf } = this.options;
    const name = this.options.name();
    const rendered = renderPlan(plan, {
      format: FORMAT_OF[this.family],
      actor,
      presence: this.options.presence(),
      maxTokens: 4000,
    });
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
      rendered || '(The plan is empty.)',
      ...(learned ? ['', learned] : []),
    ].join('\n');
    const messages: ModelMessage[] = [{ role: 'system', content: system }];
    for (const entry of this.options.chat.list().slice(-MAX_HISTORY)) {
      messages.push(...asMessages(entry, actor, owner, nameOf));
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
