// What changed in a plan since a point the caller kept: a state vector, a Y.Snapshot or a plan.toJSON()
// snapshot. Lets an agent be told what others did since its last turn without re-reading the whole plan.
import * as Y from 'yjs';
import { removedMap, tasksMap } from './doc.js';
import { CairnError } from './errors.js';
import type { Plan, PlanSnapshot } from './plan.js';
import type { TaskSnapshot } from './schema.js';

/**
 * A point to compare with:
 * - a state vector (`Y.encodeStateVector(plan.doc)`): small and serialisable; sees every write since, except
 *   pure deletions inside a task (a field cleared, a blocker dropped, text only deleted);
 * - a `Y.snapshot(plan.doc)`: the same plus those deletions;
 * - a `plan.toJSON()` snapshot: also gives the values before (`before`), at the cost of keeping the JSON.
 */
export type ChangePoint = Uint8Array | Y.Snapshot | PlanSnapshot;

export interface TaskDelta {
  id: string;
  kind: 'added' | 'updated' | 'removed';
  /** Who: the creator of an added task, the last writer of an updated one, the remover of a removed one. */
  actor: string;
  /** For `updated`: the task fields that changed (`title`, `status`, `rank` for a move, `num`, ...), sorted. */
  fields: string[];
  /** The task now; null when removed. */
  task: TaskSnapshot | null;
  /** The task at the point, when the point was a plan.toJSON() snapshot; otherwise null. */
  before: TaskSnapshot | null;
  /** The task's integer alias (now, or when it was removed), or null when unknown. */
  num: number | null;
}

const BOOKKEEPING = new Set(['id', 'updatedAt', 'updatedBy', 'createdAt', 'createdBy']);

/** Changes since `since`, in the plan's tree order, removals last. */
export function changesSince(plan: Plan, since: ChangePoint): TaskDelta[] {
  if (since instanceof Y.Snapshot || since instanceof Uint8Array)
    return changesSinceSnapshot(plan, toSnapshot(plan, since));
  if (typeof since === 'object' && since !== null && Array.isArray((since as PlanSnapshot).tasks)) {
    return changesSinceJSON(plan, since as PlanSnapshot);
  }
  throw new CairnError(
    'invalid_argument',
    'A change point is a state vector (Y.encodeStateVector), a Y.snapshot(doc) or a plan.toJSON() snapshot.',
  );
}

function toSnapshot(plan: Plan, since: Uint8Array | Y.Snapshot): Y.Snapshot {
  if (since instanceof Y.Snapshot) return since;
  let sv: Map<number, number>;
  try {
    sv = Y.decodeStateVector(since);
  } catch (error) {
    throw new CairnError(
      'invalid_argument',
      'The change point is not a valid Yjs state vector.',
      {},
      { cause: error },
    );
  }
  // Without a delete set, take today's: deletions then look old, which is the documented blind spot.
  return Y.createSnapshot(Y.createDeleteSetFromStructStore(plan.doc.store), sv);
}

function changesSinceSnapshot(plan: Plan, snap: Y.Snapshot): TaskDelta[] {
  const tasks = tasksMap(plan.doc);
  const out: TaskDelta[] = [];
  const removed: TaskDelta[] = [];
  const tombstones = removedMap(plan.doc) as unknown as Y.Map<{ by?: unknown; num?: unknown }>;
  for (const [id, item] of tasks._map) {
    if (isNew(item, snap)) {
      if (item.deleted) continue; // added and removed since: nothing to tell
    } else if (item.deleted) {
      // A state vector carries no delete set, so a removal is recognised by its tombstone being new.
      const tombItem = tombstones._map.get(id);
      const removedSince =
        !Y.isDeleted(snap.ds, item.id) || (tombItem !== undefined && isNew(tombItem, snap));
      if (!removedSince) continue;
      const tomb = tombstones.get(id);
      removed.push({
        id,
        kind: 'removed',
        actor: typeof tomb?.by === 'string' ? tomb.by : 'unknown',
        fields: [],
        task: null,
        before: null,
        num: typeof tomb?.num === 'number' ? tomb.num : null,
      });
      continue;
    }
    const task = plan.get(id);
    if (!task) continue;
    if (isNew(item, snap)) {
      out.push(...addedSince(tasks.get(id), task));
      continue;
    }
    const map = tasks.get(id);
    if (!(map instanceof Y.Map)) continue;
    const fields = [...map._map.keys()]
      .filter((key) => !BOOKKEEPING.has(key) && keyChanged(map, key, snap))
      .sort();
    if (fields.length > 0)
      out.push({ id, kind: 'updated', actor: task.updatedBy, fields, task, before: null, num: task.num });
  }
  return [...inTreeOrder(plan, out), ...removed.sort(byNumThenId)];
}

function changesSinceJSON(plan: Plan, since: PlanSnapshot): TaskDelta[] {
  const before = new Map(since.tasks.map((t) => [t.id, t]));
  const out: TaskDelta[] = [];
  for (const task of plan.list()) {
    const old = before.get(task.id);
    before.delete(task.id);
    if (!old) {
      out.push(...addedSince(tasksMap(plan.doc).get(task.id), task));
      continue;
    }
    const fields = (Object.keys(task) as Array<keyof TaskSnapshot>)
      .filter((key) => !BOOKKEEPING.has(key) && JSON.stringify(task[key]) !== JSON.stringify(old[key]))
      .sort();
    if (fields.length > 0) {
      out.push({
        id: task.id,
        kind: 'updated',
        actor: task.updatedBy,
        fields,
        task,
        before: old,
        num: task.num,
      });
    }
  }
  const tombstones = removedMap(plan.doc) as unknown as Y.Map<{ by?: unknown }>;
  const removed: TaskDelta[] = [...before.values()].map((old) => {
    const by = tombstones.get(old.id)?.by;
    return {
      id: old.id,
      kind: 'removed',
      actor: typeof by === 'string' ? by : 'unknown',
      fields: [],
      task: null,
      before: old,
      num: old.num,
    };
  });
  return [...out, ...removed.sort(byNumThenId)];
}

/**
 * A task added since the point: its addition by its creator, and, when someone else changed it afterwards (another
 * agent marked it done, say), that change too, so a reader who added the task still hears what others did to it.
 */
function addedSince(map: unknown, task: TaskSnapshot): TaskDelta[] {
  const added: TaskDelta = {
    id: task.id,
    kind: 'added',
    actor: task.createdBy,
    fields: [],
    task,
    before: null,
    num: task.num,
  };
  if (task.updatedBy === task.createdBy || !(map instanceof Y.Map)) return [added];
  // A key written when the task was made has one item; a later write chains a new item onto it (its `left`).
  const fields = [...map._map.entries()]
    .filter(([key, item]) => !BOOKKEEPING.has(key) && item.left !== null && !item.deleted)
    .map(([key]) => key)
    .sort();
  if (fields.length === 0) return [added];
  return [added, { ...added, kind: 'updated', actor: task.updatedBy, fields }];
}

/** Whether an item did not exist yet at the snapshot (its first clock is past the snapshot's). */
function isNew(item: Y.Item, snap: Y.Snapshot): boolean {
  return item.id.clock >= (snap.sv.get(item.id.client) ?? 0);
}

/** Whether any part of an item was written after the snapshot (merged items can straddle it). */
function touchesNew(item: Y.Item, snap: Y.Snapshot): boolean {
  return item.id.clock + item.length > (snap.sv.get(item.id.client) ?? 0);
}

/** Whether the value under `key` differs from the one visible at the snapshot (or changed inside). */
function keyChanged(map: Y.Map<unknown>, key: string, snap: Y.Snapshot): boolean {
  const latest = map._map.get(key);
  if (!latest) return false;
  // A map key's history is a chain of items through `left`; the one visible then is the newest that existed.
  let then: Y.Item | null = latest;
  while (then !== null && isNew(then, snap)) then = then.left as Y.Item | null;
  const visibleThen = then !== null && !Y.isDeleted(snap.ds, then.id);
  const visibleNow = !latest.deleted;
  if (visibleThen !== visibleNow) return true;
  if (!visibleNow) return false;
  if (then !== latest) return true;
  return latest.content instanceof Y.ContentType && typeChanged(latest.content.type, snap);
}

function typeChanged(type: Y.AbstractType<unknown>, snap: Y.Snapshot): boolean {
  if (type instanceof Y.Map) return [...type._map.keys()].some((key) => keyChanged(type, key, snap));
  for (let item = type._start; item !== null; item = item.right as Y.Item | null) {
    if (touchesNew(item, snap)) {
      if (!item.deleted) return true;
    } else if (item.deleted && !Y.isDeleted(snap.ds, item.id)) {
      return true;
    }
  }
  return false;
}

function inTreeOrder(plan: Plan, deltas: TaskDelta[]): TaskDelta[] {
  const order = new Map(plan.list().map((t, i) => [t.id, i]));
  return deltas.sort((a, b) => (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0));
}

function byNumThenId(a: TaskDelta, b: TaskDelta): number {
  return (a.num ?? Number.MAX_SAFE_INTEGER) - (b.num ?? Number.MAX_SAFE_INTEGER) || (a.id < b.id ? -1 : 1);
}
