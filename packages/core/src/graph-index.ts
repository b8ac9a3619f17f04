// The dependency graph's derived views, kept up to date edit by edit: who waits on whom (reverse edges), the
// cycles (strongly connected components) and the blocked set. A status change re-decides only the task and
// the tasks that wait on it; a new edge looks only at what its blocker waits on; a removed edge re-splits only
// the cycle it was in. Anything harder (a removal, a move, a tree rebuild) falls back to a full rebuild, which
// is O(tasks + edges). Work is deferred to the next read, so a burst of edits costs one pass.
import {
  type BlockedInfo,
  blockingAncestor,
  descendants,
  findCycles,
  inherited,
  ownBlock,
  waitingOnSteps,
} from './graph.js';
import { isOpenStatus, type TaskSnapshot } from './schema.js';

export interface GraphSource {
  get(id: string): TaskSnapshot | undefined;
  /** Every task, in tree order (the order cycles and full rebuilds see them in). */
  ordered(): readonly TaskSnapshot[];
  /** The parent a task is shown under (null at the top level or for an orphan). */
  parentOf(id: string): string | null;
  /** Direct children in the shown tree. */
  children(id: string): readonly string[];
  /** How many tasks there are. */
  count(): number;
}

export class GraphIndex {
  /** False until the first read, and after any change that is not worth patching. */
  private built = false;
  /** Blocker → the tasks whose blockedBy names it (also for blockers that do not exist, yet or any more). */
  private readonly waiting = new Map<string, Set<string>>();
  /** The blockedBy each task had when the reverse edges were last brought up to date. */
  private readonly edgesSeen = new Map<string, readonly string[]>();
  private cycleList: string[][] = [];
  private readonly cycleOf = new Map<string, string[]>();
  /** Open tasks blocked on their own account (cycle, failed or open blockers). */
  private readonly own = new Map<string, BlockedInfo>();
  /** `own` plus open steps under a blocked ancestor: what queries see. */
  private readonly blockedMap = new Map<string, BlockedInfo>();
  /** Tasks whose own reason must be re-decided at the next read. */
  private readonly dirty = new Set<string>();
  /** Tasks whose status or existence changed: their parents' open steps must be looked at again. */
  private readonly stepChanged = new Set<string>();
  /** Tasks whose blockedBy may have changed since `edgesSeen`. */
  private readonly edgeChanged = new Set<string>();

  constructor(private readonly source: GraphSource) {}

  /** Everything must be recomputed (a removal, a move, a rebuilt tree). */
  reset(): void {
    this.built = false;
  }

  /** A task appeared (not a move: its place in the tree is already known to the source). */
  added(id: string): void {
    if (!this.built) return;
    this.edgeChanged.add(id);
    this.dirty.add(id);
    // Tasks that already named this id (a merge) now wait on a task that exists.
    for (const d of this.waiting.get(id) ?? []) this.dirty.add(d);
    this.parentDirty(id);
  }

  statusChanged(id: string): void {
    if (!this.built) return;
    this.dirty.add(id);
    for (const d of this.waiting.get(id) ?? []) this.dirty.add(d);
    this.parentDirty(id);
  }

  /**
   * A step opened, closed or appeared: whether its parent waits on its steps may have changed. The parent is
   * looked up at the next read, once the tree holds this transaction's changes.
   */
  private parentDirty(id: string): void {
    this.stepChanged.add(id);
  }

  blockersChanged(id: string): void {
    if (!this.built) return;
    this.edgeChanged.add(id);
    this.dirty.add(id);
  }

  /** Ids of the tasks whose blockedBy names `id`, in no particular order. Do not mutate. */
  dependents(id: string): ReadonlySet<string> {
    this.refresh();
    return this.waiting.get(id) ?? NONE;
  }

  cycles(): string[][] {
    this.refresh();
    return this.cycleList;
  }

  /** Blocked open tasks by id. Do not mutate. */
  blocked(): ReadonlyMap<string, BlockedInfo> {
    this.refresh();
    return this.blockedMap;
  }

  private refresh(): void {
    if (!this.built) {
      this.rebuild();
      return;
    }
    if (this.edgeChanged.size > 0) this.updateEdges();
    if (this.stepChanged.size > 0) this.stepsChanged();
    if (this.dirty.size > 0) this.updateBlocked();
  }

  /** Parents of steps that opened, closed or appeared are re-decided (looked up now that the tree holds them). */
  private stepsChanged(): void {
    for (const id of this.stepChanged) {
      const parent = this.source.parentOf(id);
      if (parent !== null) this.dirty.add(parent);
    }
    this.stepChanged.clear();
  }

  private rebuild(): void {
    const tasks = this.source.ordered();
    this.waiting.clear();
    this.edgesSeen.clear();
    for (const task of tasks) {
      this.edgesSeen.set(task.id, task.blockedBy);
      for (const b of task.blockedBy) this.reverseEdges(b).add(task.id);
    }
    this.setCycles(findCycles(tasks));
    this.own.clear();
    for (const task of tasks) {
      const info = this.decideOwn(task);
      if (info) this.own.set(task.id, info);
    }
    this.blockedMap.clear();
    const limit = this.source.count();
    for (const task of tasks) this.settle(task.id, limit);
    this.dirty.clear();
    this.edgeChanged.clear();
    this.stepChanged.clear();
    this.built = true;
  }

  // ---------------------------------------------------------------- edges and cycles

  /** Brings the reverse edges up to date, then patches the cycles for each edge that came or went. */
  private updateEdges(): void {
    const addedEdges: Array<[string, string]> = [];
    const removedInCycle: Array<[string, string]> = [];
    for (const id of this.edgeChanged) {
      const before = this.edgesSeen.get(id) ?? [];
      const now = this.source.get(id)?.blockedBy ?? [];
      if (now.length === 0) this.edgesSeen.delete(id);
      else this.edgesSeen.set(id, now);
      const nowSet = new Set(now);
      const beforeSet = new Set(before);
      for (const b of before) {
        if (nowSet.has(b)) continue;
        const set = this.waiting.get(b);
        set?.delete(id);
        if (set?.size === 0) this.waiting.delete(b);
        // Only the removal of an edge inside a cycle can change the cycles: that one may split.
        const cycle = this.cycleOf.get(id);
        if (cycle && this.cycleOf.get(b) === cycle) removedInCycle.push([id, b]);
      }
      for (const b of now) {
        if (beforeSet.has(b)) continue;
        this.reverseEdges(b).add(id);
        addedEdges.push([id, b]);
      }
    }
    this.edgeChanged.clear();

    for (const [id, b] of removedInCycle) {
      const cycle = this.cycleOf.get(id);
      // Still one cycle if `id` reaches `b` another way: any path through the old edge can go around.
      if (!cycle || this.cycleOf.get(b) !== cycle || this.reachesWithin(id, b, cycle)) continue;
      this.dropCycle(cycle);
      const members = cycle.map((m) => this.source.get(m)).filter((t) => t !== undefined);
      for (const part of findCycles(members)) this.addCycle(part);
    }
    for (const [id, b] of addedEdges) this.closeCycle(id, b);
  }

  /**
   * After `id` started waiting on `b`: if `b` (transitively) waits on `id`, every task on such a path is now in
   * one cycle with them, merging any cycles it passes through. O(what `b` waits on).
   */
  private closeCycle(id: string, b: string): void {
    const cycle = this.cycleOf.get(id);
    if (cycle && this.cycleOf.get(b) === cycle) return;
    if (!this.source.get(id) || !this.source.get(b)) return;
    const ahead = new Set<string>([b]);
    const queue = [b];
    for (let i = 0; i < queue.length; i++) {
      for (const next of this.source.get(queue[i]!)?.blockedBy ?? []) {
        if (ahead.has(next) || !this.source.get(next)) continue;
        ahead.add(next);
        queue.push(next);
      }
    }
    if (!ahead.has(id)) return;
    // Members: what `b` waits on that also waits on `id`.
    const members = new Set<string>([id]);
    const back = [id];
    for (let i = 0; i < back.length; i++) {
      for (const prev of this.waiting.get(back[i]!) ?? []) {
        if (members.has(prev) || !ahead.has(prev)) continue;
        members.add(prev);
        back.push(prev);
      }
    }
    for (const m of members) {
      const old = this.cycleOf.get(m);
      if (old) this.dropCycle(old);
    }
    this.addCycle([...members].sort());
  }

  /** Whether `from` waits on `to` through tasks of `cycle` only. */
  private reachesWithin(from: string, to: string, cycle: string[]): boolean {
    const seen = new Set<string>([from]);
    const queue = [from];
    for (let i = 0; i < queue.length; i++) {
      for (const next of this.source.get(queue[i]!)?.blockedBy ?? []) {
        if (next === to) return true;
        if (seen.has(next) || this.cycleOf.get(next) !== cycle) continue;
        seen.add(next);
        queue.push(next);
      }
    }
    return false;
  }

  private addCycle(cycle: string[]): void {
    for (const id of cycle) {
      this.cycleOf.set(id, cycle);
      this.dirty.add(id);
    }
    this.cycleList = [...this.cycleList, cycle].sort(byFirstId);
  }

  private dropCycle(cycle: string[]): void {
    for (const id of cycle) {
      if (this.cycleOf.get(id) === cycle) this.cycleOf.delete(id);
      this.dirty.add(id);
    }
    this.cycleList = this.cycleList.filter((c) => c !== cycle);
  }

  private setCycles(cycles: string[][]): void {
    this.cycleOf.clear();
    for (const cycle of cycles) for (const id of cycle) this.cycleOf.set(id, cycle);
    this.cycleList = cycles;
  }

  private reverseEdges(id: string): Set<string> {
    let set = this.waiting.get(id);
    if (!set) {
      set = new Set();
      this.waiting.set(id, set);
    }
    return set;
  }

  // ---------------------------------------------------------------- blocked set

  private decideOwn(task: TaskSnapshot): BlockedInfo | null {
    return ownBlock(
      task,
      (id) => this.source.get(id)?.status,
      (id) => this.cycleOf.get(id),
    );
  }

  /**
   * Re-decides the dirty tasks' own reasons; where a task became blocked or unblocked, its open steps inherit
   * the change, so its subtree is re-decided too.
   */
  private updateBlocked(): void {
    const redo: string[] = [];
    for (const id of this.dirty) {
      const task = this.source.get(id);
      const info = task ? this.decideOwn(task) : null;
      const was = this.own.has(id);
      if (info) this.own.set(id, info);
      else this.own.delete(id);
      redo.push(id);
      if (was !== (info !== null)) for (const child of this.source.children(id)) this.subtree(child, redo);
    }
    this.dirty.clear();
    const limit = this.source.count();
    for (const id of redo) this.settle(id, limit);
  }

  /**
   * Decides what queries see for one task from the own reasons: its own, else its nearest blocked ancestor's,
   * else its open steps (open tasks only). `limit` bounds the walk up: shown parents never form a cycle (the tree breaks them), so
   * it is a second line of defence.
   */
  private settle(id: string, limit: number): void {
    const task = this.source.get(id);
    const mine = this.own.get(id);
    if (!task || !isOpenStatus(task.status)) this.blockedMap.delete(id);
    else if (mine) this.blockedMap.set(id, mine);
    else {
      const ancestor = blockingAncestor(id, this.own, (x) => this.source.parentOf(x), limit);
      const openSteps = ancestor ? [] : this.openSteps(id);
      if (ancestor) this.blockedMap.set(id, inherited(id, ancestor));
      else if (openSteps.length > 0) this.blockedMap.set(id, waitingOnSteps(id, openSteps));
      else this.blockedMap.delete(id);
    }
  }

  private openSteps(id: string): string[] {
    const out: string[] = [];
    for (const child of this.source.children(id)) {
      const step = this.source.get(child);
      if (step && isOpenStatus(step.status)) out.push(child);
    }
    return out;
  }

  private subtree(id: string, out: string[]): void {
    out.push(id);
    for (const step of descendants(id, (x) => this.source.children(x))) out.push(step);
  }
}

const NONE: ReadonlySet<string> = new Set();
const byFirstId = (a: string[], b: string[]) => (a[0]! < b[0]! ? -1 : 1);
