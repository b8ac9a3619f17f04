// The Plan: tasks, their steps and dependencies over one Y.Doc. Every write is one Yjs transaction whose origin
// is the actor; every write is validated completely before the first change, so a refused call changes nothing.
import * as Y from 'yjs';
import {
  blockedBySet,
  mergeContext,
  metaMap,
  removedMap,
  snapshotTask,
  type TaskMap,
  tasksMap,
  writeField,
  writeText,
} from './doc.js';
import { CairnError } from './errors.js';
import { analyzeGraph, type BlockedInfo, dependencyPath, type GraphAnalysis, isActionable } from './graph.js';
import { cryptoRandom, newTaskId, type Random } from './ids.js';
import { compareRanked, freshRanks, ranksAt } from './rank.js';
import {
  type Actor,
  ActorSchema,
  F,
  isOpenStatus,
  isWaitingStatus,
  type ListFilter,
  ListFilterSchema,
  MoveSchema,
  type MoveTarget,
  SCHEMA_VERSION,
  STATUSES,
  type Status,
  type TaskInput,
  TaskInputSchema,
  type TaskPatch,
  TaskPatchSchema,
  type TaskSnapshot,
} from './schema.js';
import { parseOrThrow } from './validate.js';

export interface CreatePlanOptions {
  /** The document to work on; a new one by default. Several Plans (one per actor) may share one doc. */
  doc?: Y.Doc;
  /** Who this Plan's writes are attributed to. Default `agent:local`. */
  actor?: Actor;
  /** Clock in ms since the epoch, for createdAt/updatedAt. Default `Date.now`. */
  now?: () => number;
  /** Source of randomness for ids, in [0, 1). Default: crypto. Seed it for reproducible tests. */
  random?: Random;
}

export interface TaskChange {
  id: string;
  kind: 'added' | 'updated' | 'removed';
  /** Who made the change: the transaction's actor, or for a remote change the actor recorded in the task. */
  actor: string;
  /** The task fields that changed, without updatedAt/updatedBy (empty for added/removed). */
  fields: string[];
}

export interface PlanChangeEvent {
  /** True when the change was made through this document (not received from a peer or a store). */
  local: boolean;
  changes: TaskChange[];
}

export interface BlockedTask extends BlockedInfo {
  task: TaskSnapshot;
}

export interface PlanSnapshot {
  schemaVersion: number;
  /** Every task in tree order: siblings by rank (then id), each task followed by its steps. */
  tasks: TaskSnapshot[];
}

/** Fields every write stamps; change events leave them out of `fields`. */
const BOOKKEEPING = new Set<string>([F.updatedAt, F.updatedBy]);

/** Undo managers by Plan, so changes they replay are attributed to the Plan's actor. */
const undoActors = new WeakMap<Y.UndoManager, Actor>();

export function createPlan(options: CreatePlanOptions = {}): Plan {
  return new Plan(options);
}

export class Plan {
  readonly doc: Y.Doc;
  readonly actor: Actor;
  private readonly tasks: Y.Map<TaskMap>;
  private readonly removed: Y.Map<{ by: string; at: number; num?: number }>;
  private readonly now: () => number;
  private readonly random: Random;
  private readonly undoManager: Y.UndoManager;
  private readonly listeners = new Set<(event: PlanChangeEvent) => void>();
  private readonly snapshots = new Map<string, TaskSnapshot>();
  private ordered: TaskSnapshot[] | null = null;
  private analysis: GraphAnalysis | null = null;
  private maxNum: number | null = null;
  private readonly observer: (events: Array<Y.YEvent<Y.AbstractType<unknown>>>, txn: Y.Transaction) => void;

  constructor(options: CreatePlanOptions = {}) {
    this.doc = options.doc ?? new Y.Doc();
    this.actor = parseOrThrow(ActorSchema, options.actor ?? 'agent:local', 'actor');
    this.now = options.now ?? Date.now;
    this.random = options.random ?? cryptoRandom;
    this.tasks = tasksMap(this.doc);
    this.removed = removedMap(this.doc);
    this.undoManager = new Y.UndoManager([this.tasks, this.removed], {
      trackedOrigins: new Set([this.actor]),
      captureTimeout: 0,
    });
    undoActors.set(this.undoManager, this.actor);
    this.observer = (events, txn) => this.onDocChange(events, txn);
    this.tasks.observeDeep(this.observer);
  }

  /** A Plan on the same document whose writes are attributed to another actor (with its own undo history). */
  withActor(actor: Actor): Plan {
    return new Plan({ doc: this.doc, actor, now: this.now, random: this.random });
  }

  /** Stops observing the document. The doc itself is left alone. */
  destroy(): void {
    this.tasks.unobserveDeep(this.observer);
    this.undoManager.destroy();
    this.listeners.clear();
  }

  // ---------------------------------------------------------------- reads

  has(id: string): boolean {
    return this.tasks.has(id);
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

  /** Like `get`, but an unknown id throws a `not_found` error that lists the known ids. */
  require(id: string): TaskSnapshot {
    const task = this.get(id);
    if (!task) throw this.notFound(id);
    return task;
  }

  /** The task whose integer alias is `num`; when a merge left two with one alias, the earlier created wins. */
  byNum(num: number): TaskSnapshot | undefined {
    let best: TaskSnapshot | undefined;
    for (const task of this.all()) {
      if (task.num !== num) continue;
      if (
        !best ||
        task.createdAt < best.createdAt ||
        (task.createdAt === best.createdAt && task.id < best.id)
      ) {
        best = task;
      }
    }
    return best;
  }

  /** Tasks in tree order, filtered. With no filter: every task. */
  list(filter: ListFilter = {}): TaskSnapshot[] {
    const f = parseOrThrow(ListFilterSchema, filter, 'list filter');
    const statuses = f.status === undefined ? null : new Set(Array.isArray(f.status) ? f.status : [f.status]);
    return this.all().filter((task) => {
      if (f.state === 'open' && !isOpenStatus(task.status)) return false;
      if (f.state === 'closed' && isOpenStatus(task.status)) return false;
      if (statuses && !statuses.has(task.status)) return false;
      if (f.parent !== undefined && this.effectiveParent(task) !== f.parent) return false;
      if (f.assignee !== undefined && task.assignee !== f.assignee) return false;
      return true;
    });
  }

  /** The direct steps of a task (or the top-level tasks for `null`), in order. */
  children(parent: string | null): TaskSnapshot[] {
    return this.list({ parent });
  }

  /**
   * The parent a task is shown under: its stored parent, unless that task is gone (a step added concurrently
   * with its parent's removal) or the parents form a cycle (concurrent moves); then it shows at the top level.
   */
  effectiveParent(task: TaskSnapshot): string | null {
    this.all();
    return this.parents.get(task.id) ?? null;
  }

  /** Open tasks that can be picked up now by `actor` (default this Plan's): unblocked, unclaimed or theirs. */
  ready(options: { actor?: Actor } = {}): TaskSnapshot[] {
    const actor = options.actor ?? this.actor;
    const { blocked } = this.graph();
    return this.all().filter(
      (task) =>
        isActionable(task.status) &&
        !blocked.has(task.id) &&
        (task.assignee === null || task.assignee === actor),
    );
  }

  /** Open tasks that cannot start, each with its reason and the tasks it waits on. */
  blocked(): BlockedTask[] {
    const { blocked } = this.graph();
    const out: BlockedTask[] = [];
    for (const task of this.all()) {
      const info = blocked.get(task.id);
      if (info) out.push({ ...info, task });
    }
    return out;
  }

  /** Dependency cycles present in the document (each sorted; only a merge can create one). */
  cycles(): string[][] {
    return this.graph().cycles;
  }

  toJSON(): PlanSnapshot {
    return { schemaVersion: SCHEMA_VERSION, tasks: this.all().map((t) => ({ ...t })) };
  }

  // ---------------------------------------------------------------- writes

  /** Adds one task (with its steps). */
  add(input: TaskInput): TaskSnapshot {
    return this.addMany([input])[0]!;
  }

  /** Adds several tasks (with their steps) in one transaction. `key`s let them depend on each other. */
  addMany(inputs: TaskInput[]): TaskSnapshot[] {
    const parsed = parseOrThrow(TaskInputSchema.array().max(1000), inputs, 'tasks to add');
    const planned = this.planAdds(parsed, new Set());
    this.write(() => this.applyAdds(planned));
    return planned.filter((p) => p.topLevel).map((p) => this.require(p.id));
  }

  /** Removes every task and adds `inputs` in their place, in one transaction. */
  replace(inputs: TaskInput[]): TaskSnapshot[] {
    const parsed = parseOrThrow(TaskInputSchema.array().max(1000), inputs, 'replacement tasks');
    const doomed = new Set(this.tasks.keys());
    const planned = this.planAdds(parsed, doomed);
    this.write(() => {
      this.applyRemoves([...doomed]);
      this.applyAdds(planned);
    });
    return planned.filter((p) => p.topLevel).map((p) => this.require(p.id));
  }

  /** Changes some fields of a task; fields not given are left alone. */
  update(id: string, patch: TaskPatch): TaskSnapshot {
    const p = parseOrThrow(TaskPatchSchema, patch, `update of task ${id}`);
    const task = this.require(id);
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
    if (p.supersededBy) this.checkReference(id, p.supersededBy, 'supersededBy');
    for (const blocker of p.removeBlockedBy ?? []) this.require(blocker);
    const addBlockers = p.addBlockedBy ?? [];
    this.checkNewEdges(id, addBlockers, new Set(p.removeBlockedBy ?? []));

    this.write(() => {
      const map = this.tasks.get(id)!;
      let changed = false;
      if (p.title !== undefined) changed = writeText(map, F.title, p.title) || changed;
      if (p.note !== undefined) changed = writeText(map, F.note, p.note) || changed;
      changed = writeField(map, F.status, status) || changed;
      changed = writeField(map, F.wakeAt, wakeAt) || changed;
      for (const field of ['activeForm', 'nextStep', 'supersededBy', 'assignee'] as const) {
        if (p[field] !== undefined) changed = writeField(map, F[field], p[field]) || changed;
      }
      if (p.context) changed = mergeContext(map, p.context) || changed;
      if (p.removeBlockedBy?.length || addBlockers.length) {
        const set = blockedBySet(map);
        for (const blocker of p.removeBlockedBy ?? []) {
          if (set.has(blocker)) {
            set.delete(blocker);
            changed = true;
          }
        }
        for (const blocker of addBlockers) {
          if (!set.has(blocker)) {
            set.set(blocker, true);
            changed = true;
          }
        }
      }
      if (changed) this.stamp(map);
      this.invalidate(id);
    });
    return this.require(id);
  }

  /**
   * Removes a task and all its steps. Other tasks' dependencies on them are dropped (a removed blocker no
   * longer blocks). Returns the removed ids. A tombstone records who removed each task.
   */
  remove(id: string): string[] {
    this.require(id);
    const doomed = this.descendants(id);
    this.write(() => this.applyRemoves(doomed));
    return doomed;
  }

  /** Moves a task to another parent and/or position among its siblings. */
  move(id: string, target: MoveTarget): TaskSnapshot {
    const t = parseOrThrow(MoveSchema, target, `move of task ${id}`);
    const task = this.require(id);
    const parent = t.parent !== undefined ? t.parent : this.effectiveParent(task);
    if (parent !== null) {
      this.require(parent);
      if (this.descendants(id).includes(parent)) {
        throw new CairnError(
          'cycle',
          `Task ${id} cannot move under ${parent}: ${parent} is ${id === parent ? 'the task itself' : 'one of its own steps'}.`,
          { task: id, parent },
        );
      }
    }
    const siblings = this.children(parent).filter((s) => s.id !== id);
    const index = this.insertIndex(siblings, t.after, t.before, parent);
    this.write(() => {
      const map = this.tasks.get(id)!;
      writeField(map, F.parent, parent);
      this.placeAt(map, siblings, index);
      this.stamp(map);
      this.invalidate(id);
    });
    return this.require(id);
  }

  /**
   * Runs several writes as one transaction (one change event, one undo step). Each write still validates
   * before it changes anything, but a write that throws does not undo the ones before it in the batch.
   */
  batch<T>(fn: (plan: Plan) => T): T {
    let result!: T;
    this.write(() => {
      result = fn(this);
    });
    return result;
  }

  // ---------------------------------------------------------------- undo

  /** Undoes this actor's last write (others' writes are never undone). Returns false when there is none. */
  undo(): boolean {
    return this.undoManager.undo() !== null;
  }

  redo(): boolean {
    return this.undoManager.redo() !== null;
  }

  canUndo(): boolean {
    return this.undoManager.canUndo();
  }

  canRedo(): boolean {
    return this.undoManager.canRedo();
  }

  // ---------------------------------------------------------------- events

  /** Calls `listener` after every transaction that changed tasks, local or remote. Returns an unsubscribe. */
  onChange(listener: (event: PlanChangeEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // ---------------------------------------------------------------- internals

  private parents = new Map<string, string | null>();

  /** Every task in tree order; cached until the next change. */
  private all(): TaskSnapshot[] {
    if (this.ordered) return this.ordered;
    const snapshots: TaskSnapshot[] = [];
    for (const id of this.tasks.keys()) {
      const snapshot = this.get(id);
      if (snapshot) snapshots.push(snapshot);
    }
    this.parents = resolveParents(snapshots);
    const childrenOf = groupBy(snapshots, (task) => this.parents.get(task.id) ?? null);
    for (const list of childrenOf.values()) list.sort(compareRanked);
    const ordered: TaskSnapshot[] = [];
    const stack = [...(childrenOf.get(null) ?? [])].reverse();
    while (stack.length > 0) {
      const task = stack.pop()!;
      ordered.push(task);
      const kids = childrenOf.get(task.id);
      if (kids) for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]!);
    }
    this.ordered = ordered;
    return ordered;
  }

  private graph(): GraphAnalysis {
    if (!this.analysis) {
      const nodes = this.all().map((t) => ({ ...t, parent: this.parents.get(t.id) ?? null }));
      this.analysis = analyzeGraph(nodes);
    }
    return this.analysis;
  }

  private invalidate(id: string): void {
    this.snapshots.delete(id);
    this.ordered = null;
    this.analysis = null;
  }

  private write(fn: () => void): void {
    this.doc.transact(() => {
      const meta = metaMap(this.doc);
      if (meta.get('schemaVersion') === undefined) meta.set('schemaVersion', SCHEMA_VERSION);
      fn();
    }, this.actor);
  }

  private stamp(map: TaskMap): void {
    map.set(F.updatedBy, this.actor);
    map.set(F.updatedAt, this.now());
  }

  private notFound(id: string): CairnError {
    const known = [...this.tasks.keys()].sort();
    const shown = known.slice(0, 50);
    const list = shown.length === 0 ? 'the plan has no tasks' : `known ids: ${shown.join(', ')}`;
    return new CairnError(
      'not_found',
      `No task with id "${id}"; ${list}${known.length > 50 ? ', ...' : ''}.`,
      {
        id,
        known: shown,
      },
    );
  }

  private checkReference(id: string, other: string, field: string): void {
    if (other === id) {
      throw new CairnError('invalid_argument', `Task ${id} cannot name itself in ${field}.`, { field });
    }
    this.require(other);
  }

  /** Refuses self-dependencies, unknown blockers and edges that would close a cycle with existing edges. */
  private checkNewEdges(id: string, blockers: readonly string[], dropping: ReadonlySet<string>): void {
    if (blockers.length === 0) return;
    const edges = new Map<string, { blockedBy: string[] }>();
    for (const task of this.all()) {
      const own = task.id === id ? task.blockedBy.filter((b) => !dropping.has(b)) : [...task.blockedBy];
      edges.set(task.id, { blockedBy: own });
    }
    for (const blocker of blockers) {
      if (blocker === id) {
        throw new CairnError('cycle', `Task ${id} cannot depend on itself.`, { task: id });
      }
      this.require(blocker);
      const path = dependencyPath(edges, blocker, id);
      if (path) {
        throw new CairnError(
          'cycle',
          `Task ${id} cannot wait on ${blocker}: ${path.join(' waits on ')}, so that would be a cycle.`,
          { task: id, blocker, path },
        );
      }
      edges.get(id)!.blockedBy.push(blocker);
    }
  }

  private descendants(id: string): string[] {
    const out: string[] = [];
    const stack = [id];
    while (stack.length > 0) {
      const current = stack.pop()!;
      out.push(current);
      for (const child of this.children(current)) stack.push(child.id);
    }
    return out;
  }

  private insertIndex(
    siblings: TaskSnapshot[],
    after: string | null | undefined,
    before: string | null | undefined,
    parent: string | null,
  ): number {
    const position = (ref: string, which: string): number => {
      const index = siblings.findIndex((s) => s.id === ref);
      if (index === -1) {
        throw new CairnError(
          'invalid_argument',
          `${which} must name a sibling under ${parent ?? 'the top level'}; "${ref}" is not one. Siblings: ${siblings.map((s) => s.id).join(', ') || 'none'}.`,
          { valid: siblings.map((s) => s.id) },
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

  /** Writes a rank placing `map` before siblings[index]; re-ranks the siblings when neighbours tie. */
  private placeAt(map: TaskMap, siblings: TaskSnapshot[], index: number): void {
    const rank = ranksAt(siblings, index)?.[0];
    if (rank !== undefined) {
      map.set(F.rank, rank);
      return;
    }
    const keys = freshRanks(siblings.length + 1);
    const order = [
      ...siblings.slice(0, index).map((s) => s.id),
      null,
      ...siblings.slice(index).map((s) => s.id),
    ];
    for (const [i, sid] of order.entries()) {
      const target = sid === null ? map : this.tasks.get(sid)!;
      target.set(F.rank, keys[i]!);
      if (sid !== null) this.invalidate(sid);
    }
  }

  private nextNum(): number {
    if (this.maxNum === null) {
      let max = 0;
      for (const task of this.all()) max = Math.max(max, task.num);
      for (const tomb of this.removed.values()) max = Math.max(max, tomb.num ?? 0);
      this.maxNum = max;
    }
    return ++this.maxNum;
  }

  private planAdds(inputs: TaskInput[], doomed: ReadonlySet<string>): PlannedAdd[] {
    const planned: PlannedAdd[] = [];
    const keys = new Map<string, string>();
    const taken = new Set<string>();
    const isTaken = (id: string) => taken.has(id) || this.tasks.has(id) || this.removed.has(id);
    const live = (id: string, field: string): string => {
      if (doomed.has(id) || !this.tasks.has(id)) {
        if (doomed.has(id)) {
          throw new CairnError('invalid_argument', `${field} "${id}" names a task this call replaces.`, {
            field,
          });
        }
        throw this.notFound(id);
      }
      return id;
    };
    const visit = (input: TaskInput, parent: string | null, topLevel: boolean) => {
      const id = newTaskId(isTaken, this.random);
      taken.add(id);
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
    const edges = new Map<string, { blockedBy: string[] }>();
    for (const task of this.all())
      if (!doomed.has(task.id)) edges.set(task.id, { blockedBy: [...task.blockedBy] });
    for (const entry of planned) edges.set(entry.id, { blockedBy: entry.blockedBy });
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
    return planned;
  }

  private applyAdds(planned: PlannedAdd[]): void {
    const now = this.now();
    // Ranks per parent: new tasks go last (or where `after` says), in the order given.
    const groups = groupBy(planned, (entry) => entry.parent);
    const maps = new Map<string, TaskMap>();
    for (const entry of planned) {
      const map = new Y.Map<unknown>();
      this.tasks.set(entry.id, map);
      maps.set(entry.id, map);
      const { input } = entry;
      map.set(F.id, entry.id);
      map.set(F.num, this.nextNum());
      writeText(map, F.title, input.title);
      map.set(F.status, entry.status);
      if (entry.parent !== null) map.set(F.parent, entry.parent);
      for (const field of ['activeForm', 'nextStep', 'wakeAt', 'supersededBy', 'assignee'] as const) {
        const value = input[field];
        if (value !== undefined && value !== null) map.set(F[field], value);
      }
      if (input.note) writeText(map, F.note, input.note);
      if (input.context) mergeContext(map, input.context);
      if (entry.blockedBy.length > 0) {
        const set = blockedBySet(map);
        for (const blocker of entry.blockedBy) set.set(blocker, true);
      }
      map.set(F.createdBy, this.actor);
      map.set(F.createdAt, now);
      this.stamp(map);
      this.invalidate(entry.id);
    }
    for (const [parent, group] of groups) {
      const existing = this.children(parent).filter((s) => !maps.has(s.id));
      // Common case: the whole group goes in a row at the end (or at one `after`), one rank computation.
      if (group.length === 1 || group.every((entry) => entry.input.after === undefined)) {
        const after = group[0]!.input.after;
        const index =
          after === undefined ? existing.length : this.insertIndex(existing, after, undefined, parent);
        const ranks = ranksAt(existing, index, group.length);
        if (ranks) {
          group.forEach((entry, i) => {
            maps.get(entry.id)!.set(F.rank, ranks[i]!);
          });
          continue;
        }
      }
      // Rare: several explicit positions, or tied neighbours: place one by one.
      const placed = new Set<string>();
      for (const entry of group) {
        const siblings = this.children(parent).filter((s) => !maps.has(s.id) || placed.has(s.id));
        const after = entry.input.after;
        const index =
          after === undefined ? siblings.length : this.insertIndex(siblings, after, undefined, parent);
        this.placeAt(maps.get(entry.id)!, siblings, index);
        placed.add(entry.id);
        this.invalidate(entry.id);
      }
    }
  }

  private applyRemoves(ids: string[]): void {
    const doomed = new Set(ids);
    const at = this.now();
    for (const id of ids) {
      const map = this.tasks.get(id);
      const num = map?.get(F.num);
      this.removed.set(id, { by: this.actor, at, ...(typeof num === 'number' ? { num } : {}) });
      this.tasks.delete(id);
      this.invalidate(id);
    }
    for (const [id, map] of this.tasks) {
      if (doomed.has(id)) continue;
      const set = map.get(F.blockedBy);
      if (!(set instanceof Y.Map)) continue;
      let touched = false;
      for (const blocker of [...set.keys()]) {
        if (doomed.has(blocker)) {
          set.delete(blocker);
          touched = true;
        }
      }
      if (touched) {
        this.stamp(map);
        this.invalidate(id);
      }
    }
  }

  private onDocChange(events: Array<Y.YEvent<Y.AbstractType<unknown>>>, txn: Y.Transaction): void {
    const changes = new Map<string, { kind: TaskChange['kind']; fields: Set<string> }>();
    const note = (id: string, kind: TaskChange['kind'], field?: string) => {
      const change = changes.get(id);
      if (!change) changes.set(id, { kind, fields: new Set(field ? [field] : []) });
      else {
        if (kind !== 'updated') change.kind = kind;
        if (field) change.fields.add(field);
      }
    };
    for (const event of events) {
      if (event.target === this.tasks) {
        for (const [id, change] of event.changes.keys) {
          note(id, change.action === 'add' ? 'added' : change.action === 'delete' ? 'removed' : 'updated');
        }
        continue;
      }
      const id = String(event.path[0]);
      if (event.path.length >= 2) note(id, 'updated', String(event.path[1]));
      else for (const key of event.changes.keys.keys()) note(id, 'updated', key);
    }
    for (const id of changes.keys()) this.invalidate(id);
    if (changes.size === 0) return;
    if (!txn.local) this.maxNum = null;

    const origin = txn.origin;
    const localActor =
      typeof origin === 'string'
        ? origin
        : origin instanceof Y.UndoManager
          ? (undoActors.get(origin) ?? null)
          : null;
    const list: TaskChange[] = [];
    for (const [id, { kind, fields }] of changes) {
      const recorded =
        kind === 'removed'
          ? this.removed.get(id)?.by
          : (this.tasks.get(id)?.get(F.updatedBy) as string | undefined);
      list.push({
        id,
        kind,
        actor: (txn.local ? localActor : null) ?? recorded ?? 'unknown',
        fields: kind === 'updated' ? [...fields].filter((f) => !BOOKKEEPING.has(f)).sort() : [],
      });
    }
    if (!txn.local) this.repairDuplicateNums(list);
    const event: PlanChangeEvent = { local: txn.local, changes: list };
    for (const listener of this.listeners) listener(event);
  }

  /**
   * Integer aliases are assigned as max + 1, so two replicas creating tasks concurrently can pick the same one.
   * After a merge the earlier-created task keeps the alias; the creator of the later one (and only it, so two
   * replicas never race to repair) gives its task a fresh alias.
   */
  private repairDuplicateNums(changes: TaskChange[]): void {
    if (!changes.some((c) => c.kind === 'added')) return;
    const byNum = groupBy(this.all(), (task) => task.num);
    const losers: string[] = [];
    for (const group of byNum.values()) {
      if (group.length < 2) continue;
      group.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
      for (const task of group.slice(1)) if (task.createdBy === this.actor) losers.push(task.id);
    }
    if (losers.length === 0) return;
    this.doc.transact(() => {
      for (const id of losers) {
        this.tasks.get(id)!.set(F.num, this.nextNum());
        this.invalidate(id);
      }
    }, this.actor);
  }
}

interface PlannedAdd {
  id: string;
  input: TaskInput;
  parent: string | null;
  status: Status;
  topLevel: boolean;
  blockedBy: string[];
}

/**
 * Effective parents: the stored parent when it exists, except that a cycle of parents (concurrent moves) is
 * broken at its smallest id, which then shows at the top level. Deterministic for a given document state.
 */
function resolveParents(tasks: readonly TaskSnapshot[]): Map<string, string | null> {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const resolved = new Map<string, string | null>();
  const broken = new Set<string>();
  for (const start of tasks) {
    const path: string[] = [];
    const onPath = new Map<string, number>();
    let current: string | null = start.id;
    while (current !== null && !resolved.has(current)) {
      const seenAt = onPath.get(current);
      if (seenAt !== undefined) {
        const cycle = path.slice(seenAt);
        broken.add(cycle.sort()[0]!);
        break;
      }
      onPath.set(current, path.length);
      path.push(current);
      const parent: string | null = byId.get(current)!.parent;
      current = parent !== null && byId.has(parent) ? parent : null;
    }
    for (const id of path) {
      const parent = byId.get(id)!.parent;
      resolved.set(id, broken.has(id) || parent === null || !byId.has(parent) ? null : parent);
    }
  }
  return resolved;
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

function freezeSnapshot(snapshot: TaskSnapshot): TaskSnapshot {
  Object.freeze(snapshot.blockedBy);
  Object.freeze(snapshot.context);
  return Object.freeze(snapshot);
}
