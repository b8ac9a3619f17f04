// Derived views of a plan kept between reads: the tree (effective parents, sibling order), the dependency
// cycles and the blocked set. Each is rebuilt only when a change can affect it, and the tree is patched in
// place for the common local edits (an add, a move), so queries on large plans stay cheap after every write.
import { type BlockedInfo, classifyBlocked, findCycles } from './graph.js';
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
const BLOCKING_FIELDS = new Set<string>([F.status, F.blockedBy, F.parent]);

export class PlanIndex {
  /** Sibling ids in order, by effective parent; null when it must be rebuilt. */
  private childIds: Map<string | null, string[]> | null = null;
  private parentOf = new Map<string, string | null>();
  /** True when the tree has orphans or broken parent cycles: then only a rebuild re-decides them. */
  private irregular = false;
  private orderIds: string[] | null = null;
  private orderSnapshots: TaskSnapshot[] | null = null;
  private cycleData: { cycles: string[][]; cycleOf: Map<string, string[]>; dangling: Set<string> } | null =
    null;
  private blockedData: Map<string, BlockedInfo> | null = null;

  constructor(private readonly source: IndexSource) {}

  /** A task's snapshot changed (any field): the ordered snapshot list is stale. */
  touched(): void {
    this.orderSnapshots = null;
  }

  /** Applies one transaction's changes to the derived views. */
  apply(changes: readonly IndexChange[]): void {
    this.orderSnapshots = null;
    const placed: string[] = [];
    let rebuildTree = false;
    let cyclesStale = false;
    let blockedStale = false;
    for (const change of changes) {
      if (change.kind === 'removed') {
        rebuildTree = cyclesStale = blockedStale = true;
        continue;
      }
      if (change.kind === 'added') {
        placed.push(change.id);
        blockedStale = true;
        // A new task joins a cycle only if an existing edge already pointed at its id (a merge).
        if (this.cycleData?.dangling.has(change.id)) cyclesStale = true;
        continue;
      }
      for (const field of change.fields) {
        if (STRUCTURE_FIELDS.has(field)) placed.push(change.id);
        if (field === F.blockedBy) cyclesStale = true;
        if (BLOCKING_FIELDS.has(field)) blockedStale = true;
      }
    }
    if (cyclesStale) this.cycleData = null;
    if (blockedStale || cyclesStale) this.blockedData = null;
    if (placed.length > 0 || rebuildTree) this.orderIds = null;
    if (rebuildTree || !this.childIds || (this.irregular && placed.length > 0)) {
      this.childIds = null;
      return;
    }
    if (placed.length > 0 && !this.place([...new Set(placed)])) this.childIds = null;
  }

  /** Every task in tree order. */
  ordered(): TaskSnapshot[] {
    if (this.orderSnapshots) return this.orderSnapshots;
    const out: TaskSnapshot[] = [];
    for (const id of this.orderedIds()) {
      const task = this.source.get(id);
      if (task) out.push(task);
    }
    this.orderSnapshots = out;
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

  cycles(): string[][] {
    return this.cycleInfo().cycles;
  }

  blocked(): Map<string, BlockedInfo> {
    if (!this.blockedData) {
      this.blockedData = classifyBlocked(
        this.ordered(),
        this.cycleInfo().cycleOf,
        (id) => this.parentOf.get(id) ?? null,
      );
    }
    return this.blockedData!;
  }

  private cycleInfo(): NonNullable<PlanIndex['cycleData']> {
    if (!this.cycleData) {
      const tasks = this.ordered();
      const cycles = findCycles(tasks);
      const cycleOf = new Map<string, string[]>();
      for (const cycle of cycles) for (const id of cycle) cycleOf.set(id, cycle);
      const live = new Set(tasks.map((t) => t.id));
      const dangling = new Set<string>();
      for (const task of tasks) for (const b of task.blockedBy) if (!live.has(b)) dangling.add(b);
      this.cycleData = { cycles, cycleOf, dangling };
    }
    return this.cycleData;
  }

  private orderedIds(): string[] {
    if (this.orderIds) return this.orderIds;
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
