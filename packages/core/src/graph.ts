// Dependency rules and graph queries: what satisfies a dependency, what is ready, what is blocked and why,
// cycle detection, and the walk down the task tree. Everything here is O(tasks + edges) and deterministic for a given document state.
import { isOpenStatus, type Status } from './schema.js';

/**
 * The one rule for what satisfies a dependency: the blocker is done, skipped or cancelled. A cancelled blocker
 * will never be done, so waiting on it would block forever; a failed one blocks, since its dependents likely
 * need a decision. An edge to a task that no longer exists is ignored (removal drops such edges; only a
 * concurrent edit can leave one behind).
 */
export function satisfiesDependency(status: Status): boolean {
  return status === 'done' || status === 'skipped' || status === 'cancelled';
}

export interface GraphNode {
  id: string;
  status: Status;
  parent: string | null;
  blockedBy: readonly string[];
  assignee: string | null;
}

export type BlockReason =
  /** Some blockers are still open. */
  | 'waiting_on_blockers'
  /** A blocker failed: someone must decide what happens next. */
  | 'blocker_failed'
  /** The task is part of a dependency cycle (a merge can create one even when each side refused it). */
  | 'cycle'
  /** An ancestor is blocked, so its steps are too. */
  | 'parent_blocked'
  /**
   * The task has open steps: it is finished by finishing them, so it is not ready before they are closed.
   * Its steps do not inherit this (they are what it waits on).
   */
  | 'waiting_on_steps';

export interface BlockedInfo {
  id: string;
  reason: BlockReason;
  /**
   * The unsatisfied blockers (for `cycle`, its blockers inside the cycle; for `parent_blocked`, the ancestor;
   * for `waiting_on_steps`, its open direct steps, sorted).
   */
  blockedBy: string[];
  /** For `cycle`: every task in the cycle, sorted. */
  cycle?: string[];
}

export interface GraphAnalysis {
  /** Blocked open tasks, keyed by id. */
  blocked: Map<string, BlockedInfo>;
  /** Each cycle (strongly connected component with an edge inside), members sorted, cycles sorted by first id. */
  cycles: string[][];
}

/** Strongly connected components (iterative Tarjan over integer arrays) of the blockedBy graph. */
export function findCycles(nodes: readonly Pick<GraphNode, 'id' | 'blockedBy'>[]): string[][] {
  const n = nodes.length;
  const indexOf = new Map<string, number>();
  for (let i = 0; i < n; i++) indexOf.set(nodes[i]!.id, i);
  // Adjacency in compressed rows; edges to tasks that do not exist are dropped.
  const start = new Int32Array(n + 1);
  const targets: number[] = [];
  for (let i = 0; i < n; i++) {
    start[i] = targets.length;
    for (const b of nodes[i]!.blockedBy) {
      const j = indexOf.get(b);
      if (j !== undefined) targets.push(j);
    }
  }
  start[n] = targets.length;

  const index = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const onStack = new Uint8Array(n);
  const nextEdge = new Int32Array(n);
  const stack: number[] = [];
  const frames: number[] = [];
  const cycles: string[][] = [];
  let counter = 0;
  for (let root = 0; root < n; root++) {
    if (index[root] !== -1) continue;
    frames.push(root);
    index[root] = low[root] = counter++;
    nextEdge[root] = start[root]!;
    stack.push(root);
    onStack[root] = 1;
    while (frames.length > 0) {
      const v = frames[frames.length - 1]!;
      if (nextEdge[v]! < start[v + 1]!) {
        const w = targets[nextEdge[v]!++]!;
        if (index[w] === -1) {
          index[w] = low[w] = counter++;
          nextEdge[w] = start[w]!;
          stack.push(w);
          onStack[w] = 1;
          frames.push(w);
        } else if (onStack[w]) {
          low[v] = Math.min(low[v]!, index[w]!);
        }
        continue;
      }
      frames.pop();
      const parent = frames[frames.length - 1];
      if (parent !== undefined) low[parent] = Math.min(low[parent]!, low[v]!);
      if (low[v] === index[v]) {
        const component: string[] = [];
        let w: number;
        do {
          w = stack.pop()!;
          onStack[w] = 0;
          component.push(nodes[w]!.id);
        } while (w !== v);
        let selfLoop = false;
        if (component.length === 1)
          for (let e = start[v]!; e < start[v + 1]!; e++) if (targets[e] === v) selfLoop = true;
        if (component.length > 1 || selfLoop) cycles.push(component.sort());
      }
    }
  }
  return cycles.sort((a, b) => (a[0]! < b[0]! ? -1 : 1));
}

/** Cycles and the blocked set of a plan's tasks, from scratch. */
export function analyzeGraph(nodes: readonly GraphNode[]): GraphAnalysis {
  const cycles = findCycles(nodes);
  const cycleOf = new Map<string, string[]>();
  for (const cycle of cycles) for (const id of cycle) cycleOf.set(id, cycle);
  const parents = new Map(nodes.map((n) => [n.id, n.parent]));
  return { blocked: classifyBlocked(nodes, cycleOf, (id) => parents.get(id) ?? null), cycles };
}

/**
 * Why an open task cannot start on its own account (a cycle it is in, a failed blocker, open blockers), or
 * null. Ancestors are not looked at: see `classifyBlocked` for steps under a blocked task. Blockers' ids come
 * out in the order of `blockedBy` (sorted, as snapshots hold them).
 */
export function ownBlock(
  node: Pick<GraphNode, 'id' | 'status' | 'blockedBy'>,
  statusOf: (id: string) => Status | undefined,
  cycleOf: (id: string) => readonly string[] | undefined,
): BlockedInfo | null {
  if (!isOpenStatus(node.status)) return null;
  const cycle = cycleOf(node.id);
  if (cycle) {
    return {
      id: node.id,
      reason: 'cycle',
      // Its own edges inside the cycle, not every other member: listing all members made a k-task cycle
      // cost O(k^2) (1.45 s for ready() on a 5,000-task ring). `cycle` names every member.
      blockedBy: node.blockedBy.filter((b) => b !== node.id && cycleOf(b) === cycle),
      cycle: cycle as string[],
    };
  }
  let failed: string[] | null = null;
  let open: string[] | null = null;
  for (const blocker of node.blockedBy) {
    const status = statusOf(blocker);
    if (status === undefined || satisfiesDependency(status)) continue;
    if (status === 'failed') {
      failed ??= [];
      failed.push(blocker);
    } else {
      open ??= [];
      open.push(blocker);
    }
  }
  if (failed) return { id: node.id, reason: 'blocker_failed', blockedBy: failed };
  if (open) return { id: node.id, reason: 'waiting_on_blockers', blockedBy: open };
  return null;
}

/**
 * The nearest ancestor of `id` that is blocked on its own account (`own`), or null. Closed ancestors are
 * passed through: they are never in `own`. Bounded, so a parent cycle cannot loop.
 */
export function blockingAncestor(
  id: string,
  own: ReadonlyMap<string, BlockedInfo>,
  parentOf: (id: string) => string | null,
  limit: number,
): string | null {
  let current = parentOf(id);
  for (let steps = 0; current !== null && steps <= limit; steps++) {
    if (own.has(current)) return current;
    current = parentOf(current);
  }
  return null;
}

/**
 * Classifies every open task as blocked (with its reason) or not, given the cycle each task is in, in one pass
 * over tasks and edges: first each task's own reason, then an open step under a blocked ancestor inherits it,
 * then a task with open steps waits on them.
 */
export function classifyBlocked(
  nodes: readonly Pick<GraphNode, 'id' | 'status' | 'blockedBy'>[],
  cycleOf: ReadonlyMap<string, string[]>,
  parentOf: (id: string) => string | null,
): Map<string, BlockedInfo> {
  const statusOf = new Map<string, Status>();
  for (const node of nodes) statusOf.set(node.id, node.status);
  const own = new Map<string, BlockedInfo>();
  for (const node of nodes) {
    const info = ownBlock(
      node,
      (id) => statusOf.get(id),
      (id) => cycleOf.get(id),
    );
    if (info) own.set(node.id, info);
  }
  const openSteps = new Map<string, string[]>();
  for (const node of nodes) {
    if (!isOpenStatus(node.status)) continue;
    const parent = parentOf(node.id);
    if (parent === null) continue;
    const list = openSteps.get(parent);
    if (list) list.push(node.id);
    else openSteps.set(parent, [node.id]);
  }
  if (own.size === 0 && openSteps.size === 0) return own;

  // Memoised walk up, so inheritance stays O(tasks) on deep trees.
  const memo = new Map<string, string | null>();
  const ancestorOf = (id: string): string | null => {
    const path: string[] = [];
    let result: string | null = null;
    let current = parentOf(id);
    for (let steps = 0; current !== null && steps <= nodes.length; steps++) {
      const known = memo.get(current);
      if (known !== undefined) {
        result = known;
        break;
      }
      if (own.has(current)) {
        result = current;
        break;
      }
      path.push(current);
      current = parentOf(current);
    }
    for (const p of path) memo.set(p, result);
    return result;
  };
  const blocked = new Map<string, BlockedInfo>();
  for (const node of nodes) {
    if (!isOpenStatus(node.status)) continue;
    const mine = own.get(node.id);
    if (mine) {
      blocked.set(node.id, mine);
      continue;
    }
    const ancestor = own.size > 0 ? ancestorOf(node.id) : null;
    if (ancestor) blocked.set(node.id, inherited(node.id, ancestor));
    else {
      const steps = openSteps.get(node.id);
      if (steps) blocked.set(node.id, waitingOnSteps(node.id, steps));
    }
  }
  return blocked;
}

/**
 * The entry of an open task whose direct steps `openSteps` are open (nothing when there are none): the one rule
 * that a parent is finished through its steps, so it is not ready while any is open.
 */
export function waitingOnSteps(id: string, openSteps: readonly string[]): BlockedInfo {
  return { id, reason: 'waiting_on_steps', blockedBy: [...openSteps].sort() };
}

/** The entry of an open step whose ancestor is blocked. */
export function inherited(id: string, ancestor: string): BlockedInfo {
  return { id, reason: 'parent_blocked', blockedBy: [ancestor] };
}

/** Statuses that can be picked up as work (waiting_* tasks wait on someone else). */
export function isActionable(status: Status): boolean {
  return status === 'pending' || status === 'in_progress';
}

/**
 * Whether `from` (transitively) waits on `to`, following `blockersOf` (undefined for a task that does not
 * exist), i.e. whether adding `to blockedBy from` would close a cycle. Returns the path, for the message.
 */
export function dependencyPath(
  blockersOf: (id: string) => readonly string[] | undefined,
  from: string,
  to: string,
): string[] | null {
  if (from === to) return [from];
  const previous = new Map<string, string | null>([[from, null]]);
  const queue = [from];
  for (let i = 0; i < queue.length; i++) {
    const current = queue[i]!;
    for (const next of blockersOf(current) ?? []) {
      if (previous.has(next) || blockersOf(next) === undefined) continue;
      previous.set(next, current);
      if (next === to) {
        const path = [next];
        for (let p = previous.get(next); p; p = previous.get(p)) path.push(p);
        return path.reverse();
      }
      queue.push(next);
    }
  }
  return null;
}

/** The one definition of ready: actionable, not blocked, and unclaimed or held by `actor`. */
export function isReadyFor(
  task: Pick<GraphNode, 'id' | 'status' | 'assignee'>,
  blocked: ReadonlyMap<string, BlockedInfo>,
  actor: string,
): boolean {
  return (
    isActionable(task.status) && !blocked.has(task.id) && (task.assignee === null || task.assignee === actor)
  );
}

/**
 * Every step under task `id` at any depth (not `id` itself), each after its parent: the one walk down the tree
 * that removal, closing a task's steps, move's cycle check and the blocked index share. `children` gives a task's
 * direct steps in the order shown.
 */
export function descendants(id: string, children: (id: string) => readonly string[]): string[] {
  const out: string[] = [];
  const stack = [...children(id)];
  while (stack.length > 0) {
    const current = stack.pop()!;
    out.push(current);
    for (const child of children(current)) stack.push(child);
  }
  return out;
}
