// The Plan: tasks, their steps and dependencies over one Y.Doc. Every write is one Yjs transaction whose origin
// is the actor; every write is validated completely before the first change, so a refused call changes nothing.
import type * as Y from 'yjs';
import { Aliases } from './aliases.js';
import { dryRun, type Journal } from './atomic.js';
import { changedTasks, describeChanges, type PlanChangeEvent } from './change-events.js';
import { type ClaimArbiter, type ClaimNextFilter, type ClaimResult, LocalArbiter } from './claims.js';
import {
  type MalformedEntry,
  malformedEntries,
  metaMap,
  removedMap,
  taskIds,
  taskNotFound,
  tasksMap,
} from './doc.js';
import {
  type DocWriter,
  writeAdds,
  writeAssignment,
  writeFreshNums,
  writeMove,
  writeRemoves,
  writeSkipped,
  writeUpdate,
} from './doc-writes.js';
import { CairnError, withContext } from './errors.js';
import type { BlockedInfo } from './graph.js';
import { cryptoRandom, type Random } from './ids.js';
import { registerOrigin } from './origins.js';
import { type BlockedTask, NO_FILTER, PlanReads } from './plan-reads.js';

export type { PlanChangeEvent, TaskChange } from './change-events.js';
export type { BlockedTask } from './plan-reads.js';

import { assertCairnsYjs, newDoc } from './new-doc.js';
import { closedWith, type PendingEdges, Planner } from './planning.js';
import {
  type Actor,
  type ListFilter,
  META_KEYS,
  MoveSchema,
  type MoveTarget,
  PLAN_LIMITS,
  type PlanLimits,
  SCHEMA_VERSION,
  type TaskInput,
  TaskInputsSchema,
  type TaskPatch,
  TaskPatchSchema,
  type TaskSnapshot,
} from './schema.js';
import { BoundedUndoManager } from './undo.js';
import { isParsed, markParsed, parseActor, parseOnce } from './validate.js';

/** The document, the actor and the limits of a Plan: the options of `createPlan`. */
export interface CreatePlanOptions {
  /** The document to work on; a new one by default. Several Plans (one per actor) may share one doc. */
  doc?: Y.Doc;
  /** Who this Plan's writes are attributed to. Default `agent:local`. */
  actor?: Actor;
  /** Clock in ms since the epoch, for createdAt/updatedAt. Default `Date.now`. */
  now?: () => number;
  /** Source of randomness for ids, in [0, 1). Default: crypto. Seed it for reproducible tests. */
  random?: Random;
  /**
   * How much one write may add and how many tasks the plan may hold. Default `PLAN_LIMITS` (500 per call,
   * 10,000 per plan), which keeps every call on a shared server short; a local plan may raise them.
   */
  limits?: Partial<PlanLimits>;
}

/** The whole plan as plain data (`Plan.toJSON()`): the schema version and every task in tree order. */
export interface PlanSnapshot {
  schemaVersion: number;
  /** Every task in tree order: siblings by rank (then id), each task followed by its steps. */
  tasks: TaskSnapshot[];
}

/** Undo steps each Plan keeps; older ones are forgotten, and the values they kept alive are collected. */
export const UNDO_LIMIT = 100;

/** Each Plan's local arbiter, for the sync server, which decides claims on its authoritative doc. */
const localArbiters = new WeakMap<Plan, LocalArbiter>();

/**
 * The arbiter that applies the claim rule on `plan`'s own document, whatever arbiter the plan uses: what the sync
 * server calls to decide a client's claim on the authoritative doc.
 */
export function localArbiterOf(plan: Plan): LocalArbiter {
  return localArbiters.get(plan)!;
}

/**
 * Creates a Plan on a Yjs document (a new one, or `options.doc` to open an existing, persisted or synced one),
 * writing as `options.actor`. Persist the doc with `@cairn/core/fs` or `/indexeddb`, sync it with `/websocket`.
 */
export function createPlan(options: CreatePlanOptions = {}): Plan {
  return new Plan(options);
}

/**
 * A task plan in a Yjs document: tasks, their steps and dependencies, read and edited through methods that
 * validate every write, attribute it to the plan's actor, and refuse bad input without changing anything.
 * Create it with `createPlan`.
 */
export class Plan {
  readonly doc: Y.Doc;
  readonly actor: Actor;
  private readonly tasks: Y.Map<unknown>;
  private readonly removed: Y.Map<unknown>;
  private readonly meta: Y.Map<unknown>;
  private readonly now: () => number;
  private readonly random: Random;
  private readonly limits: PlanLimits;
  private readonly undoManager: BoundedUndoManager;
  private readonly listeners = new Set<(event: PlanChangeEvent) => void>();
  /** Its task snapshots, cached, and the derived views: every read method answers from them (plan-reads.ts). */
  private readonly reads: PlanReads;
  private readonly planner: Planner;
  /** What the document-side writes (doc-writes.ts) need: this Plan's actor and clock, and its cache to drop. */
  private readonly writer: DocWriter;
  /** While this Plan is an `atomic` call's dry run: the writes it made, to apply to the real plan. */
  private journal: Journal<Plan> | null = null;
  private readonly aliases: Aliases;
  /** Applies the claim rule on this document; the arbiter unless a sync client sets another. */
  private readonly local: LocalArbiter;
  private arbiter: ClaimArbiter;
  /** Reads each transaction's task changes after it, local or remote (`changedTasks`): no deep observer needed. */
  private readonly afterTransaction: (txn: Y.Transaction) => void;

  constructor(options: CreatePlanOptions = {}) {
    if (options.doc !== undefined) assertCairnsYjs(options.doc, 'createPlan');
    this.doc = options.doc ?? newDoc();
    this.actor = parseActor(options.actor ?? 'agent:local', 'actor');
    this.now = options.now ?? Date.now;
    this.random = options.random ?? cryptoRandom;
    this.limits = { ...PLAN_LIMITS, ...options.limits };
    this.tasks = tasksMap(this.doc);
    this.removed = removedMap(this.doc);
    this.meta = metaMap(this.doc);
    this.undoManager = new BoundedUndoManager([this.tasks, this.removed], {
      trackedOrigins: new Set([this.actor]),
      captureTimeout: 0,
      limit: UNDO_LIMIT,
    });
    // Changes it replays are attributed to this Plan's actor.
    registerOrigin(this.undoManager, { source: 'undo', actor: this.actor });
    this.aliases = new Aliases(this.tasks, this.removed);
    this.reads = new PlanReads(this.doc, this.tasks, this.aliases);
    this.planner = new Planner({
      tasks: this.tasks,
      removed: this.removed,
      random: this.random,
      limits: this.limits,
      get: (id) => this.get(id),
      require: (id) => this.require(id),
      has: (id) => this.has(id),
      notFound: (id) => this.notFound(id),
      childIds: (parent) => this.reads.view().children(parent),
    });
    this.afterTransaction = (txn) => this.onDocChange(txn);
    this.doc.on('afterTransaction', this.afterTransaction);
    this.writer = {
      tasks: this.tasks,
      removed: this.removed,
      actor: this.actor,
      now: this.now,
      nextNum: () => this.aliases.next(),
      written: (id) => this.reads.touched(id),
    };
    this.local = new LocalArbiter({
      require: (id) => this.require(id),
      ready: (actor) => this.ready({ actor }),
      effectiveParent: (task) => this.effectiveParent(task),
      assign: (id, by, holder, status) => {
        this.doc.transact(() => writeAssignment(this.writer, id, by, holder, status), by);
      },
    });
    localArbiters.set(this, this.local);
    this.arbiter = this.local;
  }

  /** A Plan on the same document whose writes are attributed to another actor (with its own undo history). */
  withActor(actor: Actor): Plan {
    const plan = new Plan({ doc: this.doc, actor, now: this.now, random: this.random, limits: this.limits });
    // Its claims go to the same arbiter: a toolkit for another actor on a connected plan stays exclusive.
    if (this.arbiter !== this.local) plan.arbiter = this.arbiter;
    return plan;
  }

  /** Stops observing the document. The doc itself is left alone. */
  destroy(): void {
    this.doc.off('afterTransaction', this.afterTransaction);
    this.aliases.destroy();
    this.undoManager.destroy();
    this.listeners.clear();
  }

  // ---------------------------------------------------------------- reads (plan-reads.ts)

  has(id: string): boolean {
    return this.reads.has(id);
  }

  get(id: string): TaskSnapshot | undefined {
    return this.reads.get(id);
  }

  /** Like `get`, but an unknown id throws a `not_found` error that lists the known ids. */
  require(id: string): TaskSnapshot {
    return this.reads.require(id);
  }

  /** The task whose integer alias is `num`; when a merge left two with one alias, the earlier created wins. */
  byNum(num: number): TaskSnapshot | undefined {
    return this.reads.byNum(num);
  }

  /** Tasks in tree order, filtered. With no filter: every task. */
  list(filter: ListFilter = NO_FILTER): TaskSnapshot[] {
    return this.reads.list(filter);
  }

  /** The direct steps of a task (or the top-level tasks for `null`), in order. */
  children(parent: string | null): TaskSnapshot[] {
    return this.reads.children(parent);
  }

  /** The ids of every step under a task, at any depth, each after its parent (not the task itself). */
  descendants(id: string): string[] {
    return this.reads.descendants(id);
  }

  /**
   * The parent a task is shown under: its stored parent, unless that task is gone (a step added concurrently
   * with its parent's removal) or the parents form a cycle (concurrent moves); then it shows at the top level.
   */
  effectiveParent(task: TaskSnapshot): string | null {
    return this.reads.view().effectiveParent(task.id);
  }

  /** Open tasks that can be picked up now by `actor` (default this Plan's): unblocked, unclaimed or theirs. */
  ready(options: { actor?: Actor } = {}): TaskSnapshot[] {
    return this.reads.ready(options.actor ?? this.actor);
  }

  /** Whether `ready({ actor })` lists this task, without building the list. False for an unknown id. */
  isReady(id: string, options: { actor?: Actor } = {}): boolean {
    return this.reads.isReady(id, options.actor ?? this.actor);
  }

  /** Open tasks that cannot start, each with its reason and the tasks it waits on. */
  blocked(): BlockedTask[] {
    return this.reads.blocked();
  }

  /** Why one task cannot start, or undefined when it is not blocked (or closed, or unknown). */
  blockedTask(id: string): BlockedTask | undefined {
    return this.reads.blockedTask(id);
  }

  /**
   * Why each blocked open task cannot start, by id, without a snapshot per task: for a reader that asks about
   * many tasks at once (a render). Do not keep it across a change of the plan; the next change patches it.
   */
  blockedReasons(): ReadonlyMap<string, BlockedInfo> {
    return this.reads.view().blocked();
  }

  /** The tasks that wait on `id` (name it in their blockedBy), in plan order. */
  dependents(id: string): TaskSnapshot[] {
    return this.reads.dependents(id);
  }

  /**
   * What the document holds under `tasks` that is not a well-formed task: values that are not task maps (left
   * out of every read) and tasks with a field of the wrong type (read as its default). Any writer can put such
   * values in a shared document; this says what was skipped, so a person can repair or remove it.
   */
  malformed(): MalformedEntry[] {
    return malformedEntries(this.tasks);
  }

  /** Dependency cycles present in the document (each sorted; only a merge can create one). */
  cycles(): string[][] {
    return this.reads.view().cycles();
  }

  toJSON(): PlanSnapshot {
    return { schemaVersion: SCHEMA_VERSION, tasks: this.reads.all().map((t) => ({ ...t })) };
  }

  // ---------------------------------------------------------------- writes

  /** Adds one task (with its steps). */
  add(input: TaskInput): TaskSnapshot {
    // An input parsed at the edge is still parsed as the one-task list it is added as.
    const inputs = [input];
    return this.addMany(isParsed(input) ? markParsed(inputs) : inputs)[0]!;
  }

  /** Adds several tasks (with their steps) in one transaction. `key`s let them depend on each other. */
  addMany(inputs: TaskInput[]): TaskSnapshot[] {
    const parsed = parseOnce(TaskInputsSchema, inputs, 'tasks to add');
    const planned = this.planner.planAdds(parsed, new Set());
    this.write((target) => writeAdds(target.writer, planned));
    return planned.entries.filter((p) => p.topLevel).map((p) => this.require(p.id));
  }

  /** Removes every task and adds `inputs` in their place, in one transaction. */
  replace(inputs: TaskInput[]): TaskSnapshot[] {
    const parsed = parseOnce(TaskInputsSchema, inputs, 'replacement tasks');
    const doomed = new Set(taskIds(this.tasks));
    const planned = this.planner.planAdds(parsed, doomed);
    this.write((target) => {
      writeRemoves(target.writer, [...doomed]);
      writeAdds(target.writer, planned);
    });
    return planned.entries.filter((p) => p.topLevel).map((p) => this.require(p.id));
  }

  /**
   * Changes some fields of a task; fields not given are left alone. Closing a task (done, failed, cancelled,
   * skipped) closes its open steps, at any depth, as `skipped` in the same write.
   */
  update(id: string, patch: TaskPatch): TaskSnapshot {
    const p = parseOnce(TaskPatchSchema, patch, `update of task ${id}`);
    const planned = this.planner.planUpdate(id, p, new Map());
    this.write((target) => {
      writeUpdate(target.writer, planned);
      writeSkipped(target.writer, planned.closes);
    });
    return this.require(id);
  }

  /**
   * Changes several tasks in one transaction, all or nothing: each update's fields (`patch`), steps to append
   * (`addSteps`) and a move (`move`), in that order. A refusal says which update it is about:
   * `updates[1] (task k3x9a2b): ...`. Returns, per update, the task as updated and the steps added to it.
   *
   * When each task appears once and nothing moves, everything is validated before the first write, each update
   * as if the ones before it were applied (the dependencies they add or drop count in its cycle check), so this
   * costs the size of the updates, not of the plan. A move can depend on another change of the call (a parent
   * moved first): such a call runs in turn on a copy of the plan first (`atomic`, which costs the size of the
   * plan); a lone move validates itself. A task named twice is refused, unless `repeats: 'in_turn'`: then each
   * entry is a change of its own, applied in turn the same way.
   */
  updateMany(
    updates: readonly TaskUpdate[],
    options: { repeats?: 'refuse' | 'in_turn' } = {},
  ): Array<{ task: TaskSnapshot; stepsAdded: TaskSnapshot[] }> {
    const seen = new Set<string>();
    let repeated = false;
    for (const [i, { id }] of updates.entries()) {
      if (!seen.has(id)) {
        seen.add(id);
        continue;
      }
      repeated = true;
      if (options.repeats !== 'in_turn') {
        const message = `Task ${id} is updated twice; give it one update with every change.`;
        throw withContext(new CairnError('invalid_argument', message, { id }), `updates[${i}] (task ${id})`);
      }
    }
    if (!repeated && updates.every((u) => u.move === undefined)) return this.updatePlanned(updates);
    const inTurn = (p: Plan) => updates.map((update, i) => p.updateInTurn(update, i));
    const loneMove = updates.length === 1 && !updates[0]!.patch && !updates[0]!.addSteps?.length;
    if (loneMove) return inTurn(this);
    // Run once on a dry run; the results are read back here, where the same ids were written.
    return this.atomic(inTurn).map(({ task, stepsAdded }) => ({
      task: this.require(task.id),
      stepsAdded: stepsAdded.map((step) => this.require(step.id)),
    }));
  }

  private updatePlanned(
    updates: readonly TaskUpdate[],
  ): Array<{ task: TaskSnapshot; stepsAdded: TaskSnapshot[] }> {
    const edges: PendingEdges = new Map();
    const taken = new Set<string>();
    const planned = updates.map(({ id, patch, addSteps }, i) => {
      try {
        this.require(id);
        // New steps cannot take part in a dependency cycle or move a task, so planning them apart from the
        // field changes, against the plan as it is, decides the same as applying everything in order would.
        const fields = patch
          ? this.planner.planUpdate(id, parseOnce(TaskPatchSchema, patch, `update of task ${id}`), edges)
          : null;
        const steps = addSteps?.length
          ? this.planner.planSteps(id, parseOnce(TaskInputsSchema, addSteps, 'steps to add'), taken)
          : null;
        return { id, fields, steps };
      } catch (error) {
        throw withContext(error, `updates[${i}] (task ${id})`);
      }
    });
    const closed = closedWith(planned);
    this.write((target) => {
      for (const { fields, steps } of planned) {
        if (fields) writeUpdate(target.writer, fields);
        if (steps) writeAdds(target.writer, steps);
      }
      // After every update of the call, so a step the call itself closes keeps the status it was given.
      writeSkipped(target.writer, closed);
    });
    return planned.map(({ id, steps }) => ({
      task: this.require(id),
      stepsAdded: steps ? steps.entries.filter((p) => p.topLevel).map((p) => this.require(p.id)) : [],
    }));
  }

  /** One update of `updateMany`, applied by itself: fields, then steps, then the move. */
  private updateInTurn(
    { id, patch, addSteps, move }: TaskUpdate,
    index: number,
  ): { task: TaskSnapshot; stepsAdded: TaskSnapshot[] } {
    try {
      if (patch) this.update(id, patch);
      else this.require(id);
      // The steps as parsed, each given the parent required above: nothing in them to parse again.
      const steps = addSteps?.length
        ? this.addMany(
            markParsed(
              parseOnce(TaskInputsSchema, addSteps, 'steps to add').map((step) => ({ ...step, parent: id })),
            ),
          )
        : [];
      if (move) this.move(id, move);
      return { task: this.require(id), stepsAdded: steps };
    } catch (error) {
      throw withContext(error, `updates[${index}] (task ${id})`);
    }
  }

  /**
   * Removes a task and all its steps. Other tasks' dependencies on them are dropped (a removed blocker no
   * longer blocks). Returns the removed ids. A tombstone records who removed each task.
   */
  remove(id: string): string[] {
    this.require(id);
    const doomed = [id, ...this.descendants(id)];
    this.write((target) => writeRemoves(target.writer, doomed));
    return doomed;
  }

  /** Moves a task to another parent and/or position among its siblings. */
  move(id: string, target: MoveTarget): TaskSnapshot {
    const t = parseOnce(MoveSchema, target, `move of task ${id}`);
    const task = this.require(id);
    const parent = t.parent !== undefined ? t.parent : this.effectiveParent(task);
    if (parent !== null) {
      this.require(parent);
      if (parent === id || this.descendants(id).includes(parent)) {
        throw new CairnError(
          'cycle',
          `Task ${id} cannot move under ${parent}: ${parent} is ${id === parent ? 'the task itself' : 'one of its own steps'}.`,
          { task: id, parent },
        );
      }
    }
    const siblings = this.children(parent).filter((s) => s.id !== id);
    const index = this.planner.insertIndex(
      siblings.map((s) => s.id),
      t.after,
      t.before,
      parent,
    );
    this.write((target) => writeMove(target.writer, id, parent, siblings, index));
    return this.require(id);
  }

  /**
   * Runs several writes as one transaction (one change event, one undo step). Each write still validates
   * before it changes anything, but a write that throws does not undo the ones before it in the batch.
   */
  batch<T>(fn: (plan: Plan) => T): T {
    let result!: T;
    // Not a write of its own: the writes `fn` makes are (and are what a dry run records).
    this.transact(() => {
      result = fn(this);
    });
    return result;
  }

  /**
   * Like `batch`, but all or nothing: `fn` runs once, against a scratch copy of the document, where every write
   * is validated and applied in turn; only when all of it succeeds are the writes it planned applied here, as
   * one transaction, without validating or parsing anything again. For a write made of several operations where
   * a later one could be refused after earlier ones were applied (several updates in one tool call). `fn` must
   * make its writes through the Plan it is given (a claim, which goes to an arbiter, is refused); it returns what
   * `fn` returned there: the ids in it are the ones written here, its times the dry run's. The scratch copy holds
   * the plan's live content only (no history, no chat), so it costs O(tasks).
   */
  atomic<T>(fn: (plan: Plan) => T): T {
    const { result, writes } = dryRun(this.doc, (copy, journal) => this.dryRunOn(copy, journal), fn);
    this.transact(() => {
      for (const write of writes) write(this);
    });
    return result;
  }

  // ---------------------------------------------------------------- claims

  /**
   * Routes claims through an arbiter (the sync client sets the server as one), so that when K agents race for
   * a task exactly one is told it won and every replica ends with that winner. `null` decides locally again.
   */
  useArbiter(arbiter: ClaimArbiter | null): void {
    this.arbiter = arbiter ?? this.local;
  }

  /** Claims a task for this Plan's actor: it becomes the assignee and the task goes in_progress. */
  claim(id: string): Promise<ClaimResult> {
    return this.arbiter.claim(id, this.actor);
  }

  /** Claims the first ready, unclaimed task (in plan order), optionally among the steps of one task. */
  claimNext(filter: ClaimNextFilter = {}): Promise<ClaimResult> {
    // A parent that is not in this plan (a typo, another plan's id) is not_found, not "nothing ready".
    if (filter.parent) {
      try {
        this.require(filter.parent);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return this.arbiter.claimNext(this.actor, filter);
  }

  /** Gives a task this actor holds back: no assignee, and pending again if it was in progress. */
  release(id: string): Promise<ClaimResult> {
    return this.arbiter.release(id, this.actor);
  }

  /** Hands a task this actor holds (or nobody holds) to another actor. */
  async handOff(id: string, to: string): Promise<ClaimResult> {
    return this.arbiter.handOff(id, this.actor, parseActor(to, 'actor to hand off to'));
  }

  // ---------------------------------------------------------------- undo

  /**
   * Undoes this actor's last write (others' writes are never undone). Returns false when there is none. With
   * `redo: false` it cannot be redone: what it took back is collected, so the document no longer carries it (a
   * write a server refused for its size is then gone from what this replica sends).
   */
  undo(options: { redo?: boolean } = {}): boolean {
    const undone = this.undoManager.undo() !== null;
    if (options.redo === false) this.undoManager.forgetRedo();
    return undone;
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

  /** A Plan like this one on `copy` (an `atomic` dry run's scratch copy), recording its writes in `journal`. */
  private dryRunOn(copy: Y.Doc, journal: Journal<Plan>): Plan {
    const probe = new Plan({
      doc: copy,
      actor: this.actor,
      now: this.now,
      random: this.random,
      limits: this.limits,
    });
    probe.journal = journal;
    return probe;
  }

  /**
   * One validated write, applied to this Plan in a transaction. `apply` takes the Plan to write to: in a dry run
   * (`atomic`) the journal keeps it, to be applied to the real plan as it was planned here.
   */
  private write(apply: (target: Plan) => void): void {
    this.transact(() => {
      apply(this);
      this.journal?.wroteIn(this.doc._transaction!);
    });
    this.journal?.wrote(apply);
  }

  private transact(fn: () => void): void {
    this.doc.transact(() => {
      if (this.meta.get(META_KEYS.schemaVersion) === undefined)
        this.meta.set(META_KEYS.schemaVersion, SCHEMA_VERSION);
      fn();
    }, this.actor);
  }

  private notFound(id: string): CairnError {
    return taskNotFound(this.tasks, id);
  }

  private onDocChange(txn: Y.Transaction): void {
    const changes = changedTasks(txn, this.tasks);
    this.reads.follow(changes, txn);
    if (changes.size === 0) return;
    this.aliases.follow(changes);
    if (!txn.local && [...changes.values()].some((c) => c.kind === 'added')) this.repairDuplicateNums();
    if (this.listeners.size === 0) return; // the attributed list is for listeners only
    const event: PlanChangeEvent = {
      local: txn.local,
      changes: describeChanges(changes, txn, this.tasks, this.removed),
    };
    for (const listener of this.listeners) listener(event);
  }

  /** Gives a fresh alias to this actor's tasks that share one with an earlier task (see Aliases.losers). */
  private repairDuplicateNums(): void {
    const losers = this.aliases.losers(this.actor, (id) => this.get(id));
    if (losers.length === 0) return;
    this.doc.transact(() => writeFreshNums(this.writer, losers), this.actor);
  }
}

/** One task's part of an updateMany: fields to change, steps to append and a move, each optional. */
export interface TaskUpdate {
  id: string;
  patch?: TaskPatch;
  addSteps?: TaskInput[];
  /** Moves the task after its fields and steps changed (see `move`). */
  move?: MoveTarget;
}
