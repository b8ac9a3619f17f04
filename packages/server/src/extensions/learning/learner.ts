// Learning from finished work (seed 001, last part): when a top-level task closes as done, the calls of its trace
// are queued in the plan's trace document; the sweep distils them into a skill of the plan's scope (with the
// configured model, else offline), retrying a failed distillation with backoff. When a task on which skills were
// offered closes as done or failed, their success rates are updated. Traces are kept within their bound here.
// Its times (the settling of a close, the jobs' due times) are queues of the hub's due-time index.
import { type Actor, CairnError, createPlan, type TaskSnapshot } from '@cairn/core';
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
  type TraceSample,
} from '@cairn/core/learning';
import { DOC_KEYS, type ToolCallRecord, type ToolSpec, toCairnError } from '@cairn/core/protocol';
import * as Y from 'yjs';
import { Emitter } from '../../emitter.js';
import type { DueQueue } from '../../hub/due-times.js';
import type { Extension, ExtensionHost, PlanHandle, PlanRoom } from '../../hub/extension.js';
import type { IndexFile } from '../../index-file.js';
import { describeError, type Logger, silentLogger } from '../../log.js';
import { type Distiller, writeProse } from './distiller.js';
import { DuePlans } from './due-plans.js';
import { type DistillJob, putJob, readPending } from './jobs.js';
import { conversationSample, taskSample } from './samples.js';
import { type SharedLearningQueue, SharedQueue } from './shared-queue.js';
import { TraceDocs } from './trace-docs.js';
import { guardTrace } from './trace-guard.js';

export { type DistillJob, DistillJobSchema } from './jobs.js';

export interface LearningOptions {
  /** Writes skills with a model; without one (null) the offline distiller writes them. */
  distiller?: Distiller | null;
  /** How much of each plan's trace is kept. Default 500 calls or 30 days. */
  traceBound?: TraceBound;
  /**
   * Calls recorded on the server (the HTTP tool route) wait in memory and are written to their plans' traces
   * together: `maxDelayMs` (default 1 s) after the first of them, or at once when `maxCalls` (default 100) wait.
   * Each trace is loaded for the write and unloaded right after, so a plan worked over HTTP keeps one room loaded,
   * not two. A graceful close writes what waits; a crash loses it (at most `maxDelayMs` of calls).
   */
  traceBatch?: { maxCalls?: number; maxDelayMs?: number };
  /** A skill is retired after this many failed tasks in a row. Default 3. */
  retireAfter?: number;
  /**
   * Retries of a failed distillation: the first after `baseMs` (default 30 s), doubling up to `maxMs` (default
   * 1 h). After `maxAttempts` (default 8) model attempts the offline distiller writes the skill.
   */
  retry?: { baseMs?: number; maxMs?: number; maxAttempts?: number };
  /** Deadline of one model call. Default 60 s. */
  timeoutMs?: number;
  /** Sweep when the next job is due (default true); false: only when `sweep()` is called. */
  timer?: boolean;
  /** Clock in ms since the epoch. Default: the hub's scheduler's. */
  now?: () => number;
  /**
   * How long after a task closes its trace is read, so the calls of the closing turn (sent by clients beside the
   * plan's own update, or recorded by the server just after the call) are in it. Default 2 s.
   */
  settleMs?: number;
  /** Where the plans with queued jobs are listed (JSON), so a start finds them without opening every trace. */
  index?: IndexFile | null;
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

/**
 * Learning is a hub extension: it watches plans as they load for closed tasks, keeps trace documents bounded, and
 * stops its sweep when the hub closes.
 */
export class Learner extends Emitter<LearningEvents> implements Extension {
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
  /** Plans with queued jobs, and when the soonest is due. */
  private readonly due: DuePlans;
  /** Work on one plan's trace takes turns (a close, a sweep, a recorded call). */
  private readonly watched = new WeakSet<Y.Doc>();
  private readonly settleMs: number;
  /** Tasks whose status changed (`plan\ntask`), read once settled: changes in quick succession are read once. */
  private readonly settling: DueQueue;
  private readonly settlingDocs = new Map<string, Y.Doc>();
  /** The closed status last learned from per task, so writing the same status again is not a second close. */
  private readonly seen = new Map<string, string>();
  private readonly unsubscribe: () => void;
  private sweeping: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** The tools a traced call may name (Cairn's and `options.tools`). */
  private readonly tools: ReadonlyMap<string, ToolSpec<unknown>>;
  private readonly shared: SharedQueue;
  private readonly traces: TraceDocs;

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
    this.settleMs = options.settleMs ?? 2000;
    this.now = options.now ?? (() => hub.dueTimes.now());
    this.logger = options.logger ?? silentLogger;
    this.tools = knownTools(options.tools);
    this.shared = new SharedQueue(options.shared ?? null, this.logger);
    const jobs = hub.dueTimes.queue('learning', () => this.sweep(), { armed: options.timer ?? true });
    this.due = new DuePlans(jobs, this.shared, options.index ?? null, this.logger);
    this.settling = hub.dueTimes.queue('learning-settle', (now) => this.settled(now));
    this.traces = new TraceDocs(hub, {
      bound: this.bound,
      now: this.now,
      logger: this.logger,
      batch: options.traceBatch,
    });
    // Most status changes are work going on, and they come as fast as agents write: only status is read.
    this.unsubscribe = hub.onTaskChanges({
      fields: ['status'],
      onChange: (planId, doc, changes) => this.statusChanged(planId, doc, changes),
    });
    this.ready = this.findQueued(options.listDocuments ?? null);
  }

  /**
   * Records a call made on the server (the HTTP tool route) for the plan's trace: written with the next batch
   * (`traceBatch`), or before anything else reads or writes that trace.
   */
  recordCall(planId: string, call: ToolCallRecord): void {
    this.traces.record(planId, call);
  }

  /** Whether calls of the plan wait to be written to its trace (its trace document may not exist yet). */
  hasUnwrittenCalls(planId: string): boolean {
    return this.traces.hasUnwritten(planId);
  }

  /** Writes every call waiting in memory to its plan's trace, durably (see TraceDocs.writeAll). */
  writeTraces(): Promise<void> {
    return this.traces.writeAll();
  }

  /** The plan's trace, oldest first. */
  readTrace(planId: string) {
    return this.traces.use(planId, async (trace) => readCalls(trace.doc));
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
    const job = await this.traces.use(planId, async (trace) => {
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
    return this.traces.use(planId, async (trace) => {
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
    return this.traces.use(planId, async (trace) => readPending(trace.doc));
  }

  /** A document loaded (a plan, its trace or a scope's skills): watched while it stays loaded. */
  loaded({ planId, doc }: PlanRoom): void {
    this.watch(planId, doc);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe();
    this.settling.clear();
    this.settlingDocs.clear();
    await this.traces.close();
    await Promise.allSettled([this.sweeping, this.traces.settled()]);
    await this.due.save();
  }

  // ------------------------------------------------------------------ watching loaded documents

  private watch(docId: string, doc: Y.Doc): void {
    if (this.closed || this.watched.has(doc)) return;
    this.watched.add(doc);
    if (planOfTraceDoc(docId) !== null) guardTrace(doc, this.bound, this.now, () => this.closed);
  }

  /** Tasks whose status changed: once the trace has settled, a top-level task that closed is learned from. */
  private statusChanged(planId: string, doc: Y.Doc, taskIds: readonly string[]): void {
    if (this.closed || planOfTraceDoc(planId) !== null || scopeOfSkillsDoc(planId) !== null) return;
    const tasks = doc.getMap(DOC_KEYS.tasks);
    for (const id of taskIds) {
      const key = `${planId}\n${id}`;
      const task = tasks.get(id);
      // Open, with no close waiting to settle and none learned: there is nothing to do once it settles.
      const status = task instanceof Y.Map ? task.get('status') : undefined;
      if (!this.settling.has(key) && !this.seen.has(key) && !isLearnedStatus(status)) continue;
      this.settlingDocs.set(key, doc);
      this.settling.set(key, this.hub.dueTimes.now() + this.settleMs);
    }
  }

  /** The tasks whose status settled by `now`: a top-level task that closed is learned from. */
  private settled(now: number): void {
    for (const key of this.settling.take(now)) {
      const doc = this.settlingDocs.get(key);
      this.settlingDocs.delete(key);
      if (this.closed || !doc) continue;
      const cut = key.indexOf('\n');
      const planId = key.slice(0, cut);
      const taskId = key.slice(cut + 1);
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
        continue;
      }
      const { task, steps } = closed;
      if (this.seen.get(key) === task.status) continue;
      this.seen.set(key, task.status);
      if (this.seen.size > 10_000) this.seen.delete(this.seen.keys().next().value as string);
      void this.traces
        .use(planId, (trace) => this.closedTask(trace, planId, task, steps))
        .catch((error) =>
          this.logger.error('learning from a closed task failed', {
            plan: planId,
            task: taskId,
            error: describeError(error),
          }),
        );
    }
  }

  private async closedTask(
    trace: PlanHandle,
    planId: string,
    task: Pick<TaskSnapshot, 'id' | 'status' | 'title' | 'createdAt' | 'updatedAt'>,
    steps: string[],
  ): Promise<void> {
    const offer = readOffer(trace.doc, task.id);
    // Every server holding the plan (and its trace) sees the close and the offer; in a cluster one of them counts.
    if (
      offer &&
      (task.status === 'done' || task.status === 'failed') &&
      (await this.shared.take(`learn:outcome:${planId}:${task.id}:${task.updatedAt}`, CLOSE_TAKEN_MS))
    ) {
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
      this.emit('outcome', [{ planId, taskId, outcome, skills: counted }]);
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
    putJob(trace.doc, job);
    if (schedule) this.due.mark(sample.planId, job.nextAt);
    this.emit('queued', [job]);
    return job;
  }

  private async sweepOnce(): Promise<{ learned: number; retried: number }> {
    const totals = { learned: 0, retried: 0 };
    const now = this.now();
    for (const { planId, at } of await this.shared.due(now)) this.due.mark(planId, at);
    for (const planId of this.due.due(now)) {
      if (this.closed) break;
      // Left alone until then: jobs another server runs (it may die meanwhile), or a trace that would not open.
      let deferUntil: number | null = null;
      try {
        const jobs = await this.pending(planId);
        for (const job of jobs) {
          if (job.nextAt > now) continue;
          if (!(await this.shared.take(runKey(job), this.runTakenMs()))) {
            deferUntil = now + this.runTakenMs();
            continue;
          }
          const result = await this.attemptOne(planId, job.id);
          if (result?.status === 'learned') totals.learned++;
          else if (result) totals.retried++;
        }
        // The plan's time follows its jobs (an index entry may be stale: its jobs ran elsewhere, or are gone).
        await this.traces.use(planId, async (trace) => this.refreshDue(planId, trace.doc));
      } catch (error) {
        deferUntil = now + this.retryBase;
        this.logger.error('a learning sweep of a plan failed', { plan: planId, error: describeError(error) });
      }
      if (deferUntil !== null) this.due.defer(planId, deferUntil);
    }
    this.due.readSharedAgain(now);
    return totals;
  }

  /**
   * One try at a queued job: the skill is stored and the job removed, or the job is rescheduled. Null when the
   * job is gone (another try learned it meanwhile).
   */
  private attemptOne(planId: string, jobId: string): Promise<DistillResult | null> {
    return this.traces.use(planId, async (trace) => {
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
        this.emit('retry', [{ job: next, error: next.lastError ?? '' }]);
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
      this.emit('learned', [{ job, ...learned, author: written.author }]);
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

  /** How long a server holds a job it runs: longer than one model call, so only a dead server's lapses. */
  private runTakenMs(): number {
    return this.timeoutMs + 30_000;
  }

  private refreshDue(planId: string, doc: Y.Doc): void {
    const jobs = readPending(doc);
    this.due.set(planId, jobs.length === 0 ? null : Math.min(...jobs.map((j) => j.nextAt)));
  }

  /**
   * At start: which plans have queued jobs, from the index; without a readable index, every stored trace document
   * is opened once to rebuild it.
   */
  private async findQueued(listDocuments: (() => Promise<string[]>) | null): Promise<void> {
    this.due.readSharedAgain(this.now());
    const index = await this.due.read();
    if (index) {
      for (const [planId, at] of Object.entries(index)) this.due.mark(planId, at);
      return;
    }
    if (!listDocuments) return;
    try {
      for (const docId of await listDocuments()) {
        const planId = planOfTraceDoc(docId);
        if (planId === null || this.closed) continue;
        const jobs = await this.pending(planId);
        if (jobs.length > 0) this.due.mark(planId, Math.min(...jobs.map((j) => j.nextAt)));
      }
      await this.due.save();
    } catch (error) {
      this.logger.error('could not look for queued distillations', { error: describeError(error) });
    }
  }
}

/** One lock per try of a job: a retry (attempts + 1) is taken afresh. */
const runKey = (job: DistillJob) => `learn:run:${job.id}:${job.attempts}`;
/**
 * How long a task's close stays taken by the server that queued its job, or counted its outcome for the skills
 * offered on it (far past every server's settle time).
 */
const CLOSE_TAKEN_MS = 10 * 60_000;
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
