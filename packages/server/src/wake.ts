// Wake-ups (seed 001): a waiting task whose wakeAt has passed goes back to in_progress (actor `wake`) and the
// plan's chat gets a notice, so the next turn picks it up. An index of wake times (kept current from loaded docs,
// persisted as a small JSON file) finds the due tasks without loading every plan.
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { createChat, createPlan } from '@cairn/core';
import { DOC_KEYS, inline, isWaitingStatus, toCairnError } from '@cairn/core/protocol';
import * as Y from 'yjs';
import type { RunOnce } from './auto-close.js';
import type { Extension, ExtensionHost, PlanRoom } from './hub/extension.js';
import { describeError, type Logger, silentLogger } from './log.js';
import type { Counter } from './metrics.js';

export interface WakeOptions {
  /** Clock in ms since the epoch. Default `Date.now`. */
  now?: () => number;
  /** Where the index is kept (JSON). Null: in memory only, rebuilt at each start. */
  indexPath?: string | null;
  /** Every stored plan id: read to rebuild the index when its file is missing or unreadable. */
  listPlans?: (() => Promise<string[]>) | null;
  /** Sweep on a timer armed for the next wake time (default true); false: only when `sweep()` is called. */
  timer?: boolean;
  /** Longest time between two timed sweeps. Default 60 s. */
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
export class WakeSweeper extends EventEmitter<WakeEvents> implements Extension {
  readonly name = 'wake';
  /** Resolves once the index is loaded or rebuilt. */
  readonly ready: Promise<void>;
  private readonly now: () => number;
  private readonly logger: Logger;
  private readonly indexPath: string | null;
  private readonly useTimer: boolean;
  private readonly maxIntervalMs: number;
  private readonly retryMs: number;
  /** planId -> taskId -> wake time (ms). Only plans with waiting tasks that have a wake time. */
  private readonly index = new Map<string, Map<string, number>>();
  private readonly retryAt = new Map<string, number>();
  private readonly wokenTotal: Counter;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private sweeping: Promise<TaskWokenEvent[]> | null = null;
  private saving: Promise<void> = Promise.resolve();
  private saveQueued = false;
  private closed = false;
  private readonly runOnce: RunOnce | null;
  private readonly shared: SharedWakeIndex | null;
  /** The soonest wake time in the shared index after the last sweep, so the timer wakes for it too. */
  private sharedNext: number | null = null;
  /** Writes to the shared index not yet answered; closing waits for them. */
  private readonly sharing = new Set<Promise<void>>();

  constructor(
    private readonly hub: ExtensionHost,
    options: WakeOptions = {},
  ) {
    super();
    this.runOnce = options.once ?? null;
    this.shared = options.shared ?? null;
    this.now = options.now ?? Date.now;
    this.logger = options.logger ?? silentLogger;
    this.indexPath = options.indexPath ?? null;
    this.useTimer = options.timer ?? true;
    this.maxIntervalMs = options.maxIntervalMs ?? 60_000;
    this.retryMs = options.retryMs ?? 5_000;
    this.wokenTotal = hub.registry.counter('cairn_tasks_woken_total', 'Waiting tasks woken by the sweeper.');
    this.ready = this.start(options.listPlans ?? null);
  }

  /** Every entry of the index, soonest first (optionally of one plan). */
  entries(planId?: string): WakeEntry[] {
    const out: WakeEntry[] = [];
    for (const [id, tasks] of this.index) {
      if (planId !== undefined && id !== planId) continue;
      for (const [taskId, at] of tasks) out.push({ planId: id, taskId, at });
    }
    return out.sort(
      (a, b) => a.at - b.at || a.planId.localeCompare(b.planId) || a.taskId.localeCompare(b.taskId),
    );
  }

  /** The soonest wake time in the index (ms), or null. */
  nextWakeAt(): number | null {
    let next: number | null = null;
    for (const tasks of this.index.values())
      for (const at of tasks.values()) if (next === null || at < next) next = at;
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
      for (const entry of [...this.entries(), ...(await this.sharedDue(now))]) {
        if (entry.at > now) continue;
        if ((this.retryAt.get(entry.planId) ?? 0) > now) continue;
        const list = due.get(entry.planId) ?? [];
        if (!list.includes(entry.taskId)) list.push(entry.taskId);
        due.set(entry.planId, list);
      }
      const woken: TaskWokenEvent[] = [];
      for (const [planId, taskIds] of due) {
        if (this.closed) break;
        try {
          const { events, deferred } = await this.wakePlan(planId, taskIds, now);
          woken.push(...events);
          // Taken by another server: look again once that server's time to fire them is up.
          if (deferred) this.retryAt.set(planId, now + Math.max(this.retryMs, WAKE_TAKEN_MS));
          else this.retryAt.delete(planId);
        } catch (error) {
          this.retryAt.set(planId, now + this.retryMs);
          this.hub.metrics.errorsTotal.inc({ kind: 'wake' });
          this.logger.error('could not wake the tasks of a plan; will retry', {
            plan: planId,
            error: describeError(error),
          });
        }
      }
      for (const event of woken) this.emit('task_woken', event);
      return woken;
    };
    const previous = this.sweeping ?? Promise.resolve([]);
    const next = previous.then(run, run).finally(() => {
      if (this.sweeping === next) this.sweeping = null;
      this.arm();
    });
    this.sweeping = next;
    return next;
  }

  /** Stops the timer, waits for a running sweep and writes the index. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.sweeping?.catch(() => undefined);
    await this.ready.catch(() => undefined);
    await Promise.all(this.sharing);
    await this.persist();
  }

  /** A plan loaded: its entries are kept current while it stays loaded. */
  loaded({ planId, doc }: PlanRoom): void {
    this.watch(planId, doc);
  }

  /** Resolves once every change to the index so far is written to its file. */
  persist(): Promise<void> {
    if (!this.indexPath) return Promise.resolve();
    if (!this.saveQueued) {
      this.saveQueued = true;
      this.saving = this.saving.then(() => {
        this.saveQueued = false;
        return this.write();
      });
    }
    return this.saving;
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
    if (this.readIndex() || !listPlans) {
      this.arm();
      return;
    }
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
    this.arm();
  }

  /** Loads the index file; false when it is missing or unreadable (then it is rebuilt). */
  private readIndex(): boolean {
    if (!this.indexPath) return false;
    let text: string;
    try {
      text = readFileSync(this.indexPath, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
        this.logger.warn('could not read the wake index; rebuilding it', { error: describeError(error) });
      }
      return false;
    }
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
      this.index.clear();
      this.logger.warn('the wake index is malformed; rebuilding it', { error: describeError(error) });
      return false;
    }
  }

  private async write(): Promise<void> {
    if (!this.indexPath) return;
    const plans: Record<string, Record<string, string>> = {};
    for (const [planId, tasks] of this.index) {
      plans[planId] = Object.fromEntries(
        [...tasks].map(([taskId, at]) => [taskId, new Date(at).toISOString()]),
      );
    }
    const tmp = `${this.indexPath}.tmp`;
    try {
      await writeFile(tmp, `${JSON.stringify({ version: INDEX_VERSION, plans })}\n`);
      await rename(tmp, this.indexPath);
    } catch (error) {
      this.hub.metrics.errorsTotal.inc({ kind: 'wake_index' });
      this.logger.error('could not write the wake index', {
        path: this.indexPath,
        error: describeError(error),
      });
    }
  }

  /** Keeps a loaded plan's entries current: all of them now, then each task as it changes. */
  private watch(planId: string, doc: Y.Doc): void {
    if (this.closed) return;
    const tasks = doc.getMap<unknown>(DOC_KEYS.tasks);
    this.refresh(planId, doc);
    // It runs on every change of every task: only a task added, replaced or removed, or a change of its status or
    // wakeAt, can move its wake time (`keysChanged` is a set Yjs keeps anyway; `changes` works out old values).
    tasks.observeDeep((events) => {
      const touched = new Set<string>();
      for (const event of events) {
        if (!(event instanceof Y.YMapEvent)) continue;
        if (event.target === tasks) {
          for (const id of event.keysChanged) if (id !== null) touched.add(id);
        } else if (event.path.length === 1 && WAKE_FIELDS.some((field) => event.keysChanged.has(field))) {
          touched.add(String(event.path[0]));
        }
      }
      let changed = false;
      for (const id of touched) changed = this.setFrom(planId, id, tasks.get(id)) || changed;
      if (changed) this.changed();
    });
  }

  /**
   * Recomputes every entry of a plan from its doc. `swept`: tasks the shared index listed as due, cleared there
   * when the doc says they no longer wait (this server may never have indexed them).
   */
  private refresh(planId: string, doc: Y.Doc, swept: string[] = []): void {
    const tasks = doc.getMap<unknown>(DOC_KEYS.tasks);
    let changed = false;
    for (const taskId of [...(this.index.get(planId)?.keys() ?? [])]) {
      if (!tasks.has(taskId)) changed = this.set(planId, taskId, null) || changed;
    }
    for (const [taskId, task] of tasks) changed = this.setFrom(planId, taskId, task) || changed;
    for (const taskId of swept) {
      if (wakeTimeOf(tasks.get(taskId)) === null && !this.index.get(planId)?.has(taskId)) {
        this.share(planId, taskId, null);
      }
    }
    if (changed) this.changed();
  }

  private setFrom(planId: string, taskId: string, task: unknown): boolean {
    return this.set(planId, taskId, wakeTimeOf(task));
  }

  /** Sets or (null) clears one entry; true when the index changed. */
  private set(planId: string, taskId: string, at: number | null): boolean {
    const tasks = this.index.get(planId);
    if (at === null) {
      if (!tasks?.delete(taskId)) return false;
      if (tasks.size === 0) this.index.delete(planId);
    } else {
      if (tasks?.get(taskId) === at) return false;
      if (tasks) tasks.set(taskId, at);
      else this.index.set(planId, new Map([[taskId, at]]));
    }
    this.share(planId, taskId, at);
    return true;
  }

  private changed(): void {
    void this.persist();
    this.arm();
  }

  /** Arms the timer for the soonest wake time (at most `maxIntervalMs` away). */
  private arm(): void {
    if (!this.useTimer || this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // With a shared index, other servers' entries are due here too: look at least every `maxIntervalMs`.
    const local = this.nextWakeAt();
    const next =
      this.shared === null
        ? local
        : Math.min(local ?? Number.POSITIVE_INFINITY, this.sharedNext ?? this.now() + this.maxIntervalMs);
    if (next === null) return;
    const delay = Math.min(this.maxIntervalMs, Math.max(0, next - this.now()));
    const retrying = [...this.retryAt.values()].some((at) => at > this.now());
    this.timer = setTimeout(() => void this.sweep(), retrying ? Math.max(delay, this.retryMs) : delay);
    this.timer.unref?.();
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
