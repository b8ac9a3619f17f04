// Learning from finished work (seed 001, last part): when a top-level task closes as done, the calls of its trace
// are queued in the plan's trace document; the sweep distils them into a skill of the plan's scope (with the
// configured model, else offline), retrying a failed distillation with backoff. When a task on which skills were
// offered closes as done or failed, their success rates are updated. Traces are kept within their bound here.
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { type Actor, CairnError, createChat, createPlan, type Plan, type TaskSnapshot } from '@cairn/core';
import {
  callsForTask,
  clearOffer,
  DEFAULT_TRACE_BOUND,
  exampleOf,
  knownTools,
  learnableCalls,
  learnedProcedures,
  learnSkill,
  offlineDistill,
  parseSkillDraft,
  planOfTraceDoc,
  readCalls,
  readOffer,
  readSkills,
  recordCall,
  recordSkillOutcome,
  type Skill,
  type SkillAuthor,
  type SkillDraft,
  type SkillExample,
  scopeOf,
  scopeOfSkillsDoc,
  skillOfKind,
  skillsDocId,
  TRACE_KEYS,
  type TraceBound,
  type TraceCall,
  TraceCallSchema,
  type TraceSample,
  traceDocId,
  trimTrace,
} from '@cairn/core/learning';
import {
  ActorSchema,
  DOC_KEYS,
  type ToolCallRecord,
  type ToolSpec,
  toCairnError,
} from '@cairn/core/protocol';
import * as Y from 'yjs';
import * as z from 'zod';
import type { Extension, ExtensionHost, PlanHandle, PlanRoom } from '../hub/extension.js';
import { RemoteOrigin } from '../hub/origin.js';
import { describeError, type Logger, silentLogger } from '../log.js';
import { type Distiller, writeProse } from './distiller.js';
import { type SharedLearningQueue, SharedQueue } from './shared-queue.js';

export interface LearningOptions {
  /** Writes skills with a model; without one (null) the offline distiller writes them. */
  distiller?: Distiller | null;
  /** How much of each plan's trace is kept. Default 500 calls or 30 days. */
  traceBound?: TraceBound;
  /** A skill is retired after this many failed tasks in a row. Default 3. */
  retireAfter?: number;
  /**
   * Retries of a failed distillation: the first after `baseMs` (default 30 s), doubling up to `maxMs` (default
   * 1 h). After `maxAttempts` (default 8) model attempts the offline distiller writes the skill.
   */
  retry?: { baseMs?: number; maxMs?: number; maxAttempts?: number };
  /** Deadline of one model call. Default 60 s. */
  timeoutMs?: number;
  /** Sweep on a timer armed for the next due job (default true); false: only when `sweep()` is called. */
  timer?: boolean;
  /** Clock in ms since the epoch. Default `Date.now`. */
  now?: () => number;
  /**
   * How long after a task closes its trace is read, so the calls of the closing turn (sent by clients beside the
   * plan's own update, or recorded by the server just after the call) are in it. Default 2 s.
   */
  settleMs?: number;
  /** Where the plans with queued jobs are listed (JSON), so a start finds them without opening every trace. */
  indexPath?: string | null;
  /** Every stored document id (trace documents among them): read to rebuild the index when its file is missing or unreadable. */
  listDocuments?: (() => Promise<string[]>) | null;
  /**
   * Tools beside Cairn's own whose traced calls may be learned (an integrator's). A traced call of any other tool,
   * and arguments its tool would not take, never reach a skill. Default none.
   */
  tools?: ReadonlyArray<ToolSpec<unknown>>;
  /**
   * In a cluster: the queue's index every server shares, and a lock per job (cluster/learning-queue.ts). Each
   * server sweeps every plan with due jobs, queued here or not, and runs a job only once it took its lock, so a
   * job queued on a server that died runs on another, and once.
   */
  shared?: SharedLearningQueue | null;
  logger?: Logger;
}

/** A trace waiting to be distilled, kept in the plan's trace document (`pending`). */
export const DistillJobSchema = z.object({
  id: z.string().min(1).max(80),
  planId: z.string().min(1),
  taskId: z.string().nullable(),
  goal: z.string().max(2000),
  calls: z.array(TraceCallSchema),
  queuedAt: z.number(),
  queuedBy: ActorSchema,
  attempts: z.number().int().min(0),
  nextAt: z.number(),
  lastError: z.string().nullable(),
});
export type DistillJob = z.infer<typeof DistillJobSchema>;

export interface LearnedEvent {
  job: DistillJob;
  skill: Skill;
  /** False when it made a new version of a skill. */
  created: boolean;
  author: SkillAuthor;
}

export interface OutcomeEvent {
  planId: string;
  taskId: string;
  outcome: 'done' | 'failed';
  /** The skills as they are after counting (retired ones included). */
  skills: Skill[];
}

export interface LearningEvents {
  queued: [DistillJob];
  learned: [LearnedEvent];
  /** A distillation failed and will be retried at `job.nextAt`; nothing was stored. */
  retry: [{ job: DistillJob; error: string }];
  outcome: [OutcomeEvent];
}

/** What `distill` did: a skill learned now, or a job queued for the sweep to retry. */
export type DistillResult =
  | { status: 'learned'; skill: Skill; created: boolean; author: SkillAuthor }
  | { status: 'queued'; job: DistillJob };

/** Jobs kept per plan; the oldest go first (a plan that closes tasks while the model is down for days). */
const MAX_PENDING = 50;

/**
 * Learning is a hub extension: it watches plans as they load for closed tasks, keeps trace documents bounded, and
 * stops its sweep when the hub closes.
 */
export class Learner extends EventEmitter<LearningEvents> implements Extension {
  readonly name = 'learning';
  /** Resolves once the trace documents with queued jobs are known (at start). */
  readonly ready: Promise<void>;
  readonly bound: TraceBound;
  readonly retireAfter: number;
  private readonly distiller: Distiller | null;
  private readonly now: () => number;
  private readonly logger: Logger;
  private readonly retryBase: number;
  private readonly retryMax: number;
  private readonly maxAttempts: number;
  private readonly timeoutMs: number;
  private readonly useTimer: boolean;
  /** Plans with queued jobs, and when the soonest is due. */
  private readonly due = new Map<string, number>();
  /** Work on one plan's trace takes turns (a close, a sweep, a recorded call). */
  private readonly chains = new Map<string, Promise<unknown>>();
  private readonly watched = new WeakSet<Y.Doc>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private readonly settleMs: number;
  /** A timer per task whose status changed (`plan\ntask`): changes in quick succession are read once. */
  private readonly settling = new Map<string, ReturnType<typeof setTimeout>>();
  /** The closed status last learned from per task, so writing the same status again is not a second close. */
  private readonly seen = new Map<string, string>();
  private readonly indexPath: string | null;
  private indexWrite: Promise<void> = Promise.resolve();
  private indexDirty = false;
  private sweeping: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** The tools a traced call may name (Cairn's and `options.tools`). */
  private readonly tools: ReadonlyMap<string, ToolSpec<unknown>>;
  private readonly shared: SharedQueue;

  constructor(
    private readonly hub: ExtensionHost,
    options: LearningOptions = {},
  ) {
    super();
    this.distiller = options.distiller ?? null;
    this.bound = options.traceBound ?? DEFAULT_TRACE_BOUND;
    if (!(this.bound.maxCalls >= 1 && this.bound.maxAgeMs > 0)) {
      throw new CairnError('invalid_argument', 'traceBound needs maxCalls >= 1 and maxAgeMs > 0.', {
        field: 'traceBound',
      });
    }
    this.retireAfter = options.retireAfter ?? 3;
    if (!(Number.isInteger(this.retireAfter) && this.retireAfter >= 1)) {
      throw new CairnError('invalid_argument', 'retireAfter is a whole number of failures, 1 or more.', {
        field: 'retireAfter',
      });
    }
    this.retryBase = options.retry?.baseMs ?? 30_000;
    this.retryMax = options.retry?.maxMs ?? 3_600_000;
    this.maxAttempts = options.retry?.maxAttempts ?? 8;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.useTimer = options.timer ?? true;
    this.settleMs = options.settleMs ?? 2000;
    this.indexPath = options.indexPath ?? null;
    this.now = options.now ?? Date.now;
    this.logger = options.logger ?? silentLogger;
    this.tools = knownTools(options.tools);
    this.shared = new SharedQueue(options.shared ?? null, this.logger);
    this.ready = this.findQueued(options.listDocuments ?? null);
  }

  /** Records a call made on the server (the HTTP tool route) in the plan's trace, durably. */
  recordCall(planId: string, call: ToolCallRecord): Promise<void> {
    return this.onTrace(planId, async (trace) => {
      recordCall(trace.doc, call, { bound: this.bound, now: this.now() });
      await trace.flush();
    });
  }

  /** The plan's trace, oldest first. */
  readTrace(planId: string) {
    return this.onTrace(planId, async (trace) => readCalls(trace.doc));
  }

  /**
   * Learns from a plan on demand: from one task's trace (`taskId`), or from the whole conversation, its first
   * user message standing in as the goal. Tries at once; a failed try stays queued for the sweep.
   */
  async distill(planId: string, request: { taskId?: string | null; actor: Actor }): Promise<DistillResult> {
    const handle = await this.hub.openPlan(planId);
    let sample: Omit<TraceSample, 'calls'> & { since: number; ids: Set<string> | null };
    const plan = createPlan({ doc: handle.doc, actor: 'learning' });
    try {
      sample = request.taskId ? taskSample(plan, planId, request.taskId) : conversationSample(plan, planId);
    } finally {
      plan.destroy();
      handle.release();
    }
    const job = await this.onTrace(planId, async (trace) => {
      const all = learnableCalls(readCalls(trace.doc), this.tools);
      const calls = sample.ids
        ? callsForTask(all, sample.ids, sample.since)
        : all.filter((c) => c.at >= sample.since);
      if (!calls.some((c) => c.outcome === 'ok')) {
        throw new CairnError(
          'invalid_argument',
          `Nothing to learn: the trace of ${request.taskId ? `task ${request.taskId} of ` : ''}plan "${planId}" ` +
            'has no successful tool call (calls are recorded when made through a toolkit with its trace).',
          { planId },
        );
      }
      // Not handed to the sweep: the try below comes first, and a failed try schedules its retry.
      return this.enqueue(trace, { ...sample, calls }, request.actor, false);
    });
    await this.shared.take(runKey(job), this.runTakenMs()); // a new job: nobody else can hold it yet
    const result = await this.attemptOne(planId, job.id);
    if (!result) throw new CairnError('internal', `The distillation ${job.id} of plan "${planId}" vanished.`);
    return result;
  }

  /**
   * The `learned_procedures` text for a plan now: the scope's skills that fit its newest open task's goal or the
   * latest user message (or `message`), the offer noted on that task. Empty when none fit.
   */
  async learnedFor(planId: string, message?: string | null): Promise<string> {
    const handle = await this.hub.openPlan(planId);
    const plan = createPlan({ doc: handle.doc, actor: 'learning' });
    try {
      return await this.withLearned(planId, async (learned) =>
        learnedProcedures(plan, { ...learned, ...(message ? { message } : {}) }, 'learning', this.now()),
      );
    } finally {
      plan.destroy();
      handle.release();
    }
  }

  /** The scope's skills now, for `get_learned_procedure`. */
  async skillsFor(planId: string): Promise<Skill[]> {
    const library = await this.hub.openPlan(skillsDocId(scopeOf(planId)));
    try {
      return readSkills(library.doc);
    } finally {
      library.release();
    }
  }

  /**
   * Runs `fn` with what offering the plan's learned procedures needs (the scope's skills and the plan's trace, where
   * an offer is noted), then stores the trace: every place that offers them (GET .../learned, the context
   * template) counts its offers alike.
   */
  async withLearned<T>(
    planId: string,
    fn: (learned: { skills: Skill[]; traces: Y.Doc }) => Promise<T>,
  ): Promise<T> {
    const skills = await this.skillsFor(planId);
    return this.onTrace(planId, async (trace) => {
      const answer = await fn({ skills, traces: trace.doc });
      await trace.flush();
      return answer;
    });
  }

  /** Runs every due job now. Resolves with how many skills were learned and how many jobs wait for a retry. */
  sweep(): Promise<{ learned: number; retried: number }> {
    const run = this.sweeping.then(() => this.sweepOnce());
    this.sweeping = run.catch(() => undefined);
    return run;
  }

  /** Queued jobs of a plan (for the API and tests). */
  pending(planId: string): Promise<DistillJob[]> {
    return this.onTrace(planId, async (trace) => readPending(trace.doc));
  }

  /** A document loaded (a plan, its trace or a scope's skills): watched while it stays loaded. */
  loaded({ planId, doc }: PlanRoom): void {
    this.watch(planId, doc);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const timer of this.settling.values()) clearTimeout(timer);
    this.settling.clear();
    await Promise.allSettled([this.sweeping, ...this.chains.values()]);
    await this.indexWrite;
  }

  // ------------------------------------------------------------------ watching loaded documents

  private watch(docId: string, doc: Y.Doc): void {
    if (this.closed || this.watched.has(doc)) return;
    this.watched.add(doc);
    if (scopeOfSkillsDoc(docId) !== null) return;
    if (planOfTraceDoc(docId) !== null) {
      this.keepBound(doc);
      return;
    }
    // The raw map, not a Plan: a doc with malformed entries (another writer's) must not break its own sync. It runs
    // on every change of every task, so it reads `keysChanged` (a set Yjs keeps anyway), not `keys`, which works
    // out each key's old value.
    const tasks = doc.getMap(DOC_KEYS.tasks);
    tasks.observeDeep((events) => {
      for (const event of events) {
        const id = event.path.length === 1 ? event.path[0] : undefined;
        if (typeof id !== 'string' || !(event instanceof Y.YMapEvent) || !event.keysChanged.has('status'))
          continue;
        const task = tasks.get(id);
        this.statusChanged(docId, doc, id, task instanceof Y.Map ? task.get('status') : undefined);
      }
    });
  }

  /** A task's status changed: once the trace has settled, a top-level task that closed is learned from. */
  private statusChanged(planId: string, doc: Y.Doc, taskId: string, status: unknown): void {
    const key = `${planId}\n${taskId}`;
    const pending = this.settling.get(key);
    // Open, with no close waiting to settle and none learned: the timer would find nothing to do. Most status
    // changes are these (work going on), and they come as fast as agents write.
    if (!pending && !this.seen.has(key) && !isLearnedStatus(status)) return;
    if (pending) clearTimeout(pending);
    const timer = setTimeout(() => {
      this.settling.delete(key);
      if (this.closed) return;
      let closed: { task: TaskSnapshot; steps: string[] } | null = null;
      try {
        closed = closedTopLevel(doc, taskId);
      } catch (error) {
        this.logger.warn('a closed task could not be read', {
          plan: planId,
          task: taskId,
          error: describeError(error),
        });
      }
      if (!closed) {
        this.seen.delete(key);
        return;
      }
      const { task, steps } = closed;
      if (this.seen.get(key) === task.status) return;
      this.seen.set(key, task.status);
      if (this.seen.size > 10_000) this.seen.delete(this.seen.keys().next().value as string);
      void this.onTrace(planId, (trace) => this.closedTask(trace, planId, task, steps)).catch((error) =>
        this.logger.error('learning from a closed task failed', {
          plan: planId,
          task: taskId,
          error: describeError(error),
        }),
      );
    }, this.settleMs);
    this.settling.set(key, timer);
  }

  /** A trace written by clients is trimmed back to the bound by the server, whatever their own bound was. */
  private keepBound(doc: Y.Doc): void {
    const calls = doc.getArray(TRACE_KEYS.calls);
    let queued = false;
    const check = () => {
      if (queued || this.closed) return;
      const oldest = (calls.length > 0 ? (calls.get(0) as { at?: unknown }) : null)?.at;
      const tooOld = typeof oldest === 'number' && oldest < this.now() - this.bound.maxAgeMs;
      if (calls.length <= this.bound.maxCalls && !tooOld) return;
      queued = true;
      // Not inside the observer's transaction: a write of its own, as `learning`.
      queueMicrotask(() => {
        queued = false;
        trimTrace(doc, this.bound, this.now(), 'learning');
      });
    };
    calls.observe(check);
    check();
    // Queued jobs are the server's: a client's change to them (a forged job would be learned into the scope's
    // skills) is undone. Another server's, relayed, is kept (a client's forged change is undone where it entered).
    const pending = doc.getMap<unknown>(TRACE_KEYS.pending);
    pending.observe((event, transaction) => {
      if (transaction.origin === 'learning' || transaction.origin instanceof RemoteOrigin) return;
      const changes = [...event.changes.keys];
      queueMicrotask(() => {
        doc.transact(() => {
          for (const [key, change] of changes) {
            if (change.action === 'add') pending.delete(key);
            else pending.set(key, change.oldValue);
          }
        }, 'learning');
      });
    });
  }

  private async closedTask(
    trace: PlanHandle,
    planId: string,
    task: Pick<TaskSnapshot, 'id' | 'status' | 'title' | 'createdAt' | 'updatedAt'>,
    steps: string[],
  ): Promise<void> {
    const offer = readOffer(trace.doc, task.id);
    if (offer && (task.status === 'done' || task.status === 'failed')) {
      await this.countOutcome(planId, task.id, task.status, offer.skills);
    }
    if (offer) clearOffer(trace.doc, task.id, 'learning');
    if (task.status === 'done') {
      const traced = learnableCalls(readCalls(trace.doc), this.tools);
      const calls = callsForTask(traced, new Set([task.id, ...steps]), task.createdAt);
      // Every server holding the plan sees the close; in a cluster one of them queues it.
      const mine = await this.shared.take(
        `learn:close:${planId}:${task.id}:${task.updatedAt}`,
        CLOSE_TAKEN_MS,
      );
      if (mine && calls.some((c) => c.outcome === 'ok')) {
        this.enqueue(trace, { planId, taskId: task.id, goal: task.title, calls }, 'learning');
      } else {
        this.logger.info('a task closed as done without traced tool calls; nothing to learn', {
          plan: planId,
          task: task.id,
        });
      }
    }
    await trace.flush();
  }

  private async countOutcome(
    planId: string,
    taskId: string,
    outcome: 'done' | 'failed',
    offered: ReadonlyArray<{ id: string; version: number }>,
  ): Promise<void> {
    const skills = await this.hub.openPlan(skillsDocId(scopeOf(planId)));
    try {
      const counted: Skill[] = [];
      for (const { id, version } of offered) {
        const skill = recordSkillOutcome(skills.doc, id, version, outcome, {
          actor: 'learning',
          now: this.now(),
          retireAfter: this.retireAfter,
          taskId,
        });
        if (skill) counted.push(skill);
      }
      await skills.flush();
      this.emit('outcome', { planId, taskId, outcome, skills: counted });
    } finally {
      skills.release();
    }
  }

  // ------------------------------------------------------------------ the queue

  private enqueue(
    trace: PlanHandle,
    sample: TraceSample & { calls: TraceCall[] },
    by: Actor,
    schedule = true,
  ): DistillJob {
    const now = this.now();
    const job: DistillJob = {
      id: `${sample.taskId ?? 'conversation'}:${now}`,
      planId: sample.planId,
      taskId: sample.taskId,
      goal: sample.goal.slice(0, 2000),
      calls: sample.calls,
      queuedAt: now,
      queuedBy: by,
      attempts: 0,
      nextAt: now,
      lastError: null,
    };
    const pending = trace.doc.getMap<unknown>(TRACE_KEYS.pending);
    trace.doc.transact(() => {
      // A task closed again replaces its job that has not run yet: one queued distillation per close.
      for (const old of readPending(trace.doc)) {
        if (old.taskId !== null && old.taskId === job.taskId) pending.delete(old.id);
      }
      pending.set(job.id, job);
      const all = readPending(trace.doc);
      for (const old of all.slice(0, Math.max(0, all.length - MAX_PENDING))) pending.delete(old.id);
    }, 'learning');
    if (schedule) this.markDue(sample.planId, job.nextAt);
    this.emit('queued', job);
    return job;
  }

  private async sweepOnce(): Promise<{ learned: number; retried: number }> {
    const totals = { learned: 0, retried: 0 };
    const now = this.now();
    for (const { planId, at } of await this.shared.due(now)) this.markDue(planId, at);
    for (const [planId, at] of [...this.due]) {
      if (this.closed) break;
      if (at > now) continue;
      try {
        const jobs = await this.pending(planId);
        for (const job of jobs) {
          if (job.nextAt > now) continue;
          if (!(await this.shared.take(runKey(job), this.runTakenMs()))) {
            // Another server runs it: look again once its lock would have lapsed (it may die meanwhile).
            this.due.set(planId, Math.max(this.due.get(planId) ?? 0, now + this.runTakenMs()));
            continue;
          }
          const result = await this.attemptOne(planId, job.id);
          if (result?.status === 'learned') totals.learned++;
          else if (result) totals.retried++;
        }
      } catch (error) {
        this.logger.error('a learning sweep of a plan failed', { plan: planId, error: describeError(error) });
      }
    }
    this.arm();
    return totals;
  }

  /**
   * One try at a queued job: the skill is stored and the job removed, or the job is rescheduled. Null when the
   * job is gone (another try learned it meanwhile).
   */
  private attemptOne(planId: string, jobId: string): Promise<DistillResult | null> {
    return this.onTrace(planId, async (trace) => {
      const job = readPending(trace.doc).find((j) => j.id === jobId);
      if (!job) return null;
      let written: { draft: SkillDraft; author: SkillAuthor; skillId: string | null; example: SkillExample };
      try {
        written = await this.write(job, await this.skillsFor(planId));
      } catch (error) {
        const attempts = job.attempts + 1;
        const next: DistillJob = {
          ...job,
          attempts,
          nextAt: this.now() + Math.min(this.retryBase * 2 ** (attempts - 1), this.retryMax),
          lastError: toCairnError(error).message.slice(0, 500),
        };
        trace.doc.transact(() => trace.doc.getMap(TRACE_KEYS.pending).set(job.id, next), 'learning');
        await trace.flush();
        this.logger.warn('a distillation failed; it will be retried', {
          plan: planId,
          job: job.id,
          attempts,
          error: next.lastError,
        });
        this.refreshDue(planId, trace.doc);
        this.emit('retry', { job: next, error: next.lastError ?? '' });
        return { status: 'queued', job: next };
      }
      const skills = await this.hub.openPlan(skillsDocId(scopeOf(planId)));
      let learned: { skill: Skill; created: boolean };
      try {
        learned = learnSkill(skills.doc, {
          scope: scopeOf(planId),
          draft: written.draft,
          author: written.author,
          skillId: written.skillId,
          example: written.example,
          source: { planId, taskId: job.taskId, goal: job.goal },
          actor: 'learning',
          now: this.now(),
        });
        await skills.flush();
      } finally {
        skills.release();
      }
      trace.doc.transact(() => trace.doc.getMap(TRACE_KEYS.pending).delete(job.id), 'learning');
      await trace.flush();
      this.refreshDue(planId, trace.doc);
      this.emit('learned', { job, ...learned, author: written.author });
      return { status: 'learned', ...learned, author: written.author };
    });
  }

  /**
   * The draft of a job, distilled with the earlier traces of its kind (the skill they belong to, `skillId`); the
   * model, when there is one, writes its prose. Checked in full before anything is stored.
   */
  private async write(job: DistillJob, skills: readonly Skill[]) {
    // Checked again here: a job queued before its calls were checked, or written into `pending` by a writer.
    const calls = learnableCalls(job.calls, this.tools);
    const sample: TraceSample = { planId: job.planId, taskId: job.taskId, goal: job.goal, calls };
    const kind = skillOfKind(skills, sample);
    const samples = [...(kind?.examples ?? []), sample];
    const tools = new Set(calls.filter((c) => c.outcome === 'ok').map((c) => c.tool));
    const offline = parseSkillDraft(offlineDistill(samples), tools);
    const found = { skillId: kind?.id ?? null, example: exampleOf(sample) };
    if (this.distiller && job.attempts < this.maxAttempts) {
      const { draft, byModel } = await writeProse(
        this.distiller,
        { samples, draft: offline },
        AbortSignal.timeout(this.timeoutMs),
        this.logger,
        { plan: job.planId, job: job.id },
      );
      const author: SkillAuthor = byModel
        ? { kind: 'model', model: this.distiller.name }
        : { kind: 'offline' };
      return { draft: parseSkillDraft(draft, tools), author, ...found };
    }
    return { draft: offline, author: { kind: 'offline' } as SkillAuthor, ...found };
  }

  // ------------------------------------------------------------------ bookkeeping

  /** Runs `fn` on the plan's trace document, after earlier work on it; the document is released afterwards. */
  private onTrace<T>(planId: string, fn: (trace: PlanHandle) => Promise<T>): Promise<T> {
    const previous = this.chains.get(planId) ?? Promise.resolve();
    const next = previous
      .catch(() => undefined)
      .then(async () => {
        const trace = await this.hub.openPlan(traceDocId(planId));
        try {
          return await fn(trace);
        } finally {
          trace.release();
        }
      });
    const settled = next.catch(() => undefined);
    this.chains.set(planId, settled);
    void settled.then(() => {
      if (this.chains.get(planId) === settled) this.chains.delete(planId);
    });
    return next;
  }

  /** How long a server holds a job it runs: longer than one model call, so only a dead server's lapses. */
  private runTakenMs(): number {
    return this.timeoutMs + 30_000;
  }

  private markDue(planId: string, at: number): void {
    const known = this.due.get(planId);
    if (known === undefined || at < known) {
      this.due.set(planId, at);
      this.shared.mark(planId, at);
    }
    this.arm();
    this.saveIndex();
  }

  private refreshDue(planId: string, doc: Y.Doc): void {
    const jobs = readPending(doc);
    const at = jobs.length === 0 ? null : Math.min(...jobs.map((j) => j.nextAt));
    if (at === null) this.due.delete(planId);
    else this.due.set(planId, at);
    this.shared.mark(planId, at);
    this.arm();
    this.saveIndex();
  }

  /** Writes the index (coalesced; a temporary file, then rename). A lost write only costs a rebuild. */
  private saveIndex(): void {
    if (!this.indexPath || this.indexDirty) return;
    const path = this.indexPath;
    this.indexDirty = true;
    this.indexWrite = this.indexWrite.then(async () => {
      this.indexDirty = false;
      const text = JSON.stringify({ version: INDEX_VERSION, due: Object.fromEntries(this.due) });
      try {
        await writeFile(`${path}.tmp`, text);
        await rename(`${path}.tmp`, path);
      } catch (error) {
        this.logger.error('could not write the learning index', { path, error: describeError(error) });
      }
    });
  }

  /** A timer for the soonest due job, at most a minute away. */
  private arm(): void {
    if (!this.useTimer || this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // With a shared index, jobs queued by other servers are due here too: look at least once a minute.
    if (this.due.size === 0 && !this.shared.enabled) return;
    const soonest = Math.min(...this.due.values(), this.shared.next ?? Number.POSITIVE_INFINITY);
    const delay = Math.max(0, Math.min(soonest - this.now(), 60_000));
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.sweep();
    }, delay);
    this.timer.unref?.();
  }

  /**
   * At start: which plans have queued jobs, from the index; without a readable index, every stored trace document
   * is opened once to rebuild it.
   */
  private async findQueued(listDocuments: (() => Promise<string[]>) | null): Promise<void> {
    const index = this.indexPath ? readIndex(this.indexPath) : null;
    if (index) {
      for (const [planId, at] of Object.entries(index)) this.markDue(planId, at);
      return;
    }
    if (!listDocuments) return;
    try {
      for (const docId of await listDocuments()) {
        const planId = planOfTraceDoc(docId);
        if (planId === null || this.closed) continue;
        const jobs = await this.pending(planId);
        if (jobs.length > 0) this.markDue(planId, Math.min(...jobs.map((j) => j.nextAt)));
      }
      this.saveIndex();
    } catch (error) {
      this.logger.error('could not look for queued distillations', { error: describeError(error) });
    }
  }
}

const INDEX_VERSION = 1;
/** One lock per try of a job: a retry (attempts + 1) is taken afresh. */
const runKey = (job: DistillJob) => `learn:run:${job.id}:${job.attempts}`;
/** How long a task's close stays taken by the server that queued its job (far past every server's settle time). */
const CLOSE_TAKEN_MS = 10 * 60_000;
const IndexSchema = z.object({ version: z.literal(INDEX_VERSION), due: z.record(z.string(), z.number()) });

function readIndex(path: string): Record<string, number> | null {
  try {
    const parsed = IndexSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
    return parsed.success ? parsed.data.due : null;
  } catch {
    return null;
  }
}

function readPending(doc: Y.Doc): DistillJob[] {
  const out: DistillJob[] = [];
  for (const raw of doc.getMap<unknown>(TRACE_KEYS.pending).values()) {
    const parsed = DistillJobSchema.safeParse(raw);
    if (parsed.success) out.push(parsed.data);
  }
  return out.sort((a, b) => a.queuedAt - b.queuedAt || (a.id < b.id ? -1 : 1));
}

/** The statuses a closed top-level task is learned from (not `skipped`). */
const LEARNED_STATUSES: ReadonlySet<unknown> = new Set(['done', 'failed', 'cancelled']);

function isLearnedStatus(status: unknown): boolean {
  return LEARNED_STATUSES.has(status);
}

/** The task, if it is a top-level task that is now done, failed or cancelled, with its steps at any depth. */
function closedTopLevel(doc: Y.Doc, taskId: string): { task: TaskSnapshot; steps: string[] } | null {
  const plan = createPlan({ doc, actor: 'learning' });
  try {
    const task = plan.get(taskId);
    if (!task || task.parent !== null || !isLearnedStatus(task.status)) return null;
    return { task, steps: plan.descendants(task.id) };
  } finally {
    plan.destroy();
  }
}

function taskSample(plan: Plan, planId: string, taskId: string) {
  const task = plan.require(taskId);
  return {
    planId,
    taskId: task.id,
    goal: task.title,
    since: task.createdAt,
    ids: new Set([task.id, ...plan.descendants(task.id)]),
  };
}

/** A conversation without a task: its first user message is the goal, every call since then the trace. */
function conversationSample(plan: Plan, planId: string) {
  const chat = createChat(plan.doc, { actor: 'learning' });
  try {
    const first = chat.list().find((m) => m.role === 'user' && m.text.trim() !== '');
    const task = plan.children(null).sort((a, b) => a.createdAt - b.createdAt)[0];
    const goal = first?.text ?? task?.title;
    if (!goal) {
      throw new CairnError(
        'invalid_argument',
        `Nothing to learn: plan "${planId}" has neither a user message nor a task to stand in as the goal.`,
        { planId },
      );
    }
    return { planId, taskId: null, goal, since: first?.at ?? 0, ids: null };
  } finally {
    chat.destroy();
  }
}
