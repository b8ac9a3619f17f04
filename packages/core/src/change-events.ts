// Change events: what one transaction did to the tasks, read from what Yjs records of the transaction, and who did
// it (the local writer's actor, or for a peer's change the actor the task or tombstone records).
import * as Y from 'yjs';
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

/**
 * How one transaction changed one task (`changedTasks`): its kind and the task fields written. An update that names
 * no field replaced the task's whole map (a concurrent create of the same id).
 */
export interface ChangedTask {
  kind: 'added' | 'updated' | 'removed';
  fields: ReadonlySet<string>;
}

/** Fields every write stamps; change events leave them out of `fields`. */
const BOOKKEEPING = new Set<string>([F.updatedAt, F.updatedBy]);

/**
 * The tasks one transaction touched, by id, read from `transaction.changed` (what Yjs records of every transaction,
 * watched or not, so no deep observer and no events sorted by path are needed): each task added, updated (with the
 * fields written in it; none when its whole map was replaced) or removed. A key whose value is not a task map (a
 * writer's stray value) counts as a removed task: for every view, that task is gone. A task added and removed in
 * the same transaction is not there. Plan.onChange and the server's task changes both read it.
 */
export function changedTasks(transaction: Y.Transaction, tasks: Y.Map<unknown>): Map<string, ChangedTask> {
  const changes = new Map<string, { kind: ChangedTask['kind']; fields: Set<string> }>();
  for (const [changed, keys] of transaction.changed) {
    const type = changed as Y.AbstractType<unknown>;
    if (type === (tasks as Y.AbstractType<unknown>)) {
      for (const id of keys) {
        const kind = id === null ? null : keyChange(transaction, tasks, id);
        if (id === null || kind === null) continue;
        const change = changes.get(id);
        if (change) change.kind = kind;
        else changes.set(id, { kind, fields: new Set() });
      }
      continue;
    }
    if (type._item?.deleted) continue; // a value replaced in this transaction: its parent's key says so
    const at = taskFieldOf(type, tasks);
    if (!at) continue;
    let change = changes.get(at.id);
    if (change === undefined) {
      change = { kind: 'updated', fields: new Set() };
      changes.set(at.id, change);
    }
    if (at.field !== null) change.fields.add(at.field);
    else for (const key of keys) if (key !== null) change.fields.add(key);
  }
  for (const [id, change] of changes) {
    if (change.kind !== 'removed' && !taskAt(tasks, id)) {
      change.kind = 'removed';
      change.fields.clear();
    }
  }
  return changes;
}

/**
 * What a transaction did to one key of the tasks map, as Yjs's own map events tell it (`YEvent.changes.keys`,
 * reproduced here without the event): a value written in this transaction over none is an add, over a value
 * deleted in it an update (the whole task replaced), a value deleted and none written a removal; a value both
 * written and deleted in it, over none, is nothing (null).
 */
function keyChange(
  transaction: Y.Transaction,
  tasks: Y.Map<unknown>,
  key: string,
): ChangedTask['kind'] | null {
  const item = tasks._map.get(key);
  if (item === undefined) return null;
  const written = (struct: Y.Item) => struct.id.clock >= (transaction.beforeState.get(struct.id.client) ?? 0);
  const deleted = (struct: Y.Item) => Y.isDeleted(transaction.deleteSet, struct.id);
  if (!written(item)) return deleted(item) ? 'removed' : null;
  let before = item.left;
  while (before !== null && written(before)) before = before.left;
  const replaced = before !== null && deleted(before);
  if (deleted(item)) return replaced ? 'removed' : null;
  return replaced ? 'updated' : 'added';
}

/**
 * The task a type changed under `tasks` is in, and the task field it is in (null: the task's own map). Walks up the
 * parents as `event.path` would, without building the path (this runs for every type every transaction changed).
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

/** The change list of a transaction's event, each change attributed. */
export function describeChanges(
  changes: ReadonlyMap<string, ChangedTask>,
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
