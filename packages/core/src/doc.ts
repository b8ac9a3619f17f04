// Reading and writing one task's Y.Map, field by field. Reads are defensive: a document written by another
// implementation (or a malicious writer) with a wrong type in a field yields a sane value, never a crash.
import * as Y from 'yjs';
import { CairnError } from './errors.js';
import { DOC_KEYS, F, type Json, STATUSES, type Status, type TaskSnapshot } from './schema.js';
import { setText } from './text.js';

export type TaskMap = Y.Map<unknown>;

/** Tasks as stored: any writer can put any value under a key, so read them through `taskAt` and `taskIds`. */
export function tasksMap(doc: Y.Doc): Y.Map<unknown> {
  return doc.getMap(DOC_KEYS.tasks);
}

/** Tombstones as stored: any writer can put any value here, so read them with `readTombstone`. */
export function removedMap(doc: Y.Doc): Y.Map<unknown> {
  return doc.getMap(DOC_KEYS.removed);
}

/** Who removed a task and when, and the alias it had (so it is never given to another task). */
export type Tombstone = { by: string; at: number; num?: number };

/** A tombstone's fields that hold the right type; anything else in the value is ignored. */
export function readTombstone(value: unknown): { by: string | null; num: number } {
  if (typeof value !== 'object' || value === null) return { by: null, num: 0 };
  const { by, num: alias } = value as { by?: unknown; num?: unknown };
  return { by: str(by), num: isAlias(alias) ? alias : 0 };
}

/** The task map stored under `id`, or undefined when there is none or the value there is not a task map. */
export function taskAt(tasks: Y.Map<unknown>, id: string): TaskMap | undefined {
  const value = tasks.get(id);
  return value instanceof Y.Map ? value : undefined;
}

/** The ids whose value is a task map; other values under `tasks` are reported by `malformedEntries`. */
export function* taskIds(tasks: Y.Map<unknown>): IterableIterator<string> {
  for (const [id, value] of tasks) if (value instanceof Y.Map) yield id;
}

/** The `not_found` error for an unknown id; it lists the known ids (up to 50) so the caller can correct it. */
export function taskNotFound(tasks: Y.Map<unknown>, id: string): CairnError {
  const known = [...taskIds(tasks)].sort();
  const shown = known.slice(0, 50);
  const list = shown.length === 0 ? 'the plan has no tasks' : `known ids: ${shown.join(', ')}`;
  const more = known.length > 50 ? ', ...' : '';
  return new CairnError('not_found', `No task with id "${id}"; ${list}${more}.`, { id, known: shown });
}

export function metaMap(doc: Y.Doc): Y.Map<unknown> {
  return doc.getMap(DOC_KEYS.meta);
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
/** The largest distance from the epoch a JavaScript Date can hold; a time beyond it cannot be shown. */
const MAX_TIME = 8.64e15;
/** A time in ms since the epoch that a Date can hold, or 0 (the epoch) for anything else. */
const time = (v: unknown): number => (typeof v === 'number' && Math.abs(v) <= MAX_TIME ? v : 0);
/** Aliases are positive safe integers; anything else reads as 0 (no alias) and gets no arithmetic. */
const isAlias = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;
const textOf = (v: unknown): string => (v instanceof Y.Text ? v.toString() : typeof v === 'string' ? v : '');

export function readStatus(task: TaskMap): Status {
  const s = task.get(F.status);
  return typeof s === 'string' && (STATUSES as readonly string[]).includes(s) ? (s as Status) : 'pending';
}

export function readBlockedBy(task: TaskMap): string[] {
  const set = task.get(F.blockedBy);
  return set instanceof Y.Map ? [...set.keys()].sort() : [];
}

/** The integer alias; 0 when missing or malformed (aliases start at 1). */
export function readNum(task: TaskMap): number {
  const value = task.get(F.num);
  return isAlias(value) ? value : 0;
}

/** Who wrote the task last, or null when the field is missing or not a string. */
export function readUpdatedBy(task: TaskMap): string | null {
  return str(task.get(F.updatedBy));
}

export function readParent(task: TaskMap): string | null {
  return str(task.get(F.parent));
}

export function readRank(task: TaskMap): string {
  return str(task.get(F.rank)) ?? '';
}

export function snapshotTask(id: string, task: TaskMap): TaskSnapshot {
  const context = task.get(F.context);
  return {
    id,
    num: readNum(task),
    title: textOf(task.get(F.title)),
    activeForm: str(task.get(F.activeForm)),
    status: readStatus(task),
    parent: readParent(task),
    rank: readRank(task),
    blockedBy: readBlockedBy(task),
    nextStep: str(task.get(F.nextStep)),
    note: textOf(task.get(F.note)),
    context: context instanceof Y.Map ? sortKeys(context.toJSON() as Record<string, Json>) : {},
    wakeAt: str(task.get(F.wakeAt)),
    supersededBy: str(task.get(F.supersededBy)),
    assignee: str(task.get(F.assignee)),
    createdBy: str(task.get(F.createdBy)) ?? 'system',
    updatedBy: str(task.get(F.updatedBy)) ?? 'system',
    createdAt: time(task.get(F.createdAt)),
    updatedAt: time(task.get(F.updatedAt)),
  };
}

function sortKeys(obj: Record<string, Json>): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const key of Object.keys(obj).sort()) out[key] = obj[key]!;
  return out;
}

/** Writes a plain field only when it changes, so no-op updates cost nothing in history. */
export function writeField(task: TaskMap, field: string, value: string | number | null): boolean {
  const current = task.get(field);
  if (current === value || (current === undefined && value === null)) return false;
  if (value === null) task.delete(field);
  else task.set(field, value);
  return true;
}

/** Writes a Y.Text field (title, note) as a minimal edit; creates the Y.Text the first time. */
export function writeText(task: TaskMap, field: string, value: string): boolean {
  let ytext = task.get(field);
  if (!(ytext instanceof Y.Text)) {
    ytext = new Y.Text();
    task.set(field, ytext);
  }
  const before = (ytext as Y.Text).toString();
  setText(ytext as Y.Text, value);
  return before !== value;
}

/** The blockedBy set of a task, created on first use. */
export function blockedBySet(task: TaskMap): Y.Map<true> {
  let set = task.get(F.blockedBy);
  if (!(set instanceof Y.Map)) {
    set = new Y.Map<true>();
    task.set(F.blockedBy, set);
  }
  return set as Y.Map<true>;
}

/** Merges `patch` into the context map key by key; a null value deletes the key. */
export function mergeContext(task: TaskMap, patch: Record<string, Json>): boolean {
  let ctx = task.get(F.context);
  if (!(ctx instanceof Y.Map)) {
    ctx = new Y.Map<Json>();
    task.set(F.context, ctx);
  }
  const map = ctx as Y.Map<Json>;
  let changed = false;
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) {
      if (map.has(key)) {
        map.delete(key);
        changed = true;
      }
    } else if (JSON.stringify(map.get(key)) !== JSON.stringify(value)) {
      map.set(key, value);
      changed = true;
    }
  }
  return changed;
}

/** Something under `tasks` that is not a well-formed task, and what is wrong with it. */
export interface MalformedEntry {
  id: string;
  reason: string;
}

type Check = [expected: string, ok: (v: unknown) => boolean];
const isString = (v: unknown) => typeof v === 'string';
const isText = (v: unknown) => v instanceof Y.Text || typeof v === 'string';
const isTime = (v: unknown) => typeof v === 'number' && Math.abs(v) <= MAX_TIME;
const STRING: Check = ['a string', isString];
const TEXT: Check = ['text', isText];
const MAP: Check = ['a map', (v) => v instanceof Y.Map];
const TIME: Check = ['a time in ms since the epoch', isTime];

/** What each field must hold when present (id, title and status are checked apart: they are required). */
const FIELD_CHECKS: Record<string, Check> = {
  [F.num]: ['a positive integer', isAlias],
  [F.activeForm]: STRING,
  [F.parent]: STRING,
  [F.rank]: STRING,
  [F.blockedBy]: MAP,
  [F.nextStep]: STRING,
  [F.note]: TEXT,
  [F.context]: MAP,
  [F.wakeAt]: STRING,
  [F.supersededBy]: STRING,
  [F.assignee]: STRING,
  [F.createdBy]: STRING,
  [F.updatedBy]: STRING,
  [F.createdAt]: TIME,
  [F.updatedAt]: TIME,
};

/**
 * Every entry under `tasks` that is not a task map, or is one with a field of the wrong type. Reads never throw
 * for these (a wrong field reads as its default, a non-map is not a task); this says what was skipped or read
 * as a default, so a person can repair it.
 */
export function malformedEntries(tasks: Y.Map<unknown>): MalformedEntry[] {
  const out: MalformedEntry[] = [];
  for (const [id, value] of tasks) {
    if (!(value instanceof Y.Map)) {
      out.push({
        id,
        reason: `not a task: the entry holds ${describeValue(value)}; it is left out of the plan.`,
      });
      continue;
    }
    const problems: string[] = [];
    const status = value.get(F.status);
    if (typeof status !== 'string' || !(STATUSES as readonly string[]).includes(status)) {
      problems.push(
        `status holds ${describeValue(status)}, not one of ${STATUSES.join(', ')} (read as pending)`,
      );
    }
    if (!isText(value.get(F.title)))
      problems.push(`title holds ${describeValue(value.get(F.title))}, not text`);
    for (const [field, [expected, ok]] of Object.entries(FIELD_CHECKS)) {
      const v = value.get(field);
      if (v !== undefined && !ok(v))
        problems.push(`${field} holds ${describeValue(v)}, not ${expected} (ignored)`);
    }
    if (problems.length > 0) out.push({ id, reason: `${problems.join('; ')}.` });
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** A short, safe description of a stored value for a report (never the whole value). */
function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  if (typeof v === 'number' || typeof v === 'boolean') return `the ${typeof v} ${String(v)}`;
  if (v instanceof Y.AbstractType) return `a ${v.constructor.name.replace(/^_?Y/, 'Y.')}`;
  if (Array.isArray(v)) return 'an array';
  if (v instanceof Uint8Array) return 'binary data';
  return `a ${typeof v}`;
}
