// Integer aliases (`num`, docs/SCHEMA.md): the largest one in use (so a new task gets max + 1, never a removed
// task's), which tasks hold each one, and the repair after two replicas gave one alias to two tasks. Kept in step
// with every transaction's changes, local or remote, so neither is rebuilt from every task after a peer's edit.
import * as Y from 'yjs';
import type { ChangedTask } from './change-events.js';
import { readNum, readTombstone, taskIds } from './doc.js';
import { F, type TaskSnapshot } from './schema.js';

export class Aliases {
  /** The largest alias any task or tombstone holds; null until an add needs it (see next). */
  private maxNum: number | null = null;
  /** Ids by alias; built when first needed, then kept in step by `follow`. */
  private index: AliasIndex | null = null;
  private readonly onTombstones: (event: Y.YMapEvent<unknown>) => void;

  constructor(
    private readonly tasks: Y.Map<unknown>,
    private readonly removed: Y.Map<unknown>,
  ) {
    // A peer's tombstone can hold the alias of a task this replica never saw: new aliases must stay above it.
    this.onTombstones = (event) => {
      for (const id of event.keysChanged) this.raise(readTombstone(removed.get(id)).num);
    };
    removed.observe(this.onTombstones);
  }

  destroy(): void {
    this.removed.unobserve(this.onTombstones);
  }

  /** A fresh alias: one more than any task or tombstone holds, so a removed task's alias is never reused. */
  next(): number {
    if (this.maxNum === null) {
      let max = 0;
      for (const id of taskIds(this.tasks)) max = Math.max(max, this.numOf(id) ?? 0);
      for (const tomb of this.removed.values()) max = Math.max(max, readTombstone(tomb).num);
      this.maxNum = max;
    }
    return ++this.maxNum;
  }

  /** The tasks holding alias `num` (normally one). */
  ids(num: number): ReadonlySet<string> {
    return this.aliasIndex().ids(num);
  }

  /** Follows one transaction's changes: new, removed and re-numbered tasks. */
  follow(changes: ReadonlyMap<string, ChangedTask>): void {
    for (const [id, { kind, fields }] of changes) {
      if (kind === 'updated' && !fields.has(F.num)) continue;
      const num = this.numOf(id);
      if (num !== undefined) this.raise(num);
      this.index?.set(id, num);
    }
  }

  /**
   * Integer aliases are assigned as max + 1, so two replicas creating tasks concurrently can pick the same one.
   * After a merge the earlier-created task keeps the alias; the creator of the later one (and only it, so two
   * replicas never race to repair) gives its task a fresh alias. These are the tasks `actor` must renumber.
   */
  losers(actor: string, get: (id: string) => TaskSnapshot | undefined): string[] {
    const out: string[] = [];
    for (const num of this.aliasIndex().duplicated()) {
      const group = [...this.aliasIndex().ids(num)]
        .map(get)
        .filter((t): t is TaskSnapshot => t !== undefined)
        .sort(createdOrder);
      for (const task of group.slice(1)) if (task.createdBy === actor) out.push(task.id);
    }
    return out;
  }

  /** A task's alias read from the document (undefined when there is no such task). */
  private numOf(id: string): number | undefined {
    const map = this.tasks.get(id);
    return map instanceof Y.Map ? readNum(map) : undefined;
  }

  private raise(num: number): void {
    if (this.maxNum !== null && num > this.maxNum) this.maxNum = num;
  }

  private aliasIndex(): AliasIndex {
    if (!this.index) {
      this.index = new AliasIndex();
      for (const id of taskIds(this.tasks)) this.index.set(id, this.numOf(id));
    }
    return this.index;
  }
}

/** Which tasks hold each integer alias: normally one, two or more after concurrent creation until repaired. */
class AliasIndex {
  private readonly idsByNum = new Map<number, Set<string>>();
  private readonly numById = new Map<string, number>();
  private readonly shared = new Set<number>();

  /** Records task `id`'s alias, or (undefined) that the task is gone. */
  set(id: string, num: number | undefined): void {
    const old = this.numById.get(id);
    if (old === num) return;
    if (old !== undefined) {
      const ids = this.idsByNum.get(old)!;
      ids.delete(id);
      if (ids.size === 0) this.idsByNum.delete(old);
      if (ids.size < 2) this.shared.delete(old);
    }
    if (num === undefined) {
      this.numById.delete(id);
      return;
    }
    this.numById.set(id, num);
    const ids = this.idsByNum.get(num) ?? new Set<string>();
    this.idsByNum.set(num, ids.add(id));
    if (ids.size > 1) this.shared.add(num);
  }

  ids(num: number): ReadonlySet<string> {
    return this.idsByNum.get(num) ?? NO_IDS;
  }

  /** Aliases more than one task holds. */
  duplicated(): ReadonlySet<number> {
    return this.shared;
  }
}

const NO_IDS: ReadonlySet<string> = new Set();

/** Creation order, ties broken by id: the earlier task keeps a shared alias. */
export function createdOrder(a: TaskSnapshot, b: TaskSnapshot): number {
  return a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
