// Write planning: validates a write completely against the plan as it is, without writing, and returns what to
// write (ids, parents, ranks, the dependency lists). The Plan applies a plan in one transaction, so a refused
// call changes nothing. Inputs are already parsed (the Plan parses once at its public entry).
import type * as Y from 'yjs';
import { CairnError } from './errors.js';
import { dependencyPath, descendants } from './graph.js';
import { newTaskId, type Random } from './ids.js';
import { freshRanks, freshRanksAfter, type Ranked, ranksAfterIfValid, ranksAt } from './rank.js';
import {
  isOpenStatus,
  isWaitingStatus,
  type Json,
  type PlanLimits,
  STATUSES,
  type Status,
  type TaskInput,
  type TaskPatch,
  type TaskSnapshot,
  TEXT_LIMITS,
} from './schema.js';

/** What planning reads of a plan. */
export interface PlanningSource {
  /** The raw task map: ids in use (also by values that are not tasks) and its size bound. */
  readonly tasks: Y.Map<unknown>;
  /** Tombstones: a removed task's id is never given again. */
  readonly removed: Y.Map<unknown>;
  readonly random: Random;
  readonly limits: PlanLimits;
  get(id: string): TaskSnapshot | undefined;
  require(id: string): TaskSnapshot;
  has(id: string): boolean;
  notFound(id: string): CairnError;
  /** The ids of a task's steps (or the top-level tasks for null) in the order shown now. */
  childIds(parent: string | null): readonly string[];
}

export class Planner {
  constructor(private readonly src: PlanningSource) {}

  /**
   * Validates an update completely, without writing: what `applyUpdate` then writes cannot be refused. `edges`
   * holds the blockedBy lists that updates planned before this one (in the same write) leave behind.
   */
  planUpdate(id: string, p: TaskPatch, edges: PendingEdges): PlannedUpdate {
    const task = this.src.require(id);
    const status: Status = p.status ?? task.status;
    if (status === 'skipped' && task.parent === null) {
      throw new CairnError(
        'invalid_transition',
        `Task ${id} is not a step, so it cannot be skipped; use cancelled instead. Valid statuses for a top-level task: ${STATUSES.filter((s) => s !== 'skipped').join(', ')}.`,
        { valid: STATUSES.filter((s) => s !== 'skipped') },
      );
    }
    const wakeAt = p.wakeAt !== undefined ? p.wakeAt : isWaitingStatus(status) ? task.wakeAt : null;
    if (wakeAt !== null && !isWaitingStatus(status)) {
      throw new CairnError(
        'invalid_transition',
        `wakeAt applies only to the waiting_user and waiting_external statuses; task ${id} would be ${status}.`,
        { valid: ['waiting_user', 'waiting_external'] },
      );
    }
    if (p.context) checkMergedContext(id, task.context, p.context);
    if (p.supersededBy) this.checkReference(id, p.supersededBy, 'supersededBy');
    for (const blocker of p.removeBlockedBy ?? []) this.src.require(blocker);
    this.checkNewEdges(id, p.addBlockedBy ?? [], new Set(p.removeBlockedBy ?? []), edges);
    const closes = p.status !== undefined && !isOpenStatus(p.status) ? this.openDescendants(id) : [];
    return { id, patch: p, status, wakeAt, closes };
  }

  /**
   * The open steps, at any depth, that closing task `id` closes with it. The one rule for a parent whose steps
   * are open (docs/decisions/022-parent-with-open-steps.md): none is left pending, hidden under a closed task.
   */
  openDescendants(id: string): string[] {
    return descendants(id, (x) => this.src.childIds(x)).filter((step) => {
      const task = this.src.get(step);
      return task !== undefined && isOpenStatus(task.status);
    });
  }

  checkReference(id: string, other: string, field: string): void {
    if (other === id) {
      throw new CairnError('invalid_argument', `Task ${id} cannot name itself in ${field}.`, { field });
    }
    this.src.require(other);
  }

  /**
   * Refuses self-dependencies, unknown blockers and edges that would close a cycle, then records in `pending` the
   * blockedBy list task `id` is left with. `pending` holds the lists of tasks updated earlier in the same write,
   * so an edge that closes a cycle with another update's new edge is refused too.
   */
  checkNewEdges(
    id: string,
    blockers: readonly string[],
    dropping: ReadonlySet<string>,
    pending: PendingEdges,
  ): void {
    if (blockers.length === 0 && dropping.size === 0) return;
    const own = (pending.get(id) ?? this.src.require(id).blockedBy).filter((b) => !dropping.has(b));
    const edges = (task: string) =>
      task === id ? own : (pending.get(task) ?? this.src.get(task)?.blockedBy);
    for (const blocker of blockers) {
      if (blocker === id) {
        throw new CairnError('cycle', `Task ${id} cannot depend on itself.`, { task: id });
      }
      this.src.require(blocker);
      const path = dependencyPath(edges, blocker, id);
      if (path) {
        throw new CairnError(
          'cycle',
          `Task ${id} cannot wait on ${blocker}: ${path.join(' waits on ')}, so that would be a cycle.`,
          { task: id, blocker, path },
        );
      }
      if (!own.includes(blocker)) own.push(blocker);
    }
    pending.set(id, own);
  }

  insertIndex(
    siblings: readonly string[],
    after: string | null | undefined,
    before: string | null | undefined,
    parent: string | null,
  ): number {
    const position = (ref: string, which: string): number => {
      const index = siblings.indexOf(ref);
      if (index === -1) {
        throw new CairnError(
          'invalid_argument',
          `${which} must name a sibling under ${parent ?? 'the top level'}; "${ref}" is not one. Siblings: ${siblings.join(', ') || 'none'}.`,
          { valid: siblings.slice(0, 50) },
        );
      }
      return index;
    };
    if (after !== undefined && before !== undefined) {
      throw new CairnError('invalid_argument', 'Give either after or before, not both.');
    }
    if (typeof after === 'string') return position(after, 'after') + 1;
    if (typeof before === 'string') return position(before, 'before');
    if (after === null) return 0;
    return siblings.length;
  }

  /** Refuses a write that would add more than a call may, or grow the plan past what a plan may hold. */
  checkLimits(adding: number, removing: number): void {
    const { tasksPerCall, tasksPerPlan } = this.src.limits;
    if (adding > tasksPerCall) {
      throw new CairnError(
        'limit',
        `One call adds at most ${tasksPerCall} tasks (steps count as tasks); this one adds more. Split it into several calls.`,
        { limit: tasksPerCall },
      );
    }
    // Y.Map#size walks every key; the raw key count (removed keys included) bounds it in O(1), so the exact
    // count is taken only near the limit.
    if (this.src.tasks._map.size - removing + adding <= tasksPerPlan) return;
    const held = this.src.tasks.size - removing;
    if (held + adding > tasksPerPlan) {
      throw new CairnError(
        'limit',
        `A plan holds at most ${tasksPerPlan} tasks (steps count as tasks); it has ${held}, so at most ${Math.max(0, tasksPerPlan - held)} more fit. Remove finished tasks, or start another plan.`,
        { limit: tasksPerPlan },
      );
    }
  }

  /** Plans appending `inputs` as steps of task `parent`; `taken` holds the ids planned by the same write. */
  planSteps(parent: string, inputs: readonly TaskInput[], taken: Set<string>): PlannedAdds {
    return this.planAdds(
      inputs.map((input) => ({ ...input, parent })),
      new Set(),
      taken,
    );
  }

  /** `taken`: ids planned but not written yet by the same write (several plans applied together). */
  planAdds(
    inputs: readonly TaskInput[],
    doomed: ReadonlySet<string>,
    taken = new Set<string>(),
  ): PlannedAdds {
    const planned: PlannedAdd[] = [];
    const keys = new Map<string, string>();
    const isTaken = (id: string) => taken.has(id) || this.src.tasks.has(id) || this.src.removed.has(id);
    const live = (id: string, field: string): string => {
      if (doomed.has(id) || !this.src.has(id)) {
        if (doomed.has(id)) {
          throw new CairnError('invalid_argument', `${field} "${id}" names a task this call replaces.`, {
            field,
          });
        }
        throw this.src.notFound(id);
      }
      return id;
    };
    const visit = (input: TaskInput, parent: string | null, topLevel: boolean) => {
      const id = newTaskId(isTaken, this.src.random);
      taken.add(id);
      this.checkLimits(taken.size, doomed.size);
      if (input.key !== undefined) {
        if (keys.has(input.key)) {
          throw new CairnError('invalid_argument', `The key "${input.key}" is used twice in one call.`);
        }
        keys.set(input.key, id);
      }
      const status = input.status ?? 'pending';
      if (status === 'skipped' && parent === null) {
        throw new CairnError(
          'invalid_transition',
          `Only a step can be skipped; "${input.title}" is not a step.`,
          {
            valid: STATUSES.filter((s) => s !== 'skipped'),
          },
        );
      }
      if (input.wakeAt && !isWaitingStatus(status)) {
        throw new CairnError(
          'invalid_transition',
          `wakeAt applies only to the waiting_user and waiting_external statuses; "${input.title}" would be ${status}.`,
          { valid: ['waiting_user', 'waiting_external'] },
        );
      }
      if (input.supersededBy) live(input.supersededBy, 'supersededBy');
      planned.push({ id, input, parent, status, topLevel, blockedBy: [] });
      const entry = planned[planned.length - 1]!;
      for (const step of input.steps ?? []) visit(step, id, false);
      return entry;
    };
    for (const input of inputs) {
      const parent = input.parent ?? null;
      if (parent !== null) live(parent, 'parent');
      visit(input, parent, true);
    }
    // Dependencies are resolved once every key is known, so tasks of one call can wait on each other.
    const plannedById = new Map(planned.map((entry) => [entry.id, entry]));
    const edges = (id: string) =>
      plannedById.get(id)?.blockedBy ?? (doomed.has(id) ? undefined : this.src.get(id)?.blockedBy);
    for (const entry of planned) {
      for (const ref of entry.input.blockedBy ?? []) {
        const blocker = keys.get(ref) ?? live(ref, 'blockedBy');
        if (blocker === entry.id) {
          throw new CairnError('cycle', `"${entry.input.title}" cannot depend on itself.`);
        }
        const path = dependencyPath(edges, blocker, entry.id);
        if (path) {
          throw new CairnError(
            'cycle',
            `"${entry.input.title}" cannot wait on ${ref}: that would be a cycle.`,
            {
              path,
            },
          );
        }
        if (!entry.blockedBy.includes(blocker)) entry.blockedBy.push(blocker);
      }
    }
    return { entries: planned, ranks: this.planRanks(planned, doomed) };
  }

  /**
   * Ranks for new tasks, decided before anything is written: each goes last among its siblings, or right
   * after the sibling its `after` names (first for `null`). Existing siblings are re-ranked only when their
   * ranks tie, and then they appear in the result too.
   */
  planRanks(planned: PlannedAdd[], doomed: ReadonlySet<string>): Map<string, string> {
    const ranks = new Map<string, string>();
    for (const [parent, group] of groupBy(planned, (entry) => entry.parent)) {
      const isNewParent = parent !== null && !this.src.has(parent);
      const siblings = isNewParent ? [] : this.src.childIds(parent);
      const existingIds = doomed.size === 0 ? siblings : siblings.filter((id) => !doomed.has(id));
      if (group.every((entry) => entry.input.after === undefined)) {
        // The common case (appending) needs only the last valid rank, not the whole sibling list.
        let fresh: string[] | null = null;
        for (let i = existingIds.length - 1; i >= 0 && fresh === null; i--) {
          fresh = ranksAfterIfValid(this.src.get(existingIds[i]!)!.rank, group.length);
        }
        (fresh ?? freshRanksAfter(null, group.length)).forEach((rank, i) => {
          ranks.set(group[i]!.id, rank);
        });
        continue;
      }
      const list: Ranked[] = existingIds.map((id) => ({ id, rank: this.src.get(id)!.rank }));
      for (const entry of group) {
        const after = entry.input.after;
        const index =
          after === undefined
            ? list.length
            : this.insertIndex(
                list.map((r) => r.id),
                after,
                undefined,
                parent,
              );
        const rank = ranksAt(list, index)?.[0];
        const item = { id: entry.id, rank: rank ?? '' };
        list.splice(index, 0, item);
        if (rank === undefined) {
          freshRanks(list.length).forEach((fresh, i) => {
            list[i]!.rank = fresh;
          });
          for (const r of list) ranks.set(r.id, r.rank);
        } else {
          ranks.set(entry.id, rank);
        }
      }
    }
    return ranks;
  }
}

/** An update validated by planUpdate: the parsed patch and the status and wakeAt the task ends with. */
export interface PlannedUpdate {
  id: string;
  patch: TaskPatch;
  status: Status;
  wakeAt: string | null;
  /** Open steps (at any depth) this update closes as `skipped`, because it closes their task. */
  closes: string[];
}

/** The blockedBy lists that the updates planned so far in one write leave their tasks with. */
export type PendingEdges = Map<string, string[]>;

export interface PlannedAdds {
  entries: PlannedAdd[];
  /** Ranks to write: every new task's, and existing siblings' when a tie forced re-ranking. */
  ranks: Map<string, string>;
}

export interface PlannedAdd {
  id: string;
  input: TaskInput;
  parent: string | null;
  status: Status;
  topLevel: boolean;
  blockedBy: string[];
}

/**
 * The steps a call of updates closes along with their tasks: the open steps each closing update found, and the
 * steps the same call adds anywhere under a task it closes; not those the call gives a status of their own.
 */
export function closedWith(
  planned: ReadonlyArray<{ fields: PlannedUpdate | null; steps: PlannedAdds | null }>,
): string[] {
  const closing = new Set<string>();
  for (const { fields } of planned) {
    if (!fields || isOpenStatus(fields.status) || fields.patch.status === undefined) continue;
    closing.add(fields.id);
    for (const id of fields.closes) closing.add(id);
  }
  if (closing.size === 0) return [];
  for (const { steps } of planned) {
    for (const entry of steps?.entries ?? []) {
      if (entry.parent !== null && closing.has(entry.parent)) closing.add(entry.id);
    }
  }
  // A status the call gives a task explicitly stands (closing tasks themselves are not open anyway).
  for (const { fields } of planned) if (fields?.patch.status !== undefined) closing.delete(fields.id);
  return [...closing];
}

function groupBy<T, K>(items: Iterable<T>, keyOf: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

/** Refuses an update whose context, merged into the task's, would pass `TEXT_LIMITS.context` as JSON. */
function checkMergedContext(id: string, before: Record<string, Json>, patch: Record<string, Json>): void {
  const merged: Record<string, Json> = { ...before };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  const length = JSON.stringify(merged).length;
  if (length > TEXT_LIMITS.context) {
    throw new CairnError(
      'limit',
      `Task ${id}'s context would be ${length} characters as JSON; a context is at most ${TEXT_LIMITS.context}. ` +
        'Remove keys (a null value deletes one) or keep less in each.',
      { field: 'context', length, max: TEXT_LIMITS.context },
    );
  }
}
