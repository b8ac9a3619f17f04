// What the in-page agent sends a model at each step, built so a provider's prompt cache holds: the system prompt
// carries the plan as it was at its last full render and stays byte-identical; every change since (the agent's
// own included) is told once, in order, inside the conversation: in a person's message for what changed before
// it, after a tool result for what changed during a turn. Each request is the previous one plus what is new.
// The history is trimmed in blocks, from a person's message, at the same moment the plan is rendered again, so
// the prefix breaks once per block rather than every turn. Roles follow the strictest providers' rules (one
// system message first; user and assistant alternate; tool results follow their call and precede an assistant).
import {
  type Actor,
  type ChatEntry,
  type ContextFeed,
  type ContextTurn,
  createContextFeed,
  type Plan,
  type RenderFormat,
  renderPlan,
} from '@cairn/core';
import { defaultTokenizer, type Presence as RenderPresence } from '@cairn/core/protocol';
import type { ModelMessage } from './model.js';

/** Entries (messages, assistant steps) the window may hold before it is trimmed. */
export const MAX_WINDOW = 40;
/** About how many entries a trim keeps: the newest, from a person's message on. */
export const KEEP_AFTER_TRIM = 16;
/** The plan is rendered with this budget; past it, the render says what it left out. */
const PLAN_TOKENS = 4000;
/**
 * Plan changes told in the window before it is trimmed and the plan rendered again. Not a share of the plan, as
 * the context feed's own rule is: a fresh prefix costs the whole request (tool definitions and every message after
 * it miss the cache), so an empty or small plan is no reason to render it again after a change or two.
 */
export const NOTES_TOKENS = 1500;

const CHANGES_OPEN = '<plan_changes>';
const CHANGES_CLOSE = '</plan_changes>';
const LEARNED_OPEN = '<learned_procedures>';
const LEARNED_CLOSE = '</learned_procedures>';

export interface ConversationOptions {
  plan: Plan;
  /** The agent: its own changes are told as "by you". */
  actor: Actor;
  /** The person the agent works for: their messages are sent as they wrote them, others' with their name. */
  owner: Actor;
  format: RenderFormat;
  /** Display names, as the page shows them. */
  nameOf: (actor: Actor) => string;
  presence: () => RenderPresence[];
  /** The instructions above the plan (who the agent is, which tools); read at each full render. */
  intro: () => string;
  /**
   * `deltas` (the default): the plan text stays as rendered and changes are told in the conversation.
   * `every-call`: the plan is rendered again for every request and no change is told, the usual way of
   * re-injecting a plan, kept as the baseline the context benchmark compares with.
   */
  planText?: 'deltas' | 'every-call';
}

/** One agent conversation's context: the plan prefix, the window over the chat, and the changes told in it. */
export class Conversation {
  private feed: ContextFeed | null = null;
  private system = '';
  /** The first chat entry of the window (a person's message), or null before the first request. */
  private start: string | null = null;
  /** Plan changes told with an entry: before and after a message's text, or after a step's last tool result. */
  private readonly changes = new Map<string, { before: string[]; after: string[] }>();
  /** People's messages sent while a turn ran, with the entry that ended that turn: they are read after it. */
  private readonly late = new Map<string, string>();
  /** Messages some request has carried. */
  private readonly sent = new Set<string>();
  /** Learned procedures offered with a message; kept across renders, since they are not plan state. */
  private readonly learned = new Map<string, string>();
  /** Tokens of the plan changes told since the last full render. */
  private noted = 0;

  constructor(private readonly options: ConversationOptions) {}

  /**
   * Tells what changed before a person's message, ahead of it: called as the message is sent, while the agent is
   * idle (during a turn, the turn's next request tells it, which comes before the message in the conversation).
   */
  noteBefore(entryId: string): void {
    // Before the first request there is nothing to tell: that request renders the plan as it is then.
    if (this.options.planText === 'every-call' || !this.feed) return;
    const turn = this.feed.turn();
    if (turn.delta) this.attach(entryId, 'before', turn.delta);
  }

  /**
   * Records a finished turn: the messages people sent while it ran (not in `seen`, the entries it started with)
   * come before its last entry `end` in the chat, but the agent read them after it, and so does the model.
   */
  turnEnded(history: readonly ChatEntry[], seen: ReadonlySet<string>, end: string): void {
    for (const entry of history) {
      if (entry.id === end) return;
      if (entry.role === 'user' && !seen.has(entry.id)) this.late.set(entry.id, end);
    }
  }

  /** Offers learned procedures with a message not yet sent (a message sent already keeps its bytes). */
  offerLearned(entryId: string, text: string): void {
    if (text && !this.learned.has(entryId) && !this.sent.has(entryId)) this.learned.set(entryId, text);
  }

  /**
   * The messages of the next request, or null when the conversation ends with the agent's own answer (nothing
   * new to answer). `history`: the chat entries this turn may see, oldest first.
   */
  messages(history: readonly ChatEntry[]): ModelMessage[] | null {
    let window = this.windowOf(history);
    const trim = this.start === null || window.length > MAX_WINDOW || this.noted > NOTES_TOKENS;
    if (trim) window = this.trimmed(history);
    const before = this.compose(window);
    if (before.messages.at(-1)?.role !== 'user' && before.messages.at(-1)?.role !== 'tool') return null;
    // The window moves only with a fresh render: the notes it drops are in the new plan text.
    if (trim) {
      this.start = window[0]?.id ?? null;
      // What is known of entries that left the window is needed no more.
      const kept = new Set(window.map((e) => e.id));
      for (const map of [this.late, this.learned])
        for (const id of map.keys()) if (!kept.has(id)) map.delete(id);
      for (const id of this.sent) if (!kept.has(id)) this.sent.delete(id);
    }
    if (this.options.planText === 'every-call') this.renderEveryCall();
    else if (trim || !this.feed) this.reset();
    else {
      const turn = this.feed.turn();
      if (turn.delta && before.lastId) this.attach(before.lastId, 'after', turn.delta);
    }
    for (const entry of window) if (entry.role === 'user') this.sent.add(entry.id);
    return [{ role: 'system', content: this.system }, ...this.compose(window).messages];
  }

  private renderOptions() {
    const { actor, format, nameOf, presence } = this.options;
    // Presence is read again at each full render, not frozen when the feed is made.
    const live = { [Symbol.iterator]: () => presence()[Symbol.iterator]() };
    const names = (a: Actor) => (a === actor ? 'you' : nameOf(a));
    return { format, actor, presence: live, maxTokens: PLAN_TOKENS, nameOf: names, numbers: true };
  }

  private reset(): void {
    this.feed = createContextFeed(this.options.plan, {
      ...this.renderOptions(),
      includeOwn: true,
      // This module decides when to render again (NOTES_TOKENS), in the same step as a trim.
      reRenderShare: Number.POSITIVE_INFINITY,
    });
    this.absorb(this.feed.turn());
  }

  private renderEveryCall(): void {
    this.system = systemPrompt(this.options.intro(), renderPlan(this.options.plan, this.renderOptions()));
  }

  private absorb(turn: ContextTurn): void {
    this.system = systemPrompt(this.options.intro(), turn.plan);
    this.changes.clear();
    this.noted = 0;
  }

  private attach(entryId: string, where: 'before' | 'after', delta: string): void {
    const notes = this.changes.get(entryId) ?? { before: [], after: [] };
    notes[where].push(`${CHANGES_OPEN}\n${delta}\n${CHANGES_CLOSE}`);
    this.noted += defaultTokenizer.count(delta);
    this.changes.set(entryId, notes);
  }

  /** The entries from the window's start on that the model is told about. */
  private windowOf(history: readonly ChatEntry[]): ChatEntry[] {
    const told = history.filter((e) => isTold(e, this.options.actor));
    const at = this.start === null ? -1 : told.findIndex((e) => e.id === this.start);
    return at === -1 ? told : told.slice(at);
  }

  /** The window cut to its newest entries, starting at a person's message (never inside a step). */
  private trimmed(history: readonly ChatEntry[]): ChatEntry[] {
    const told = history.filter((e) => isTold(e, this.options.actor));
    let at = Math.max(0, told.length - KEEP_AFTER_TRIM);
    while (at < told.length && told[at]!.role !== 'user') at++;
    // No message of a person among the newest: keep from the last one there is.
    if (at === told.length)
      at = Math.max(
        0,
        told.findLastIndex((e) => e.role === 'user'),
      );
    return told.slice(at);
  }

  /** The conversation as messages, and the entry the last message came from (where a new change is told). */
  private compose(window: readonly ChatEntry[]): { messages: ModelMessage[]; lastId: string | null } {
    const { owner, nameOf } = this.options;
    const ids = new Set(window.map((e) => e.id));
    const out: ModelMessage[] = [];
    const deferred: ChatEntry[] = [];
    let lastId: string | null = null;
    let open = false; // the last step made tool calls and has not been followed by an answer
    const pushUser = (entry: ChatEntry) => {
      const notes = this.changes.get(entry.id);
      const learned = this.learned.get(entry.id);
      const said = entry.actor === owner ? entry.text : `${nameOf(entry.actor)} says: ${entry.text}`;
      const content = [
        ...(notes?.before ?? []),
        ...(learned ? [`${LEARNED_OPEN}\n${learned}\n${LEARNED_CLOSE}`] : []),
        said,
        ...(notes?.after ?? []),
      ].join('\n\n');
      const last = out.at(-1);
      // Strict providers want user and assistant to alternate: messages in a row are one turn.
      if (last?.role === 'user') last.content = `${last.content}\n\n${content}`;
      else out.push({ role: 'user', content });
      lastId = entry.id;
    };
    const close = (why: string) => {
      const last = out.at(-1);
      if (last && (last.role === 'user' || last.role === 'tool'))
        out.push({ role: 'assistant', content: why });
      open = false;
      for (const entry of deferred.splice(0)) pushUser(entry);
    };
    const done = new Set<string>();
    for (const entry of window) {
      done.add(entry.id);
      if (entry.role === 'user') {
        // A message sent while a turn was running is read after that turn's end, as the agent read it (a turn
        // cut off by a reload is known only by its open tool calls).
        const end = this.late.get(entry.id);
        if (open || (end !== undefined && ids.has(end) && !done.has(end))) deferred.push(entry);
        else pushUser(entry);
      } else if (entry.role === 'system') {
        close(`(My turn ended here: ${entry.text})`);
      } else {
        out.push(...this.step(entry));
        lastId = entry.id;
        open = (entry.toolCalls ?? []).length > 0;
        if (!open) close('');
      }
    }
    if (deferred.length > 0) close('(My turn ended here without an answer.)');
    return { messages: out, lastId };
  }

  /** An assistant step: its message, then one result per tool call, the changes it made told after the last. */
  private step(entry: ChatEntry): ModelMessage[] {
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
    const after = this.changes.get(entry.id)?.after ?? [];
    calls.forEach((c, i) => {
      // Every call needs an answer in the request; one still running (or cut off by a reload) says so.
      const result = c.result ?? '{"error":{"message":"no result"}}';
      const notes = i === calls.length - 1 ? after : [];
      out.push({ role: 'tool', tool_call_id: c.id, content: [result, ...notes].join('\n\n') });
    });
    return out;
  }
}

/** A chat entry that goes into the conversation: people's messages, this agent's steps and its own notices (as system turns in chats written before notices became the agent's replies). */
function isTold(entry: ChatEntry, self: Actor): boolean {
  if (entry.role === 'user') return true;
  return entry.actor === self && (entry.role === 'assistant' || entry.role === 'system');
}

function systemPrompt(intro: string, plan: string): string {
  return [
    intro,
    'The plan below is as it was when last shown in full. Every change since then, yours included, is told in ' +
      `order inside the conversation, in ${CHANGES_OPEN} notes (in a message for what changed before it, after a ` +
      'tool result for what changed while you worked): the plan now is this text with those changes applied. ' +
      'People name tasks by the numbers shown here.',
    '',
    plan || '(The plan is empty.)',
  ].join('\n');
}

/** A message or tool result as it was written, without the notes this module adds (plan changes, procedures). */
export function withoutNotes(content: string): string {
  return content
    .replace(new RegExp(`${CHANGES_OPEN}[\\s\\S]*?${CHANGES_CLOSE}`, 'g'), '')
    .replace(new RegExp(`${LEARNED_OPEN}[\\s\\S]*?${LEARNED_CLOSE}`, 'g'), '')
    .trim();
}
