// Wake-ups (seed 001): a waiting task whose wakeAt has passed goes back to in_progress (actor `wake`) and the
// plan's chat gets a notice, so the next turn picks it up. An index of wake times (kept current from loaded docs,
// persisted as a small JSON file) finds the due tasks without loading every plan; its times are a queue of the
// hub's due-time index (hub/due-times.ts), which sweeps when the soonest comes.
import { createChat, createPlan } from '@cairn/core';
import { DOC_KEYS, inline, isWaitingStatus, toCairnError } from '@cairn/core/protocol';
import * as Y from 'yjs';
import { Emitter } from '../emitter.js';
import type { DueQueue } from '../hub/due-times.js';
import type { Extension, ExtensionHost, PlanRoom } from '../hub/extension.js';
import { type IndexFile, IndexWriter } from '../index-file.js';
import { describeError, type Logger, silentLogger } from '../log.js';
import type { Counter } from '../metrics.js';
import type { RunOnce } from './auto-close.js';

export interface WakeOptions {
  /** Clock in ms since the epoch. Default: the hub's scheduler's. */
  now?: () => number;
  /** Where the index is kept (JSON). Null: in memory only, rebuilt at each start. */
  index?: IndexFile | null;
  /** Every stored plan id: read to rebuild the index when its file is missing or unreadable. */
  listPlans?: (() => Promise<string[]>) | null;
  /** Sweep when the next wake time comes (default true); false: only when `sweep()` is called. */
  timer?: boolean;
  /** With a shared index: the longest time between two reads of it. Default 60 s. */
  maxIntervalMs?: number;
  /** How long a plan that could not be opened is left before the next try. Default 5 s. */
  retryMs?: number;
  logger?: Logger;
  /**
   * In a cluster: true for exactly one server per key until its time is up, so a due wake-up fires on one server
   * (`once` in cluster/jobs.ts). A wake-up taken by a server that died fires elsewhere once its time is up.
   */
  once?: RunOnce;
  /**
   * In a cluster: the wake index every server shares (cluster/wake-index.ts). This server writes the entries of
   * the plans it has loaded there and sweeps the due entries of every plan, loaded here or not.
   */
  shared?: SharedWakeIndex;
}

/** A wake index kept where every server of a cluster reads it. */
export interface SharedWakeIndex {
  /** Sets or (null) clears one entry. */
  set(planId: string, taskId: string, at: number | null): Promise<void>;
  /** Entries due by `now`, and the soonest wake time after it (ms) or null. */
  due(now: number): Promise<{ due: WakeEntry[]; next: number | null }>;
}

/** How long a server has to fire a wake-up it took before another may. */
const WAKE_TAKEN_MS = 30_000;

/** One task the sweeper woke: the event `task_woken`. */
export interface TaskWokenEvent {
  planId: string;
  taskId: string;
  title: string;
  nextStep: string | null;
  /** The wake time it had (ISO). */
  wakeAt: string;
  /** When it was woken (ms since the epoch). */
  wokenAt: number;
  /** The id of the chat notice. */
  messageId: string;
}

export interface WakeEvents {
  task_woken: [TaskWokenEvent];
}

/** One entry of the index: a waiting task and when it wakes. */
export interface WakeEntry {
  planId: string;
  taskId: string;
  /** ms since the epoch. */
  at: number;
}

const INDEX_VERSION = 1;

/** The notice a woken task leaves in the chat. */
export function wakeNotice(title: string, nextStep: string | null): string {
  // A system turn quotes a writer's text: held to one line, so it cannot speak as the system on lines of its own.
  return `Task wake-up: "${inline(title)}" is due. Next step: ${nextStep === null ? 'none recorded' : inline(nextStep)}`;
}

/** The fields of a task its wake time is read from. */
const WAKE_FIELDS = ['status', 'wakeAt'] as const;

/** The index's key of a task, and back (a plan id has no control characters). */
const keyOf = (planId: string, taskId: string) => `${planId}\n${taskId}`;
function entryOf(key: string, at: number): WakeEntry {
  const cut = key.indexOf('\n');
  return { planId: key.slice(0, cut), taskId: key.slice(cut + 1), at };
}
/** The queue's key of the next read of the shared index (no task's key is empty). */
const SHARED_READ = '';

/** The wake time of one task map, or null when it is not a waiting task with a valid wakeAt. */
function wakeTimeOf(task: unknown): number | null {
  if (!(task instanceof Y.Map)) return null;
  const status = task.get('status');
  const wakeAt = task.get('wakeAt');
  if (typeof status !== 'string' || !isWaitingStatus(status) || typeof wakeAt !== 'string') return null;
  const at = Date.parse(wakeAt);
  return Number.isFinite(at) ? at : null;
}

/** The sweeper is a hub extension: it watches each plan as it loads, and stops when the hub closes. */
export class WakeSweeper extends Emitter<WakeEvents> implements Extension {
  readonly name = 'wake';
  /** Resolves once the index is loaded or rebuilt. */
  readonly ready: Promise<void>;
  private readonly now: () => number;
  private readonly logger: Logger;
  private readonly maxIntervalMs: number;
  private readonly retryMs: number;
  /** `plan\ntask` -> wake time (ms): only waiting tasks that have a wake time. */
  private readonly index: DueQueue;
  private readonly file: IndexFile | null;
  private readonly writer: IndexWriter;
  /** Plans left alone until then: taken by another server, or could not be opened. */
  private readonly retryAt = new Map<string, number>();
  private readonly wokenTotal: Counter;
  private sweeping: Promise<TaskWokenEvent[]> | null = null;
  private closed = false;
  private readonly runOnce: RunOnce | null;
  private readonly shared: SharedWakeIndex | null;
  /** Writes to the shared index not yet answered; closing waits for them. */
  private readonly sharing = new Set<Promise<void>>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly hub: ExtensionHost,
    options: WakeOptions = {},
  ) {
    super();
    this.runOnce = options.once ?? null;
    this.shared = options.shared ?? null;
    this.now = options.now ?? (() => hub.dueTimes.now());
    this.logger = options.logger ?? silentLogger;
    this.file = options.index ?? null;
    this.maxIntervalMs = options.maxIntervalMs ?? 60_000;
    this.retryMs = options.retryMs ?? 5_000;
    this.wokenTotal = hub.registry.counter('cairn_tasks_woken_total', 'Waiting tasks woken by the sweeper.');
    this.index = hub.dueTimes.queue('wake', () => this.sweep(), { armed: options.timer ?? true });
    this.writer = new IndexWriter(
      this.file,
      () => this.indexText(),
      (error) => {
        this.hub.metrics.errorsTotal.inc({ kind: 'wake_index' });
        this.logger.error('could not write the wake index', {
          path: this.file?.where,
          error: describeError(error),
        });
      },
    );
    // Only a task added, replaced or removed, or a change of its status or wakeAt, can move its wake time.
    this.unsubscribe = hub.onTaskChanges({
      fields: WAKE_FIELDS,
      addedOrRemoved: true,
      onChange: (planId, doc, changes) => this.tasksChanged(planId, doc, changes),
    });
    this.ready = this.start(options.listPlans ?? null);
  }

  /** Every entry of the index, soonest first (optionally of one plan). */
  entries(planId?: string): WakeEntry[] {
    const out: WakeEntry[] = [];
    const prefix = planId === undefined ? null : `${planId}\n`;
    for (const [key, at] of this.index.entries()) {
      if (key === SHARED_READ || (prefix !== null && !key.startsWith(prefix))) continue;
      out.push(entryOf(key, at));
    }
    return out.sort(
      (a, b) => a.at - b.at || a.planId.localeCompare(b.planId) || a.taskId.localeCompare(b.taskId),
    );
  }

  /** The soonest wake time in the index (ms), or null. */
  nextWakeAt(): number | null {
    let next: number | null = null;
    for (const [key, at] of this.index.entries())
      if (key !== SHARED_READ && (next === null || at < next)) next = at;
    return next;
  }

  /**
   * Wakes every task whose wake time has passed: each plan with due tasks is opened, each task checked against
   * the doc (the index may be behind), flipped to in_progress with a chat notice in one transaction, and stored
   * before `task_woken` is emitted. One sweep at a time; a call during a sweep waits for it and sweeps again.
   */
  sweep(): Promise<TaskWokenEvent[]> {
    const run = async (): Promise<TaskWokenEvent[]> => {
      await this.ready;
      const now = this.now();
      const due = new Map<string, string[]>();
      const local = this.index.due(now).filter((key) => key !== SHARED_READ);
      for (const entry of [...local.map((key) => entryOf(key, 0)), ...(await this.sharedDue(now))]) {
        const retry = this.retryAt.get(entry.planId) ?? 0;
        if (retry > now) {
          this.index.hold(keyOf(entry.planId, entry.taskId), retry);
          continue;
        }
        const list = due.get(entry.planId) ?? [];
        if (!list.includes(entry.taskId)) list.push(entry.taskId);
        due.set(entry.planId, list);
      }
      const woken: TaskWokenEvent[] = [];
      for (const [planId, taskIds] of due) {
        if (this.closed) break;
        let retryIn: number | null = null;
        try {
          const { events, deferred } = await this.wakePlan(planId, taskIds, now);
          woken.push(...events);
          // Taken by another server: look again once that server's time to fire them is up.
          if (deferred) retryIn = Math.max(this.retryMs, WAKE_TAKEN_MS);
        } catch (error) {
          retryIn = this.retryMs;
          this.hub.metrics.errorsTotal.inc({ kind: 'wake' });
          this.logger.error('could not wake the tasks of a plan; will retry', {
            plan: planId,
            error: describeError(error),
          });
        }
        // What is still due here (deferred, failed, or a task that would not wake) waits before the next try.
        const left = taskIds.filter((taskId) => (this.index.get(keyOf(planId, taskId)) ?? now + 1) <= now);
        if (left.length > 0) retryIn ??= this.retryMs;
        if (retryIn === null) {
          this.retryAt.delete(planId);
          continue;
        }
        this.retryAt.set(planId, now + retryIn);
        for (const taskId of left) this.index.hold(keyOf(planId, taskId), now + retryIn);
      }
      if (this.shared && !this.closed) this.index.set(SHARED_READ, this.nextSharedRead(now));
      for (const event of woken) this.emit('task_woken', [event]);
      return woken;
    };
    const previous = this.sweeping ?? Promise.resolve([]);
    const next = previous.then(run, run).finally(() => {
      if (this.sweeping === next) this.sweeping = null;
    });
    this.sweeping = next;
    return next;
  }

  /** Stops sweeping, waits for a running sweep and writes the index. */
  async close(): Promise<void> {
    this.closed = true;
    this.hub.dueTimes.remove(this.index);
    await this.sweeping?.catch(() => undefined);
    await this.ready.catch(() => undefined);
    await Promise.all(this.sharing);
    await this.persist();
    this.unsubscribe();
  }

  /** A plan loaded: its entries are kept current while it stays loaded. */
  loaded({ planId, doc }: PlanRoom): void {
    if (!this.closed) this.refresh(planId, doc);
  }

  /** Resolves once every change to the index so far is written to its file. */
  persist(): Promise<void> {
    return this.writer.save();
  }

  // ------------------------------------------------------------------ internals

  /** The shared index's due entries (none when there is none, or it cannot be read: the local ones still fire). */
  private async sharedDue(now: number): Promise<WakeEntry[]> {
    if (!this.shared) return [];
    try {
      const { due, next } = await this.shared.due(now);
      this.sharedNext = next;
      return due;
    } catch (error) {
      this.hub.metrics.errorsTotal.inc({ kind: 'wake_index' });
      this.logger.error('could not read the shared wake index', { error: describeError(error) });
      return [];
    }
  }

  /** The soonest wake time in the shared index after the last read. */
  private sharedNext: number | null = null;

  /** Other servers' entries are due here too: the shared index is read again by its soonest time, and often. */
  private nextSharedRead(now: number): number {
    const soon = now + this.maxIntervalMs;
    return this.sharedNext === null ? soon : Math.max(now, Math.min(this.sharedNext, soon));
  }

  /** Writes one entry to the shared index; a failed write is logged (the next change or refresh writes again). */
  private share(planId: string, taskId: string, at: number | null): void {
    if (!this.shared) return;
    const write = this.shared
      .set(planId, taskId, at)
      .catch((error: unknown) => {
        this.hub.metrics.errorsTotal.inc({ kind: 'wake_index' });
        this.logger.error('could not write the shared wake index', {
          plan: planId,
          task: taskId,
          error: describeError(error),
        });
      })
      .finally(() => this.sharing.delete(write));
    this.sharing.add(write);
  }

  private async start(listPlans: (() => Promise<string[]>) | null): Promise<void> {
    if (this.shared) this.index.set(SHARED_READ, this.now() + this.maxIntervalMs);
    if ((await this.readIndex()) || !listPlans) return;
    // No usable index: read every stored plan once. Plans that load meanwhile index themselves.
    let ids: string[] = [];
    try {
      ids = await listPlans();
    } catch (error) {
      this.logger.error('could not list the stored plans to rebuild the wake index', {
        error: describeError(error),
      });
    }
    for (const planId of ids) {
      if (this.closed) break;
      try {
        const handle = await this.hub.openPlan(planId);
        try {
          this.refresh(planId, handle.doc);
        } finally {
          handle.release();
        }
      } catch (error) {
        this.logger.error('could not read a plan to rebuild the wake index', {
          plan: planId,
          error: describeError(error),
        });
      }
    }
    if (ids.length > 0)
      this.logger.info('rebuilt the wake index', { plans: ids.length, waiting: this.entries().length });
    await this.persist();
  }

  /** Loads the index file; false when it is missing or unreadable (then it is rebuilt). */
  private async readIndex(): Promise<boolean> {
    if (!this.file) return false;
    let text: string | null;
    try {
      text = await this.file.read();
    } catch (error) {
      this.logger.warn('could not read the wake index; rebuilding it', { error: describeError(error) });
      return false;
    }
    if (text === null) return false;
    try {
      const parsed = JSON.parse(text) as { version?: unknown; plans?: unknown };
      if (parsed.version !== INDEX_VERSION || typeof parsed.plans !== 'object' || parsed.plans === null) {
        throw new Error(`expected { version: ${INDEX_VERSION}, plans: { planId: { taskId: iso } } }`);
      }
      for (const [planId, tasks] of Object.entries(parsed.plans as Record<string, unknown>)) {
        if (typeof tasks !== 'object' || tasks === null) continue;
        for (const [taskId, iso] of Object.entries(tasks as Record<string, unknown>)) {
          const at = typeof iso === 'string' ? Date.parse(iso) : Number.NaN;
          if (Number.isFinite(at)) this.set(planId, taskId, at);
        }
      }
      return true;
    } catch (error) {
      for (const { planId, taskId } of this.entries()) this.index.set(keyOf(planId, taskId), null);
      this.logger.warn('the wake index is malformed; rebuilding it', { error: describeError(error) });
      return false;
    }
  }

  private indexText(): string {
    const plans: Record<string, Record<string, string>> = {};
    for (const { planId, taskId, at } of this.entries()) {
      const tasks = plans[planId] ?? {};
      tasks[taskId] = new Date(at).toISOString();
      plans[planId] = tasks;
    }
    return `${JSON.stringify({ version: INDEX_VERSION, plans })}\n`;
  }

  /** Tasks of a loaded plan whose wake time may have moved (hub/task-changes.ts). */
  private tasksChanged(planId: string, doc: Y.Doc, taskIds: readonly string[]): void {
    const tasks = doc.getMap<unknown>(DOC_KEYS.tasks);
    let changed = false;
    for (const id of taskIds) changed = this.setFrom(planId, id, tasks.get(id)) || changed;
    if (changed) void this.persist();
  }

  /**
   * Recomputes every entry of a plan from its doc. `swept`: tasks the shared index listed as due, cleared there
   * when the doc says they no longer wait (this server may never have indexed them).
   */
  private refresh(planId: string, doc: Y.Doc, swept: string[] = []): void {
    const tasks = doc.getMap<unknown>(DOC_KEYS.tasks);
    let changed = false;
    for (const { taskId } of this.entries(planId)) {
      if (!tasks.has(taskId)) changed = this.set(planId, taskId, null) || changed;
    }
    for (const [taskId, task] of tasks) changed = this.setFrom(planId, taskId, task) || changed;
    for (const taskId of swept) {
      if (wakeTimeOf(tasks.get(taskId)) === null && !this.index.has(keyOf(planId, taskId))) {
        this.share(planId, taskId, null);
      }
    }
    if (changed) void this.persist();
  }

  private setFrom(planId: string, taskId: string, task: unknown): boolean {
    return this.set(planId, taskId, wakeTimeOf(task));
  }

  /** Sets or (null) clears one entry; true when the index changed. */
  private set(planId: string, taskId: string, at: number | null): boolean {
    if (!this.index.set(keyOf(planId, taskId), at)) return false;
    this.share(planId, taskId, at);
    return true;
  }

  private async wakePlan(
    planId: string,
    dueIds: string[],
    now: number,
  ): Promise<{ events: TaskWokenEvent[]; deferred: boolean }> {
    const handle = await this.hub.openPlan(planId);
    const plan = createPlan({ doc: handle.doc, actor: 'wake', now: this.now });
    const chat = createChat(handle.doc, { actor: 'wake', now: this.now });
    const woken: TaskWokenEvent[] = [];
    let deferred = false;
    try {
      let taskIds = dueIds;
      const once = this.runOnce;
      if (once) {
        taskIds = [];
        for (const taskId of dueIds) {
          const wakeAt = plan.get(taskId)?.wakeAt;
          if (!wakeAt) continue;
          if (await once(`wake:${planId}:${taskId}:${wakeAt}`, WAKE_TAKEN_MS)) taskIds.push(taskId);
          else deferred = true;
        }
      }
      // One transaction: the status flip and its notice reach every client together.
      handle.doc.transact(() => {
        for (const taskId of taskIds) {
          const task = plan.get(taskId);
          if (!task?.wakeAt || !isWaitingStatus(task.status)) continue;
          if (!(Date.parse(task.wakeAt) <= now)) continue;
          try {
            plan.update(taskId, { status: 'in_progress' });
          } catch (error) {
            this.logger.error('could not wake a task', {
              plan: planId,
              task: taskId,
              error: toCairnError(error).message,
            });
            continue;
          }
          const message = chat.append({ role: 'system', text: wakeNotice(task.title, task.nextStep) });
          woken.push({
            planId,
            taskId,
            title: task.title,
            nextStep: task.nextStep,
            wakeAt: task.wakeAt,
            wokenAt: now,
            messageId: message.id,
          });
        }
      }, 'wake');
      // The index follows the doc even where it no longer watches it (a plan loaded once the sweeper closed).
      this.refresh(planId, handle.doc, dueIds);
      await handle.flush();
    } finally {
      chat.destroy();
      plan.destroy();
      handle.release();
    }
    this.wokenTotal.inc({}, woken.length);
    for (const event of woken) {
      this.logger.info('task_woken', { plan: planId, task: event.taskId, wakeAt: event.wakeAt });
    }
    return { events: woken, deferred };
  }
}
