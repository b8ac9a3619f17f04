// Reading and writing one task's Y.Map, field by field. Reads are defensive: a document written by another
// implementation (or a malicious writer) with a wrong type in a field yields a sane value, never a crash.
import * as Y from 'yjs';
import { DOC_KEYS, F, type Json, STATUSES, type Status, type TaskSnapshot } from './schema.js';
import { setText } from './text.js';

export type TaskMap = Y.Map<unknown>;

export function tasksMap(doc: Y.Doc): Y.Map<TaskMap> {
  return doc.getMap<TaskMap>(DOC_KEYS.tasks);
}

export function removedMap(doc: Y.Doc): Y.Map<{ by: string; at: number }> {
  return doc.getMap(DOC_KEYS.removed);
}

export function metaMap(doc: Y.Doc): Y.Map<unknown> {
  return doc.getMap(DOC_KEYS.meta);
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const num = (v: unknown, fallback: number): number =>
  typeof v === 'number' && Number.isFinite(v) ? v : fallback;
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
  return num(task.get(F.num), 0);
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
    createdAt: num(task.get(F.createdAt), 0),
    updatedAt: num(task.get(F.updatedAt), 0),
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
