// Writing planned changes into the document: the write side of doc.ts, for what planning.ts decided. Each
// function runs inside the caller's transaction and cannot be refused (planning validated everything first).
import * as Y from 'yjs';
import {
  blockedBySet,
  mergeContext,
  readNum,
  readStatus,
  type TaskMap,
  type Tombstone,
  taskAt,
  writeField,
  writeText,
} from './doc.js';
import type { PlannedAdds, PlannedUpdate } from './planning.js';
import { freshRanks, type Ranked, ranksAt } from './rank.js';
import { F, isOpenStatus } from './schema.js';

/** Who writes, when, and whom to tell: what every write below needs from the Plan that runs it. */
export interface DocWriter {
  readonly tasks: Y.Map<unknown>;
  readonly removed: Y.Map<unknown>;
  readonly actor: string;
  now(): number;
  /** The next free integer alias. */
  nextNum(): number;
  /** A task's map was written (its cached views are stale). */
  written(id: string): void;
}

/**
 * Written on every write, even when the same actor wrote last: under concurrent writes Yjs resolves each key on
 * its own, so a writer that skipped updatedBy could see its change (say, status) win while a peer's updatedBy
 * stays, and the change would be credited to the peer.
 */
export function stamp(w: DocWriter, map: TaskMap, actor: string = w.actor): void {
  map.set(F.updatedBy, actor);
  map.set(F.updatedAt, w.now());
}

/** The map of a task known to exist (checked by `require` or planning before the write). */
function mapOf(w: DocWriter, id: string): TaskMap {
  return taskAt(w.tasks, id)!;
}

export function writeUpdate(w: DocWriter, { id, patch: p, status, wakeAt }: PlannedUpdate): void {
  const map = mapOf(w, id);
  let changed = false;
  if (p.title !== undefined) changed = writeText(map, F.title, p.title) || changed;
  if (p.note !== undefined) changed = writeText(map, F.note, p.note) || changed;
  changed = writeField(map, F.status, status) || changed;
  changed = writeField(map, F.wakeAt, wakeAt) || changed;
  for (const field of ['activeForm', 'nextStep', 'supersededBy', 'assignee'] as const) {
    if (p[field] !== undefined) changed = writeField(map, F[field], p[field]) || changed;
  }
  if (p.context) changed = mergeContext(map, p.context) || changed;
  if (p.removeBlockedBy?.length || p.addBlockedBy?.length) {
    const set = blockedBySet(map);
    for (const blocker of p.removeBlockedBy ?? []) {
      if (set.has(blocker)) {
        set.delete(blocker);
        changed = true;
      }
    }
    for (const blocker of p.addBlockedBy ?? []) {
      if (!set.has(blocker)) {
        set.set(blocker, true);
        changed = true;
      }
    }
  }
  if (changed) stamp(w, map);
  w.written(id);
}

/** Closes as `skipped` those of `ids` that are still open (steps of a task this write closed). */
export function writeSkipped(w: DocWriter, ids: readonly string[]): void {
  for (const id of ids) {
    const map = taskAt(w.tasks, id);
    if (!map || !isOpenStatus(readStatus(map))) continue;
    writeField(map, F.status, 'skipped');
    writeField(map, F.wakeAt, null);
    stamp(w, map);
    w.written(id);
  }
}

/** Sets a task's assignee (and status, unless null) for a claim decision `by` an actor. */
export function writeAssignment(
  w: DocWriter,
  id: string,
  by: string,
  holder: string | null,
  status: string | null,
): void {
  const map = mapOf(w, id);
  writeField(map, F.assignee, holder);
  if (status !== null) writeField(map, F.status, status);
  stamp(w, map, by);
  w.written(id);
}

/** Moves a task under `parent`, before siblings[index]. */
export function writeMove(
  w: DocWriter,
  id: string,
  parent: string | null,
  siblings: readonly Ranked[],
  index: number,
): void {
  const map = mapOf(w, id);
  writeField(map, F.parent, parent);
  placeAt(w, map, siblings, index);
  stamp(w, map);
  w.written(id);
}

/** Writes a rank placing `map` before siblings[index]; re-ranks the siblings when neighbours tie. */
function placeAt(w: DocWriter, map: TaskMap, siblings: readonly Ranked[], index: number): void {
  const rank = ranksAt(siblings, index)?.[0];
  if (rank !== undefined) {
    map.set(F.rank, rank);
    return;
  }
  const keys = freshRanks(siblings.length + 1);
  const order = [
    ...siblings.slice(0, index).map((s) => s.id),
    null,
    ...siblings.slice(index).map((s) => s.id),
  ];
  for (const [i, sid] of order.entries()) {
    const target = sid === null ? map : mapOf(w, sid);
    target.set(F.rank, keys[i]!);
    if (sid !== null) w.written(sid);
  }
}

export function writeAdds(w: DocWriter, { entries: planned, ranks }: PlannedAdds): void {
  const now = w.now();
  const maps = new Map<string, TaskMap>();
  for (const entry of planned) {
    const map = new Y.Map<unknown>();
    w.tasks.set(entry.id, map);
    maps.set(entry.id, map);
    const { input } = entry;
    map.set(F.id, entry.id);
    map.set(F.num, w.nextNum());
    writeText(map, F.title, input.title);
    map.set(F.status, entry.status);
    if (entry.parent !== null) map.set(F.parent, entry.parent);
    for (const field of ['activeForm', 'nextStep', 'wakeAt', 'supersededBy', 'assignee'] as const) {
      const value = input[field];
      if (value !== undefined && value !== null) map.set(F[field], value);
    }
    if (input.note) writeText(map, F.note, input.note);
    if (input.context) mergeContext(map, input.context);
    if (entry.blockedBy.length > 0) {
      const set = blockedBySet(map);
      for (const blocker of entry.blockedBy) set.set(blocker, true);
    }
    map.set(F.createdBy, w.actor);
    map.set(F.createdAt, now);
    stamp(w, map);
    w.written(entry.id);
  }
  for (const [id, rank] of ranks) {
    (maps.get(id) ?? mapOf(w, id)).set(F.rank, rank);
    w.written(id);
  }
}

/** Removes tasks, leaving a tombstone each, and drops other tasks' dependencies on them. */
export function writeRemoves(w: DocWriter, ids: readonly string[]): void {
  const doomed = new Set(ids);
  const at = w.now();
  for (const id of ids) {
    const map = taskAt(w.tasks, id);
    const num = map ? readNum(map) : 0;
    const tomb: Tombstone = { by: w.actor, at, ...(num > 0 ? { num } : {}) };
    w.removed.set(id, tomb);
    w.tasks.delete(id);
    w.written(id);
  }
  for (const [id, map] of w.tasks) {
    if (doomed.has(id) || !(map instanceof Y.Map)) continue;
    const set = map.get(F.blockedBy);
    if (!(set instanceof Y.Map)) continue;
    let touched = false;
    for (const blocker of [...set.keys()]) {
      if (doomed.has(blocker)) {
        set.delete(blocker);
        touched = true;
      }
    }
    if (touched) {
      stamp(w, map);
      w.written(id);
    }
  }
}

/** Gives each of `ids` a fresh alias (tasks that lost a duplicate alias after a merge). */
export function writeFreshNums(w: DocWriter, ids: readonly string[]): void {
  for (const id of ids) {
    mapOf(w, id).set(F.num, w.nextNum());
    w.written(id);
  }
}
