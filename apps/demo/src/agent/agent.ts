// The agent that runs in the page, built the way an embedding developer would build one on @cairn/core: each
// model step gets the plan in its context (in the chosen family's format) through a conversation that keeps the
// request's prefix byte-stable for the provider's prompt cache (conversation.ts); the model's tool calls go
// through the toolkit's dispatch, and the results go back to the model until it answers. Everything it says and
// every tool call with its result is written to the plan's chat, so everyone sees it. A model call that does not
// answer within the timeout, or that the person cancels, ends the turn with a notice saying which.
import {
  type Chat,
  createToolkit,
  FAMILY_FORMATS,
  type FamilyName,
  isToolError,
  type Plan,
  type Toolkit,
} from '@cairn/core';
import { learnedProcedures, learnedProcedureTool, type Skill, traceRecorder } from '@cairn/core/learning';
import type { OpenAIToolDefinition, Presence as RenderPresence } from '@cairn/core/protocol';
import type * as Y from 'yjs';
import { Conversation } from './conversation.js';
import type { Model, ModelMessage } from './model.js';

const MAX_STEPS = 8;
/** How long one model call may take before the turn is stopped, unless the page says otherwise. */
const DEFAULT_TIMEOUT_MS = 60_000;
/** Tool results go into the chat and the next request; a huge list is cut (the model can ask again). */
const MAX_RESULT_CHARS = 8_000;

export interface AgentOptions {
  /** The person's plan; the toolkit makes the agent its own view, so its writes (and undo) are its own. */
  plan: Plan;
  /** The chat as the agent writes it (its actor). */
  chat: Chat;
  actor: string;
  /** Asked at each full render of the plan: the person may rename themselves (and so their agent). */
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
  /** How long one model call may take, in ms (asked at each call). Default DEFAULT_TIMEOUT_MS. */
  timeoutMs?: () => number;
  /** How the agent's requests are built: see ConversationOptions.planText (the benchmark's baseline). */
  planText?: 'deltas' | 'every-call';
}

/** Why a model call was stopped before it answered. */
class Stopped extends Error {
  constructor(readonly why: 'cancelled' | 'timeout') {
    super(why);
  }
}

export class BrowserAgent {
  private toolkit: Toolkit | null = null;
  private conversation: Conversation | null = null;
  private family: FamilyName = 'cairn';
  private busy: Promise<void> = Promise.resolve();
  /** Turns asked for and not finished (the running one included). */
  private turns = 0;
  /** Stops the model call in flight, if any. */
  private stopCall: ((why: Stopped) => void) | null = null;

  constructor(
    private readonly options: AgentOptions,
    public model: Model,
  ) {}

  setFamily(family: FamilyName): void {
    if (family === this.family && this.toolkit) return;
    this.toolkit?.destroy();
    this.toolkit = null;
    this.conversation = null;
    this.family = family;
  }

  get currentFamily(): FamilyName {
    return this.family;
  }

  /** Whether a turn is running; `waiting` counts the turns asked for behind it. */
  get state(): { running: boolean; waiting: number } {
    return { running: this.turns > 0, waiting: Math.max(0, this.turns - 1) };
  }

  /**
   * Answers the person's message `entryId` (already in the chat). One turn runs at a time; a message sent during
   * a turn is read by the next one (the page says so), and what changed before it is told ahead of it.
   */
  respond(entryId?: string): Promise<void> {
    if (entryId && this.turns === 0) this.talk().noteBefore(entryId);
    this.turns++;
    const next = this.busy.then(() => this.turn()).finally(() => this.turns--);
    this.busy = next.catch(() => undefined);
    return next;
  }

  /** Stops the model call in flight (the turn ends with a notice); later turns still run. */
  cancel(): boolean {
    if (!this.stopCall) return false;
    this.stopCall(new Stopped('cancelled'));
    return true;
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

  private talk(): Conversation {
    const { plan, actor, owner, nameOf, presence, planText } = this.options;
    this.conversation ??= new Conversation({
      plan,
      actor,
      owner,
      format: FAMILY_FORMATS[this.family],
      nameOf,
      presence,
      ...(planText ? { planText } : {}),
      intro: () =>
        [
          `You are ${this.options.name()}, an agent working on a shared plan with the people in this chat.`,
          `Change the plan only with your tools (the ${this.family} family); say briefly what you did.`,
        ].join('\n'),
    });
    return this.conversation;
  }

  private async turn(): Promise<void> {
    const { chat, actor, plan } = this.options;
    const toolkit = this.kit();
    const talk = this.talk();
    const tools = toolkit.definitions('openai');
    // What this turn may read: the chat as it started, and what the turn writes. A message sent meanwhile is the
    // next turn's, so two turns never answer it both.
    const seen = new Set(chat.list().map((e) => e.id));
    const request = chat.list().findLast((e) => e.role === 'user');
    let end: string | null = null;
    const stop = toolkit.plan.onChange((event) => {
      const mine = event.changes.filter((c) => c.actor === actor && c.kind !== 'removed');
      const last = mine.at(-1);
      if (last) this.options.onActivity?.(last.id);
    });
    try {
      for (let step = 0; step < MAX_STEPS; step++) {
        // Asked at every step, since an offer is noted on the newest open task, which the first step may make;
        // the text goes with the person's message once, so the requests that follow keep their prefix.
        const learned = learnedProcedures(
          plan,
          { skills: this.options.skills(), traces: this.options.traces },
          actor,
          Date.now(),
        );
        if (step === 0 && request) talk.offerLearned(request.id, learned);
        const messages = talk.messages(chat.list().filter((e) => seen.has(e.id)));
        if (!messages) return; // nothing new to answer (an earlier turn read this message too)
        const reply = await this.call(messages, tools);
        if (!reply.text && reply.toolCalls.length === 0) {
          end = this.notice('The model answered with neither text nor a tool call.');
          return;
        }
        const entry = chat.append({
          role: 'assistant',
          text: reply.text.slice(0, 20_000),
          ...(reply.toolCalls.length > 0 ? { toolCalls: reply.toolCalls } : {}),
        });
        seen.add(entry.id);
        end = entry.id;
        if (reply.toolCalls.length === 0) return;
        for (const [i, call] of reply.toolCalls.entries()) {
          const result = await toolkit.dispatch(call.name, call.arguments);
          const callId = entry.toolCalls?.[i]?.id ?? call.id;
          chat.setToolResult(entry.id, callId, clip(JSON.stringify(result ?? null)), isToolError(result));
        }
      }
      end = this.notice(`Stopped after ${MAX_STEPS} model steps without a final answer.`);
    } catch (error) {
      end = this.notice(this.explain(error));
    } finally {
      if (end) talk.turnEnded(chat.list(), seen, end);
      stop();
      this.options.onActivity?.(null);
    }
  }

  /** One model call, stopped by `cancel()` or by the timeout, whichever comes first. */
  private async call(messages: ModelMessage[], tools: OpenAIToolDefinition[]) {
    const controller = new AbortController();
    const stopped = new Promise<never>((_, fail) => {
      this.stopCall = (why) => {
        controller.abort(why);
        fail(why);
      };
    });
    const timeout = this.options.timeoutMs?.() ?? DEFAULT_TIMEOUT_MS;
    const timer = setTimeout(() => this.stopCall?.(new Stopped('timeout')), timeout);
    try {
      // A model that ignores the signal (the offline planner) still gives way: the turn does not wait for it.
      return await Promise.race([
        this.model.complete({ messages, tools, signal: controller.signal }),
        stopped,
      ]);
    } finally {
      clearTimeout(timer);
      this.stopCall = null;
    }
  }

  private explain(error: unknown): string {
    if (error instanceof Stopped) {
      const seconds = Math.round((this.options.timeoutMs?.() ?? DEFAULT_TIMEOUT_MS) / 1000);
      return error.why === 'timeout'
        ? `The model did not answer within ${seconds} s, so the call was stopped (timeout). The endpoint may be ` +
            'overloaded or hung; send a message to try again, or change the timeout or the model in Settings.'
        : 'The model call was cancelled before it answered. Send a message to try again.';
    }
    return `The model could not answer: ${error instanceof Error ? error.message : String(error)}`;
  }

  /**
   * Ends a turn with what went wrong, as the agent's own reply: a `system` turn is one a model trusts most, so a
   * server with auth takes it only from an admin (docs/THREAT_MODEL.md), and the agent writes with its person's
   * token. People see it in the chat; the model reads it as what it said when the turn ended.
   */
  private notice(text: string): string {
    return this.options.chat.append({ role: 'assistant', text }).id;
  }
}

function clip(text: string): string {
  return text.length > MAX_RESULT_CHARS ? `${text.slice(0, MAX_RESULT_CHARS)}… (cut)` : text;
}
