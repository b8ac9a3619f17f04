// The conversation that goes with a plan, kept in the plan's own Y.Doc (top-level Y.Array `chat`), so everyone
// watching a plan sees the messages and an agent's tool activity as they happen (docs/SCHEMA.md, "Chat").
import * as Y from 'yjs';
import * as z from 'zod/mini';
import './zod-messages.js';
import { CairnError } from './errors.js';
import { cryptoRandom, newTaskId, type Random } from './ids.js';
import { type Actor, ActorSchema } from './schema.js';
import { parseOrThrow } from './validate.js';

/** The name of the top-level shared type that holds the chat. */
export const CHAT_KEY = 'chat';

export const CHAT_ROLES = ['user', 'assistant', 'system'] as const;
export type ChatRole = (typeof CHAT_ROLES)[number];

/** Bounds that keep one message (and so one sync update) small. */
export const CHAT_LIMITS = { text: 20_000, toolCalls: 32, arguments: 20_000, result: 20_000 } as const;

/** One tool call an assistant message made, and (once it ran) its result as JSON text. */
export interface ChatToolCall {
  id: string;
  name: string;
  /** The arguments as JSON text, as the model produced them. */
  arguments: string;
  /** The result as JSON text; absent while the call runs. */
  result?: string;
  /** True when the result is a refusal (`{ error }`). */
  isError?: boolean;
}

/** A plain, frozen view of one message. */
export interface ChatEntry {
  id: string;
  role: ChatRole;
  /** Who wrote it: `user:<name>`, `agent:<name>` or `system`. */
  actor: Actor;
  text: string;
  /** Milliseconds since the Unix epoch. */
  at: number;
  toolCalls?: ChatToolCall[];
}

/** A message to append to the plan's conversation: its role, its text and any tool calls (docs/SCHEMA.md, "Chat"). */
export interface ChatInput {
  role: ChatRole;
  text?: string;
  toolCalls?: Array<{ id?: string; name: string; arguments: string }>;
}

const name = () => z.string().check(z.minLength(1), z.maxLength(100));
const ChatInputSchema = z.strictObject({
  role: z.enum(CHAT_ROLES),
  text: z.optional(z.string().check(z.maxLength(CHAT_LIMITS.text, `at most ${CHAT_LIMITS.text} characters`))),
  toolCalls: z.optional(
    z
      .array(
        z.strictObject({
          id: z.optional(name()),
          name: name(),
          arguments: z
            .string()
            .check(z.maxLength(CHAT_LIMITS.arguments, `at most ${CHAT_LIMITS.arguments} characters`)),
        }),
      )
      .check(
        z.maxLength(CHAT_LIMITS.toolCalls, `at most ${CHAT_LIMITS.toolCalls} tool calls in one message`),
      ),
  ),
});

export interface ChatChangeEvent {
  /** True when the change was made through this document. */
  local: boolean;
  /** Ids of messages added by this change, in order. */
  added: string[];
  /** Ids of messages whose text or tool calls changed. */
  updated: string[];
}

/** Who writes, and the clock and randomness of ids: the options of `createChat`. */
export interface ChatOptions {
  /** Who this Chat's writes are attributed to (the transaction origin and each message's `actor`). */
  actor: Actor;
  now?: () => number;
  random?: Random;
}

type MessageMap = Y.Map<unknown>;

/** The chat of a plan's document. Several Chats (one per actor) may share one doc. */
export class Chat {
  readonly doc: Y.Doc;
  readonly actor: Actor;
  private readonly array: Y.Array<MessageMap>;
  private readonly now: () => number;
  private readonly random: Random;
  private readonly cache = new WeakMap<MessageMap, ChatEntry>();
  private readonly listeners = new Set<(event: ChatChangeEvent) => void>();
  private readonly observer: (events: Array<Y.YEvent<Y.AbstractType<unknown>>>, txn: Y.Transaction) => void;

  constructor(doc: Y.Doc, options: ChatOptions) {
    this.doc = doc;
    this.actor = parseOrThrow(ActorSchema, options.actor, 'chat actor');
    this.now = options.now ?? Date.now;
    this.random = options.random ?? cryptoRandom;
    this.array = doc.getArray<MessageMap>(CHAT_KEY);
    this.observer = (events, txn) => this.onDocChange(events, txn);
    this.array.observeDeep(this.observer);
  }

  get length(): number {
    return this.array.length;
  }

  /** Every message, oldest first. Entries that are not maps (another writer's mistake) are skipped. */
  list(): ChatEntry[] {
    const out: ChatEntry[] = [];
    for (const map of this.array) {
      if (map instanceof Y.Map) out.push(this.snapshot(map));
    }
    return out;
  }

  /**
   * The messages written after a point: those whose Yjs item the state vector `since` (from a cursor, see
   * cursor.ts) had not seen, oldest first. Exact across merges: a message synced in late is new to a reader
   * whose vector predates it, wherever it landed in the array.
   */
  since(since: Uint8Array): ChatEntry[] {
    const seen = Y.decodeStateVector(since);
    const out: ChatEntry[] = [];
    for (const map of this.array) {
      const item = map instanceof Y.Map ? map._item : null;
      if (item && item.id.clock >= (seen.get(item.id.client) ?? 0)) out.push(this.snapshot(map));
    }
    return out;
  }

  get(id: string): ChatEntry | undefined {
    const map = this.find(id);
    return map ? this.snapshot(map) : undefined;
  }

  /** Appends a message written by this Chat's actor. Bad input throws `invalid_argument` and writes nothing. */
  append(input: ChatInput): ChatEntry {
    const parsed = parseOrThrow(ChatInputSchema, input, 'chat message');
    const taken = new Set(this.list().map((m) => m.id));
    const id = newTaskId((candidate) => taken.has(candidate), this.random);
    const callIds = new Set<string>();
    const calls = (parsed.toolCalls ?? []).map((call) => {
      const callId = call.id ?? `call_${newTaskId((c) => callIds.has(c), this.random)}`;
      if (callIds.has(callId)) {
        throw new CairnError('invalid_argument', `Two tool calls of one message have the id "${callId}".`);
      }
      callIds.add(callId);
      return { ...call, id: callId };
    });
    const map = new Y.Map<unknown>();
    this.doc.transact(() => {
      this.array.push([map]);
      map.set('id', id);
      map.set('role', parsed.role);
      map.set('actor', this.actor);
      map.set('at', this.now());
      map.set('text', new Y.Text(parsed.text ?? ''));
      if (calls.length > 0) {
        const list = new Y.Array<Y.Map<unknown>>();
        map.set('toolCalls', list);
        list.push(
          calls.map((call) => {
            const entry = new Y.Map<unknown>();
            entry.set('id', call.id);
            entry.set('name', call.name);
            entry.set('arguments', call.arguments);
            return entry;
          }),
        );
      }
    }, this.actor);
    return this.snapshot(map);
  }

  /** Appends text to a message (a reply that streams in). Only the message's author may. */
  appendText(id: string, chunk: string): ChatEntry {
    const map = this.own(id);
    const text = map.get('text');
    const length = text instanceof Y.Text ? text.length : 0;
    if (length + chunk.length > CHAT_LIMITS.text) {
      throw new CairnError('limit', `A chat message holds at most ${CHAT_LIMITS.text} characters.`);
    }
    this.doc.transact(() => {
      if (text instanceof Y.Text) text.insert(text.length, chunk);
      else map.set('text', new Y.Text(chunk));
    }, this.actor);
    return this.snapshot(map);
  }

  /** Records the result of one of a message's tool calls, as JSON text. */
  setToolResult(id: string, callId: string, result: string, isError = false): ChatEntry {
    const map = this.own(id);
    if (typeof result !== 'string' || result.length > CHAT_LIMITS.result) {
      throw new CairnError(
        'invalid_argument',
        `A tool result is JSON text of at most ${CHAT_LIMITS.result} characters.`,
      );
    }
    const calls = map.get('toolCalls');
    const call =
      calls instanceof Y.Array
        ? (calls.toArray() as unknown[]).find(
            (c): c is Y.Map<unknown> => c instanceof Y.Map && c.get('id') === callId,
          )
        : undefined;
    if (!call) {
      const known = this.snapshot(map).toolCalls?.map((c) => c.id) ?? [];
      throw new CairnError(
        'not_found',
        `Message ${id} has no tool call "${callId}"; its calls: ${known.join(', ') || 'none'}.`,
        { valid: known },
      );
    }
    this.doc.transact(() => {
      call.set('result', result);
      if (isError) call.set('isError', true);
      else call.delete('isError');
    }, this.actor);
    return this.snapshot(map);
  }

  /** Calls `listener` after every transaction that changed the chat, local or remote. Returns an unsubscribe. */
  onChange(listener: (event: ChatChangeEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  destroy(): void {
    this.array.unobserveDeep(this.observer);
    this.listeners.clear();
  }

  private find(id: string): MessageMap | undefined {
    for (const map of this.array) if (map instanceof Y.Map && map.get('id') === id) return map;
    return undefined;
  }

  private own(id: string): MessageMap {
    const map = this.find(id);
    if (!map) throw new CairnError('not_found', `No chat message with id "${id}".`, { id });
    if (map.get('actor') !== this.actor) {
      throw new CairnError(
        'forbidden',
        `Message ${id} was written by ${String(map.get('actor'))}; only its author (not ${this.actor}) may change it.`,
      );
    }
    return map;
  }

  private snapshot(map: MessageMap): ChatEntry {
    const cached = this.cache.get(map);
    if (cached) return cached;
    const entry = readEntry(map);
    this.cache.set(map, entry);
    return entry;
  }

  private onDocChange(events: Array<Y.YEvent<Y.AbstractType<unknown>>>, txn: Y.Transaction): void {
    const added: string[] = [];
    const updated = new Set<string>();
    for (const event of events) {
      if (event.target === this.array) {
        for (const delta of event.changes.delta) {
          for (const item of (delta.insert as unknown[] | undefined) ?? []) {
            if (item instanceof Y.Map) added.push(readEntry(item).id);
          }
        }
        continue;
      }
      // A change inside a message: find the message map the event's target sits in, drop its snapshot.
      let type: Y.AbstractType<unknown> | null = event.target;
      while (type && type.parent !== this.array) type = type.parent as Y.AbstractType<unknown> | null;
      if (type instanceof Y.Map) {
        this.cache.delete(type);
        updated.add(readEntry(type).id);
      }
    }
    for (const id of added) updated.delete(id);
    if (added.length === 0 && updated.size === 0) return;
    const event: ChatChangeEvent = { local: txn.local, added, updated: [...updated] };
    for (const listener of this.listeners) listener(event);
  }
}

/**
 * The conversation kept in the plan's document beside the tasks, so every reader of the plan sees it
 * (docs/SCHEMA.md, "Chat").
 */
export function createChat(doc: Y.Doc, options: ChatOptions): Chat {
  return new Chat(doc, options);
}

const str = (v: unknown, fallback = ''): string => (typeof v === 'string' ? v : fallback);

/**
 * Reads one message defensively: wrong types read as absent, an unknown or missing role as `user`, the role a
 * model trusts least: only an admin may write a `system` turn (the server refuses one from anyone else), so no
 * other value may read as one.
 */
function readEntry(map: MessageMap): ChatEntry {
  const role = str(map.get('role'));
  const text = map.get('text');
  const at = map.get('at');
  const entry: ChatEntry = {
    id: str(map.get('id')),
    role: (CHAT_ROLES as readonly string[]).includes(role) ? (role as ChatRole) : 'user',
    actor: str(map.get('actor'), 'system'),
    text: text instanceof Y.Text ? text.toString() : str(text),
    at: typeof at === 'number' && Number.isFinite(at) ? at : 0,
  };
  const calls = map.get('toolCalls');
  if (calls instanceof Y.Array) {
    entry.toolCalls = [];
    for (const call of calls.toArray() as unknown[]) {
      if (!(call instanceof Y.Map)) continue;
      const result = call.get('result');
      entry.toolCalls.push(
        Object.freeze({
          id: str(call.get('id')),
          name: str(call.get('name')),
          arguments: str(call.get('arguments'), '{}'),
          ...(typeof result === 'string' ? { result } : {}),
          ...(call.get('isError') === true ? { isError: true } : {}),
        }),
      );
    }
    Object.freeze(entry.toolCalls);
  }
  return Object.freeze(entry);
}
