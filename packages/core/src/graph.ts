// Dependency rules and graph queries: what satisfies a dependency, what is ready, what is blocked and why,
// and cycle detection. Everything here is O(tasks + edges) and deterministic for a given document state.
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
  | 'parent_blocked';

export interface BlockedInfo {
  id: string;
  reason: BlockReason;
  /** The unsatisfied blockers (for `cycle`, the other members of the cycle; for `parent_blocked`, the ancestor). */
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

/** Strongly connected components (iterative Tarjan) of the blockedBy graph, limited to existing tasks. */
export function findCycles(nodes: readonly GraphNode[]): string[][] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  let counter = 0;

  for (const root of nodes) {
    if (index.has(root.id)) continue;
    // Each frame: the node and the position of the next edge to follow.
    const frames: Array<{ id: string; edge: number }> = [{ id: root.id, edge: 0 }];
    index.set(root.id, counter);
    low.set(root.id, counter++);
    stack.push(root.id);
    onStack.add(root.id);
    while (frames.length > 0) {
      const frame = frames[frames.length - 1]!;
      const edges = byId.get(frame.id)!.blockedBy;
      if (frame.edge < edges.length) {
        const next = edges[frame.edge++]!;
        if (!byId.has(next)) continue;
        if (!index.has(next)) {
          index.set(next, counter);
          low.set(next, counter++);
          stack.push(next);
          onStack.add(next);
          frames.push({ id: next, edge: 0 });
        } else if (onStack.has(next)) {
          low.set(frame.id, Math.min(low.get(frame.id)!, index.get(next)!));
        }
        continue;
      }
      frames.pop();
      const parent = frames[frames.length - 1];
      if (parent) low.set(parent.id, Math.min(low.get(parent.id)!, low.get(frame.id)!));
      if (low.get(frame.id) === index.get(frame.id)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.id);
        const selfLoop = component.length === 1 && byId.get(member)!.blockedBy.includes(member);
        if (component.length > 1 || selfLoop) cycles.push(component.sort());
      }
    }
  }
  return cycles.sort((a, b) => (a[0]! < b[0]! ? -1 : 1));
}

/** Classifies every open task as blocked (with its reason) or not, in one pass over tasks and edges. */
export function analyzeGraph(nodes: readonly GraphNode[]): GraphAnalysis {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const cycles = findCycles(nodes);
  const cycleOf = new Map<string, string[]>();
  for (const cycle of cycles) for (const id of cycle) cycleOf.set(id, cycle);

  // Own reasons first: cycle, failed blocker, open blockers.
  const own = new Map<string, BlockedInfo>();
  for (const node of nodes) {
    if (!isOpenStatus(node.status)) continue;
    const cycle = cycleOf.get(node.id);
    if (cycle) {
      own.set(node.id, {
        id: node.id,
        reason: 'cycle',
        blockedBy: cycle.filter((m) => m !== node.id),
        cycle,
      });
      continue;
    }
    const failed: string[] = [];
    const open: string[] = [];
    for (const blocker of node.blockedBy) {
      const b = byId.get(blocker);
      if (!b || satisfiesDependency(b.status)) continue;
      (b.status === 'failed' ? failed : open).push(blocker);
    }
    if (failed.length > 0)
      own.set(node.id, { id: node.id, reason: 'blocker_failed', blockedBy: failed.sort() });
    else if (open.length > 0)
      own.set(node.id, { id: node.id, reason: 'waiting_on_blockers', blockedBy: open.sort() });
  }

  // Then inheritance: an open step under a blocked ancestor is blocked too. Memoised, so O(tasks).
  const blocked = new Map<string, BlockedInfo>();
  const ancestorBlock = new Map<string, string | null>();
  const blockedAncestor = (id: string | null, seen: Set<string>): string | null => {
    if (id === null || seen.has(id)) return null;
    const memo = ancestorBlock.get(id);
    if (memo !== undefined) return memo;
    seen.add(id);
    const node = byId.get(id);
    const result = !node ? null : own.has(id) ? id : blockedAncestor(node.parent, seen);
    ancestorBlock.set(id, result);
    return result;
  };
  for (const node of nodes) {
    if (!isOpenStatus(node.status)) continue;
    const mine = own.get(node.id);
    if (mine) {
      blocked.set(node.id, mine);
      continue;
    }
    const ancestor = blockedAncestor(node.parent, new Set([node.id]));
    if (ancestor) blocked.set(node.id, { id: node.id, reason: 'parent_blocked', blockedBy: [ancestor] });
  }
  return { blocked, cycles };
}

/** Statuses that can be picked up as work (waiting_* tasks wait on someone else). */
export function isActionable(status: Status): boolean {
  return status === 'pending' || status === 'in_progress';
}

/**
 * Whether `blocker` (transitively) depends on `task`, i.e. adding `task blockedBy blocker` would close a cycle.
 * Returns the path from blocker back to task when it would, for the error message.
 */
export function dependencyPath(
  nodes: ReadonlyMap<string, { blockedBy: readonly string[] }>,
  from: string,
  to: string,
): string[] | null {
  if (from === to) return [from];
  const previous = new Map<string, string | null>([[from, null]]);
  const queue = [from];
  for (let i = 0; i < queue.length; i++) {
    const current = queue[i]!;
    for (const next of nodes.get(current)?.blockedBy ?? []) {
      if (previous.has(next) || !nodes.has(next)) continue;
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
