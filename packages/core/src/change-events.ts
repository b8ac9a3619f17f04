// Change events: what one transaction did to the tasks, read from Yjs's deep events, and who did it (the local
// writer's actor, or for a peer's change the actor the task or tombstone records).
import type * as Y from 'yjs';
import type { ObservedChange } from './aliases.js';
import { readTombstone, readUpdatedBy, taskAt } from './doc.js';
import { originActor } from './origins.js';
import { F } from './schema.js';

/** One task one transaction touched: added, updated (with the fields written) or removed, and by whom. */
export interface TaskChange {
  id: string;
  kind: 'added' | 'updated' | 'removed';
  /** Who made the change: the transaction's actor, or for a remote change the actor recorded in the task. */
  actor: string;
  /** The task fields that changed, without updatedAt/updatedBy (empty for added/removed). */
  fields: string[];
}

/** What a transaction changed in the plan, as `plan.onChange(listener)` tells it. */
export interface PlanChangeEvent {
  /** True when the change was made through this document (not received from a peer or a store). */
  local: boolean;
  changes: TaskChange[];
}

/** Fields every write stamps; change events leave them out of `fields`. */
const BOOKKEEPING = new Set<string>([F.updatedAt, F.updatedBy]);

type Collected = { kind: TaskChange['kind']; fields: Set<string> };

/**
 * The tasks one transaction touched, by id, with the kind of change and the fields written. A key whose value
 * is not a task map (a writer's stray value) counts as a removed task: for every view, that task is gone.
 */
export function collectChanges(
  events: ReadonlyArray<Y.YEvent<Y.AbstractType<unknown>>>,
  tasks: Y.Map<unknown>,
): Map<string, ObservedChange & Collected> {
  const changes = new Map<string, Collected>();
  const note = (id: string, kind: TaskChange['kind'], field?: string) => {
    const change = changes.get(id);
    if (!change) changes.set(id, { kind, fields: new Set(field ? [field] : []) });
    else {
      if (kind !== 'updated') change.kind = kind;
      if (field) change.fields.add(field);
    }
  };
  for (const event of events) {
    if (event.target === tasks) {
      for (const [id, change] of event.changes.keys) {
        note(id, change.action === 'add' ? 'added' : change.action === 'delete' ? 'removed' : 'updated');
      }
      continue;
    }
    const at = taskFieldOf(event.target, tasks);
    if (!at) continue;
    if (at.field !== null) note(at.id, 'updated', at.field);
    // A task map's own event: the keys the transaction wrote (Yjs has them at hand; `changes.keys` would work
    // out each one's old value, which nothing here reads).
    else for (const key of (event as Y.YMapEvent<unknown>).keysChanged) note(at.id, 'updated', key);
  }
  for (const [id, change] of changes) {
    if (change.kind !== 'removed' && !taskAt(tasks, id)) change.kind = 'removed';
  }
  return changes;
}

/**
 * The tasks one transaction touched, read from `transaction.changed` (what Yjs records of every transaction, watched
 * or not): each task's id with the fields written in it, or null for a task added, replaced whole or removed (or a
 * key whose value is not a task map). Unlike `collectChanges` it needs no deep observer, whose events Yjs sorts by
 * path for every transaction: a server reads every transaction of every plan, most of them one edit.
 */
export function changedTasks(
  transaction: Y.Transaction,
  tasks: Y.Map<unknown>,
): Map<string, Set<string> | null> {
  const changes = new Map<string, Set<string> | null>();
  for (const [changed, keys] of transaction.changed) {
    const type = changed as Y.AbstractType<unknown>;
    if (type === (tasks as Y.AbstractType<unknown>)) {
      for (const id of keys) if (id !== null) changes.set(id, null);
      continue;
    }
    if (type._item?.deleted) continue; // a value replaced in this transaction: its parent's key says so
    const at = taskFieldOf(type, tasks);
    if (!at) continue;
    let fields = changes.get(at.id);
    if (fields === null) continue;
    if (fields === undefined) {
      fields = new Set();
      changes.set(at.id, fields);
    }
    if (at.field !== null) fields.add(at.field);
    else for (const key of keys) if (key !== null) fields.add(key);
  }
  for (const [id, fields] of changes) if (fields !== null && !taskAt(tasks, id)) changes.set(id, null);
  return changes;
}

/**
 * The task an event under `tasks` is about, and the task field it is in (null: the task's own map). Walks up the
 * parents as `event.path` would, without building the path (this runs for every event of every transaction).
 */
function taskFieldOf(
  target: Y.AbstractType<unknown>,
  tasks: Y.Map<unknown>,
): { id: string; field: string | null } | null {
  let field: string | null = null;
  let type = target;
  for (;;) {
    const item = type._item;
    if (item === null) return null;
    if (item.parent === tasks) return item.parentSub === null ? null : { id: item.parentSub, field };
    field = item.parentSub;
    type = item.parent as Y.AbstractType<unknown>;
  }
}

/** The change list of an event, each change attributed. */
export function describeChanges(
  changes: ReadonlyMap<string, Collected>,
  txn: Y.Transaction,
  tasks: Y.Map<unknown>,
  removed: Y.Map<unknown>,
): TaskChange[] {
  const localActor = txn.local ? originActor(txn.origin) : null;
  const list: TaskChange[] = [];
  for (const [id, { kind, fields }] of changes) {
    const map = kind === 'removed' ? undefined : taskAt(tasks, id);
    // One field read, not a snapshot: this runs for every task every transaction touches.
    const recorded = map ? readUpdatedBy(map) : readTombstone(removed.get(id)).by;
    list.push({
      id,
      kind,
      actor: localActor ?? recorded ?? 'unknown',
      fields: kind === 'updated' ? [...fields].filter((f) => !BOOKKEEPING.has(f)).sort() : [],
    });
  }
  return list;
}
