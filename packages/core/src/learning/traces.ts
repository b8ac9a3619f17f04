// Tool-call traces: every call made through a toolkit on a plan, kept in a document of its own beside the plan
// (`<planId>#traces`), so a client reading the plan never loads them. Bounded by count and age (docs/SCHEMA.md,
// "Traces"; docs/decisions/020).
import type * as Y from 'yjs';
import * as z from 'zod/mini';
import { ERROR_CODES } from '../errors.js';
import { newTaskId } from '../ids.js';
import { type Actor, ActorSchema, type Json } from '../schema.js';
import type { ToolCallRecord } from '../tools/observe.js';
import { validEntries } from '../validate.js';
import { argumentShape, JsonValueSchema } from './shape.js';

/** A plan's trace document is the sync room (and store entry) of this name. */
export const TRACE_SUFFIX = '#traces';

/** Top-level shared types of a trace document. */
export const TRACE_KEYS = {
  /** Y.Array<TraceCall>: the calls, oldest first. */
  calls: 'calls',
  /** Y.Map<taskId, SkillOffer>: the learned procedures offered while a task was open. */
  offers: 'offers',
  /** Y.Map<jobId, DistillJob>: traces waiting to be distilled (written by the server). */
  pending: 'pending',
} as const;

export function traceDocId(planId: string): string {
  return `${planId}${TRACE_SUFFIX}`;
}

/** The plan a trace document belongs to, or null when `docId` is not a trace document's id. */
export function planOfTraceDoc(docId: string): string | null {
  return docId.endsWith(TRACE_SUFFIX) && docId.length > TRACE_SUFFIX.length
    ? docId.slice(0, -TRACE_SUFFIX.length)
    : null;
}

export const TraceCallSchema = z.object({
  id: z.string().check(z.minLength(1), z.maxLength(64)),
  at: z.number(),
  actor: ActorSchema,
  tool: z.string().check(z.minLength(1), z.maxLength(100)),
  args: JsonValueSchema,
  outcome: z.union([z.literal('ok'), z.enum(ERROR_CODES)]),
  /** A refusal's message (its first 500 characters), so what went wrong can be learned from. */
  error: z.optional(z.string().check(z.maxLength(500))),
  tasks: z.array(z.string().check(z.maxLength(64))).check(z.maxLength(200)),
});
export type TraceCall = z.infer<typeof TraceCallSchema>;

export interface TraceBound {
  /** At most this many calls are kept (the oldest go first). */
  maxCalls: number;
  /** Calls older than this are dropped. */
  maxAgeMs: number;
}

/** 500 calls or 30 days, whichever is less. */
export const DEFAULT_TRACE_BOUND: TraceBound = { maxCalls: 500, maxAgeMs: 30 * 24 * 3600 * 1000 };

/** Arguments longer than this (as JSON) are stored as their shape only, so one call cannot bloat the trace. */
export const MAX_TRACE_ARGS_CHARS = 4000;

function callsOf(doc: Y.Doc): Y.Array<unknown> {
  return doc.getArray(TRACE_KEYS.calls);
}

/** The calls, oldest first; malformed entries (another writer's) are skipped. */
export function readCalls(doc: Y.Doc): TraceCall[] {
  return validEntries(TraceCallSchema, callsOf(doc).toArray());
}

/** Appends a call and trims the trace to its bound, in one transaction by the call's actor. */
export function recordCall(
  doc: Y.Doc,
  call: ToolCallRecord,
  options: { bound?: TraceBound; now?: number } = {},
): TraceCall {
  const entry: TraceCall = {
    id: newTaskId(() => false),
    at: call.at,
    actor: call.actor,
    tool: call.tool.slice(0, 100),
    args: storedArgs(call.args),
    outcome: call.outcome,
    ...(call.message && call.outcome !== 'ok' ? { error: call.message.slice(0, 500) } : {}),
    tasks: call.tasks.slice(0, 200),
  };
  doc.transact(() => {
    callsOf(doc).push([entry]);
    trimTrace(doc, options.bound ?? DEFAULT_TRACE_BOUND, options.now ?? call.at);
  }, call.actor);
  return entry;
}

/** Drops calls beyond the bound (too old, or too many); returns how many. Runs in the caller's transaction. */
export function trimTrace(doc: Y.Doc, bound: TraceBound, now: number, origin: unknown = 'system'): number {
  const calls = callsOf(doc);
  let removed = 0;
  doc.transact(() => {
    const cutoff = now - bound.maxAgeMs;
    let old = 0;
    while (old < calls.length && callAt(calls.get(old)) < cutoff) old++;
    const excess = Math.max(old, calls.length - bound.maxCalls);
    if (excess > 0) {
      calls.delete(0, excess);
      removed = excess;
    }
  }, origin);
  return removed;
}

function callAt(raw: unknown): number {
  const at = (raw as { at?: unknown } | null)?.at;
  return typeof at === 'number' ? at : Number.NEGATIVE_INFINITY;
}

function storedArgs(args: unknown): Json {
  const parsed = JsonValueSchema.safeParse(args ?? {});
  if (!parsed.success) return argumentShape(args);
  const text = JSON.stringify(parsed.data);
  return text.length <= MAX_TRACE_ARGS_CHARS ? parsed.data : argumentShape(parsed.data);
}

/** A toolkit `onCall` observer that records into the plan's trace document. */
export function traceRecorder(
  doc: Y.Doc,
  options: { bound?: TraceBound } = {},
): (call: ToolCallRecord) => void {
  return (call) => {
    recordCall(doc, call, options.bound ? { bound: options.bound } : {});
  };
}

/**
 * The calls of a task's trace: since `since` (the task's creation), those that touched one of `taskIds` (the
 * task and its steps), in order.
 */
export function callsForTask(
  calls: readonly TraceCall[],
  taskIds: ReadonlySet<string>,
  since: number,
): TraceCall[] {
  return calls.filter((c) => c.at >= since && c.tasks.some((id) => taskIds.has(id)));
}

// ------------------------------------------------------------------ offers

export const SkillOfferSchema = z.object({
  at: z.number(),
  by: ActorSchema,
  skills: z
    .array(
      z.object({
        id: z.string().check(z.minLength(1), z.maxLength(64)),
        version: z.int().check(z.minimum(1)),
      }),
    )
    .check(z.maxLength(20)),
});
export type SkillOffer = z.infer<typeof SkillOfferSchema>;

/** Notes that these skills were offered while `taskId` was open (merged with earlier offers on the task). */
export function recordOffer(
  doc: Y.Doc,
  taskId: string,
  skills: ReadonlyArray<{ id: string; version: number }>,
  by: Actor,
  now: number,
): void {
  if (skills.length === 0) return;
  const offers = doc.getMap<unknown>(TRACE_KEYS.offers);
  const before = readOffer(doc, taskId);
  const merged = new Map((before?.skills ?? []).map((s) => [s.id, s.version]));
  for (const s of skills) merged.set(s.id, s.version);
  const next: SkillOffer = {
    at: now,
    by,
    skills: [...merged].slice(-20).map(([id, version]) => ({ id, version })),
  };
  const same = before && JSON.stringify(before.skills) === JSON.stringify(next.skills);
  if (!same) doc.transact(() => offers.set(taskId, next), by);
}

export function readOffer(doc: Y.Doc, taskId: string): SkillOffer | null {
  const parsed = SkillOfferSchema.safeParse(doc.getMap<unknown>(TRACE_KEYS.offers).get(taskId));
  return parsed.success ? parsed.data : null;
}

/** Forgets a task's offer once its outcome was counted. */
export function clearOffer(doc: Y.Doc, taskId: string, origin: unknown): void {
  const offers = doc.getMap<unknown>(TRACE_KEYS.offers);
  if (offers.has(taskId)) doc.transact(() => offers.delete(taskId), origin);
}
