// What a Plan reads: each task's frozen snapshot, cached until the task changes, and the queries over the derived
// views (tree order, the blocked index; plan-index.ts). Plan's read methods answer from here; its writes say
// which tasks they touched, and its listener passes on each transaction's changes after the transaction.
import * as Y from 'yjs';
import { type Aliases, createdOrder } from './aliases.js';
import type { ChangedTask } from './change-events.js';
import { snapshotTask, taskAt, taskIds, taskNotFound } from './doc.js';
import { type BlockedInfo, descendants, isReadyFor } from './graph.js';
import { PlanIndex } from './plan-index.js';
import { type Actor, isOpenStatus, type ListFilter, ListFilterSchema, type TaskSnapshot } from './schema.js';
import { parseOnce } from './validate.js';

/** An open task that cannot start yet, with what blocks it (`Plan.blocked()`). */
export interface BlockedTask extends BlockedInfo {
  task: TaskSnapshot;
}

/** `list()` without a filter: every task, with nothing to parse. */
export const NO_FILTER: ListFilter = Object.freeze({});

export class PlanReads {
  private readonly snapshots = new Map<string, TaskSnapshot>();
  private readonly index: PlanIndex;
  /**
   * The transaction the Plan last wrote in, until it ends and its changes reach the cached views (`follow`):
   * while set, reads build fresh views.
   */
  private writtenIn: Y.Transaction | null = null;

  constructor(
    private readonly doc: Y.Doc,
    private readonly tasks: Y.Map<unknown>,
    private readonly aliases: Aliases,
  ) {
    this.index = new PlanIndex({ ids: () => taskIds(this.tasks), get: (id) => this.get(id) });
  }

  /** A task's map was written in the current transaction: drop its snapshot now; `follow` updates the views. */
  touched(id: string): void {
    this.snapshots.delete(id);
    this.index.touched(id);
    this.writtenIn = this.doc._transaction;
  }

  /** Brings the cache and the derived views up to one transaction's changes (the Plan calls it after each). */
  follow(changes: ReadonlyMap<string, ChangedTask>, txn: Y.Transaction): void {
    for (const id of changes.keys()) this.snapshots.delete(id);
    if (txn === this.writtenIn) this.writtenIn = null;
    if (changes.size === 0) return;
    this.index.apply([...changes].map(([id, change]) => ({ id, ...change })));
  }

  /**
   * The derived views. Inside a transaction the Plan is writing to (a batch), the cached ones lag behind until
   * the transaction ends, so reads there get a fresh, uncached view.
   */
  view(): PlanIndex {
    if (!this.writtenIn) return this.index;
    return new PlanIndex({ ids: () => taskIds(this.tasks), get: (id) => this.get(id) });
  }

  /** Every task in tree order; patched in place by the next change, so callers copy what they return. */
  all(): readonly TaskSnapshot[] {
    return this.view().ordered();
  }

  has(id: string): boolean {
    return taskAt(this.tasks, id) !== undefined;
  }

  get(id: string): TaskSnapshot | undefined {
    const cached = this.snapshots.get(id);
    if (cached) return cached;
    const task = this.tasks.get(id);
    if (!(task instanceof Y.Map)) return undefined;
    const snapshot = freezeSnapshot(snapshotTask(id, task));
    this.snapshots.set(id, snapshot);
    return snapshot;
  }

  require(id: string): TaskSnapshot {
    const task = this.get(id);
    if (!task) throw taskNotFound(this.tasks, id);
    return task;
  }

  byNum(num: number): TaskSnapshot | undefined {
    // Inside a batch the Plan is writing, the alias index lags until the transaction ends: look at every task then.
    const ids = this.writtenIn
      ? this.all().flatMap((t) => (t.num === num ? [t.id] : []))
      : this.aliases.ids(num);
    let best: TaskSnapshot | undefined;
    for (const id of ids) {
      const task = this.get(id);
      if (task && (!best || createdOrder(task, best) < 0)) best = task;
    }
    return best;
  }

  list(filter: ListFilter): TaskSnapshot[] {
    const f = filter === NO_FILTER ? filter : parseOnce(ListFilterSchema, filter, 'list filter');
    const statuses = f.status === undefined ? null : new Set(Array.isArray(f.status) ? f.status : [f.status]);
    const pool = f.parent !== undefined ? this.children(f.parent) : this.all();
    return pool.filter((task) => {
      if (f.state === 'open' && !isOpenStatus(task.status)) return false;
      if (f.state === 'closed' && isOpenStatus(task.status)) return false;
      if (statuses && !statuses.has(task.status)) return false;
      if (f.assignee !== undefined && task.assignee !== f.assignee) return false;
      return true;
    });
  }

  children(parent: string | null): TaskSnapshot[] {
    const out: TaskSnapshot[] = [];
    for (const id of this.view().children(parent)) {
      const task = this.get(id);
      if (task) out.push(task);
    }
    return out;
  }

  descendants(id: string): string[] {
    const view = this.view();
    return descendants(id, (parent) => view.children(parent));
  }

  ready(actor: Actor): TaskSnapshot[] {
    const blocked = this.view().blocked();
    return this.all().filter((task) => isReadyFor(task, blocked, actor));
  }

  isReady(id: string, actor: Actor): boolean {
    const task = this.get(id);
    return task !== undefined && isReadyFor(task, this.view().blocked(), actor);
  }

  blocked(): BlockedTask[] {
    const blocked = this.view().blocked();
    const out: BlockedTask[] = [];
    for (const task of this.all()) {
      const info = blocked.get(task.id);
      if (info) out.push({ ...info, task });
    }
    return out;
  }

  blockedTask(id: string): BlockedTask | undefined {
    const info = this.view().blocked().get(id);
    const task = this.get(id);
    return info && task ? { ...info, task } : undefined;
  }

  dependents(id: string): TaskSnapshot[] {
    const view = this.view();
    const out: TaskSnapshot[] = [];
    for (const dependent of view.dependents(id)) {
      const task = this.get(dependent);
      if (task) out.push(task);
    }
    if (out.length < 2) return out;
    const at = new Map(out.map((task) => [task.id, view.position(task.id) ?? 0]));
    return out.sort((a, b) => at.get(a.id)! - at.get(b.id)!);
  }
}

function freezeSnapshot(snapshot: TaskSnapshot): TaskSnapshot {
  Object.freeze(snapshot.blockedBy);
  Object.freeze(snapshot.context);
  return Object.freeze(snapshot);
}
