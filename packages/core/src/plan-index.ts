// Derived views of a plan kept between reads: the tree (effective parents, sibling order), the tasks in tree
// order, and the dependency graph's views (cycles, blocked set; graph-index.ts). Each is patched in place for
// the common edits (an add, a move, a status or blockedBy change) and rebuilt only when a change is beyond a
// patch, so queries on large plans stay cheap after every write.
import type { BlockedInfo } from './graph.js';
import { GraphIndex } from './graph-index.js';
import { compareRanked } from './rank.js';
import { F, type TaskSnapshot } from './schema.js';

export interface IndexSource {
  ids(): Iterable<string>;
  get(id: string): TaskSnapshot | undefined;
}

export interface IndexChange {
  id: string;
  kind: 'added' | 'updated' | 'removed';
  fields: Iterable<string>;
}

const STRUCTURE_FIELDS = new Set<string>([F.parent, F.rank]);

export class PlanIndex {
  /** Sibling ids in order, by effective parent; null when it must be rebuilt. */
  private childIds: Map<string | null, string[]> | null = null;
  private parentOf = new Map<string, string | null>();
  /** True when the tree has orphans or broken parent cycles: then only a rebuild re-decides them. */
  private irregular = false;
  private orderIds: string[] | null = null;
  /** Snapshots in tree order, and where each id sits in it; null when the order changed. */
  private orderSnapshots: TaskSnapshot[] | null = null;
  /** Where each id sits in `orderSnapshots`; built on first use (a patch or a position) after a rebuild. */
  private orderPos: Map<string, number> | null = null;
  /** Tasks whose snapshot changed since `orderSnapshots` was made (their place did not). */
  private readonly staleSnapshots = new Set<string>();
  private readonly graph: GraphIndex;

  constructor(private readonly source: IndexSource) {
    this.graph = new GraphIndex({
      get: (id) => this.source.get(id),
      ordered: () => this.ordered(),
      parentOf: (id) => this.effectiveParent(id),
      children: (id) => this.children(id),
      count: () => {
        this.tree();
        return this.parentOf.size;
      },
    });
  }

  /** A task's fields were written: its snapshot in the ordered list is stale. */
  touched(id: string): void {
    this.staleSnapshots.add(id);
  }

  /** Applies one transaction's changes to the derived views. */
  apply(changes: readonly IndexChange[]): void {
    const placed: string[] = [];
    const added: string[] = [];
    let rebuildTree = false;
    for (const change of changes) {
      this.staleSnapshots.add(change.id);
      if (change.kind === 'removed') {
        rebuildTree = true;
        continue;
      }
      if (change.kind === 'added') {
        placed.push(change.id);
        added.push(change.id);
        continue;
      }
      let any = false;
      for (const field of change.fields) {
        any = true;
        if (STRUCTURE_FIELDS.has(field)) placed.push(change.id);
        if (field === F.parent)
          this.graph.reset(); // a move changes what its steps inherit
        else if (field === F.status) this.graph.statusChanged(change.id);
        else if (field === F.blockedBy) this.graph.blockersChanged(change.id);
      }
      // No field named: the task's whole map was replaced (a concurrent create of the same id).
      if (!any) rebuildTree = true;
    }
    const appended = !rebuildTree && placed.length === 1 && added.length === 1 ? added[0]! : null;
    if (rebuildTree || !this.childIds || (this.irregular && placed.length > 0)) {
      this.childIds = null;
    } else if (placed.length > 0 && !this.place([...new Set(placed)])) {
      this.childIds = null;
    }
    if (appended !== null && this.childIds && this.isLastTopLevel(appended)) this.appendToOrder(appended);
    else if (placed.length > 0 || rebuildTree) this.orderIds = null;
    if (!this.childIds) this.graph.reset();
    else for (const id of added) this.graph.added(id);
  }

  /**
   * Every task in tree order. Do not mutate, and do not keep it across a change of the plan: the next change
   * patches it in place (a copy per change cost O(tasks) per write). Plan's reads copy what they return.
   */
  ordered(): readonly TaskSnapshot[] {
    const ids = this.orderedIds();
    if (this.orderSnapshots) {
      if (this.staleSnapshots.size > 0) {
        const positions = this.positions();
        for (const id of this.staleSnapshots) {
          const at = positions.get(id);
          const task = this.source.get(id);
          if (at !== undefined && task) this.orderSnapshots[at] = task;
        }
        this.staleSnapshots.clear();
      }
      return this.orderSnapshots;
    }
    const out: TaskSnapshot[] = [];
    for (const id of ids) {
      const task = this.source.get(id);
      if (task) out.push(task);
    }
    this.orderSnapshots = out;
    this.orderPos = null;
    this.staleSnapshots.clear();
    return out;
  }

  /** Ids of the direct children of `parent` (null: top level), in order. Do not mutate. */
  children(parent: string | null): readonly string[] {
    return this.tree().get(parent) ?? [];
  }

  effectiveParent(id: string): string | null {
    this.tree();
    return this.parentOf.get(id) ?? null;
  }

  /** Where a task sits in tree order (undefined for an unknown id). */
  position(id: string): number | undefined {
    this.ordered();
    return this.positions().get(id);
  }

  /** Ids of the tasks that wait on `id`, in no particular order. */
  dependents(id: string): ReadonlySet<string> {
    return this.graph.dependents(id);
  }

  cycles(): string[][] {
    return this.graph.cycles();
  }

  /** Blocked open tasks by id. Do not mutate. */
  blocked(): ReadonlyMap<string, BlockedInfo> {
    return this.graph.blocked();
  }

  private positions(): Map<string, number> {
    if (!this.orderPos) {
      this.orderPos = new Map();
      const snapshots = this.orderSnapshots ?? [];
      for (let i = 0; i < snapshots.length; i++) this.orderPos.set(snapshots[i]!.id, i);
    }
    return this.orderPos;
  }

  /** Whether a task sits last at the top level: then it is last in tree order too (it has no steps yet). */
  private isLastTopLevel(id: string): boolean {
    const top = this.childIds?.get(null);
    return this.parentOf.get(id) === null && top !== undefined && top[top.length - 1] === id;
  }

  /**
   * A new task appended at the end (the common case: an agent adding to its plan) extends the order in place
   * instead of a walk of the whole tree.
   */
  private appendToOrder(id: string): void {
    if (!this.orderIds) return;
    this.orderIds.push(id); // private: never handed out
    const task = this.source.get(id);
    if (!this.orderSnapshots || !task) {
      this.orderSnapshots = null;
      return;
    }
    this.orderSnapshots.push(task);
    this.orderPos?.set(id, this.orderSnapshots.length - 1);
    this.staleSnapshots.delete(id);
  }

  private orderedIds(): string[] {
    if (this.orderIds) return this.orderIds;
    this.orderSnapshots = null;
    const tree = this.tree();
    const out: string[] = [];
    const stack = [...(tree.get(null) ?? [])].reverse();
    while (stack.length > 0) {
      const id = stack.pop()!;
      out.push(id);
      const kids = tree.get(id);
      if (kids) for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]!);
    }
    this.orderIds = out;
    return out;
  }

  private tree(): Map<string | null, string[]> {
    if (this.childIds) return this.childIds;
    const snapshots: TaskSnapshot[] = [];
    for (const id of this.source.ids()) {
      const task = this.source.get(id);
      if (task) snapshots.push(task);
    }
    const { parents, irregular } = resolveParents(snapshots);
    this.parentOf = parents;
    this.irregular = irregular;
    const childIds = new Map<string | null, string[]>();
    const byParent = new Map<string | null, TaskSnapshot[]>();
    for (const task of snapshots) {
      const parent = this.parentOf.get(task.id) ?? null;
      const group = byParent.get(parent);
      if (group) group.push(task);
      else byParent.set(parent, [task]);
    }
    for (const [parent, group] of byParent)
      childIds.set(
        parent,
        group.sort(compareRanked).map((t) => t.id),
      );
    this.childIds = childIds;
    return childIds;
  }

  /**
   * Patches the tree for tasks that were added or whose parent/rank changed. Returns false when the change is
   * beyond a patch (a missing parent, a parent cycle) and the tree must be rebuilt.
   */
  private place(ids: string[]): boolean {
    const tree = this.childIds!;
    const pending = new Set(ids);
    for (const id of ids) {
      const old = this.parentOf.get(id);
      if (old !== undefined) {
        const list = tree.get(old);
        const at = list?.indexOf(id) ?? -1;
        if (at >= 0) list!.splice(at, 1);
        this.parentOf.delete(id);
      }
    }
    // Parents before children: a new step's parent may be new in the same transaction.
    const touchedLists = new Map<string | null, number>();
    let progress = true;
    while (pending.size > 0 && progress) {
      progress = false;
      for (const id of pending) {
        const task = this.source.get(id);
        if (!task) return false;
        const parent = task.parent;
        if (parent !== null && !this.parentOf.has(parent)) {
          if (pending.has(parent)) continue;
          return false; // orphan: its parent is gone
        }
        // Moving under one's own subtree would close a parent cycle.
        for (let p = parent; p !== null; p = this.parentOf.get(p) ?? null) if (p === id) return false;
        this.parentOf.set(id, parent);
        const list = tree.get(parent);
        if (list) list.push(id);
        else tree.set(parent, [id]);
        touchedLists.set(parent, (touchedLists.get(parent) ?? 0) + 1);
        pending.delete(id);
        progress = true;
      }
    }
    if (pending.size > 0) return false;
    for (const [parent, added] of touchedLists) {
      const list = tree.get(parent)!;
      if (added === 1) this.sinkLast(list);
      else this.sortList(list);
    }
    return true;
  }

  /** Moves the last id of a sorted list to its place (binary search): one insert costs O(log n) compares. */
  private sinkLast(list: string[]): void {
    const id = list.pop()!;
    const task = this.source.get(id)!;
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareRanked(this.source.get(list[mid]!)!, task) < 0) lo = mid + 1;
      else hi = mid;
    }
    list.splice(lo, 0, id);
  }

  private sortList(list: string[]): void {
    const snapshots = list.map((id) => this.source.get(id)!);
    snapshots.sort(compareRanked);
    for (let i = 0; i < list.length; i++) list[i] = snapshots[i]!.id;
  }
}

/**
 * Effective parents: the stored parent when it exists, except that a cycle of parents (concurrent moves) is
 * broken at its smallest id, which then shows at the top level. Deterministic for a given document state.
 */
export function resolveParents(tasks: readonly TaskSnapshot[]): {
  parents: Map<string, string | null>;
  /** Some stored parent was missing or part of a cycle. */
  irregular: boolean;
} {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const resolved = new Map<string, string | null>();
  const broken = new Set<string>();
  let irregular = false;
  for (const start of tasks) {
    const path: string[] = [];
    const onPath = new Map<string, number>();
    let current: string | null = start.id;
    while (current !== null && !resolved.has(current)) {
      const seenAt = onPath.get(current);
      if (seenAt !== undefined) {
        broken.add(path.slice(seenAt).sort()[0]!);
        break;
      }
      onPath.set(current, path.length);
      path.push(current);
      const parent: string | null = byId.get(current)!.parent;
      current = parent !== null && byId.has(parent) ? parent : null;
    }
    for (const id of path) {
      const parent = byId.get(id)!.parent;
      const shown = broken.has(id) || parent === null || !byId.has(parent) ? null : parent;
      if (shown !== parent) irregular = true;
      resolved.set(id, shown);
    }
  }
  return { parents: resolved, irregular };
}
