// The hub's one due-time index: every time-driven job of the extensions (wake-ups, lease checks, auto-close
// judging, learning jobs and their settle times) keeps its due times here, in a queue of its own, and one alarm is
// armed for the earliest of them all. The alarm sits behind `Scheduler`, so the host decides what it is: a timer on
// Node, Bun and Deno; the one storage alarm of a Durable Object (docs/decisions/040-one-due-time-index.md).

/** The clock and the single pending alarm the index runs on. */
export interface Scheduler {
  /** Now, in ms since the epoch. */
  now(): number;
  /**
   * Keeps one pending alarm: `fire` is called once at `at` (ms since the epoch) or soon after. Each call replaces
   * the pending alarm; null clears it. A host with an alarm of its own (a Durable Object's `ctx.storage.setAlarm`)
   * stores `at` and calls the index's `runDue()` from its alarm handler instead of `fire`.
   */
  setAlarm(at: number | null, fire: () => void): void;
}

/** The longest delay a timer takes (2^31 - 1 ms); a later alarm fires then and is armed again. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * The scheduler of a host with timers (`setTimeout`, in every runtime): one timer, which does not keep the process
 * alive (`unref` where there is one).
 */
export function timerScheduler(now: () => number = Date.now): Scheduler {
  let timer: ReturnType<typeof setTimeout> | null = null;
  return {
    now,
    setAlarm(at, fire) {
      if (timer !== null) clearTimeout(timer);
      timer = null;
      if (at === null) return;
      timer = setTimeout(
        () => {
          timer = null;
          fire();
        },
        Math.min(MAX_TIMER_MS, Math.max(0, at - now())),
      );
      (timer as { unref?: () => void }).unref?.();
    },
  };
}

/** What a queue's owner does once one of its times is due. */
export type DueRun = (now: number) => unknown;

export interface QueueOptions {
  /** False: the queue keeps its times but never arms the alarm; its owner runs it when it chooses. Default true. */
  armed?: boolean;
}

/**
 * One consumer's due times, by key (a task, a plan, a turn). `run` is called when the earliest is due, never twice
 * at once; it must move or clear every key due by then (a key left due would be run again at once).
 */
export class DueQueue {
  readonly armed: boolean;
  private readonly times = new Map<string, number>();
  /** Keys held back until a later time (a retry), apart from the time they stand for. */
  private readonly holds = new Map<string, number>();
  /** The earliest run time, or undefined when it must be worked out again. */
  private cached: number | null | undefined = null;

  constructor(
    readonly name: string,
    readonly run: DueRun,
    private readonly changed: () => void,
    options: QueueOptions,
  ) {
    this.armed = options.armed ?? true;
  }

  get size(): number {
    return this.times.size;
  }

  get(key: string): number | undefined {
    return this.times.get(key);
  }

  has(key: string): boolean {
    return this.times.has(key);
  }

  /** Every key and its time, in no order. */
  entries(): IterableIterator<[string, number]> {
    return this.times.entries();
  }

  /** Sets a key's time (null: removes it). A changed time drops the key's hold. True when anything changed. */
  set(key: string, at: number | null): boolean {
    const known = this.times.get(key);
    if (at === null) {
      if (known === undefined) return false;
      this.times.delete(key);
      this.holds.delete(key);
      if (this.cached === known) this.cached = undefined;
    } else {
      if (known === at) return false;
      this.times.set(key, at);
      this.holds.delete(key);
      if (known !== undefined && this.cached === known) this.cached = undefined;
      else if (this.cached !== undefined && (this.cached === null || at < this.cached)) this.cached = at;
    }
    this.changed();
    return true;
  }

  /** Sets a key's time only when it is earlier than the one it has (or it has none). */
  setEarlier(key: string, at: number): boolean {
    const known = this.times.get(key);
    return known === undefined || at < known ? this.set(key, at) : false;
  }

  /** Keeps a due key from running before `until` (a retry), without changing the time it stands for. */
  hold(key: string, until: number): void {
    if (!this.times.has(key)) return;
    this.holds.set(key, until);
    this.cached = undefined;
    this.changed();
  }

  /** Removes every key. */
  clear(): void {
    if (this.times.size === 0) return;
    this.times.clear();
    this.holds.clear();
    this.cached = null;
    this.changed();
  }

  /** Keys whose run time (the later of their time and their hold) is at or before `now`. */
  due(now: number): string[] {
    const out: string[] = [];
    for (const [key, at] of this.times) if (this.runAt(key, at) <= now) out.push(key);
    return out;
  }

  /** The keys due by `now`, taken off the queue: for times that run once (a settling turn, a retry). */
  take(now: number): string[] {
    const due = this.due(now);
    for (const key of due) this.set(key, null);
    return due;
  }

  /** The earliest run time of the queue, or null when it is empty. */
  earliest(): number | null {
    if (this.cached === undefined) {
      let next: number | null = null;
      for (const [key, at] of this.times) {
        const runAt = this.runAt(key, at);
        if (next === null || runAt < next) next = runAt;
      }
      this.cached = next;
    }
    return this.cached;
  }

  private runAt(key: string, at: number): number {
    const held = this.holds.get(key);
    return held !== undefined && held > at ? held : at;
  }
}

/**
 * The index: the queues of every consumer and the one alarm for the earliest time among them. Nothing is armed
 * while no queue holds a time, so an idle host keeps no timer (and a Durable Object no alarm).
 */
export class DueTimes {
  private readonly queues: DueQueue[] = [];
  private readonly running = new Map<DueQueue, Promise<void>>();
  /** The alarm asked of the scheduler, so an unchanged earliest time is not asked again (undefined: unknown). */
  private alarm: number | null | undefined = null;
  private armQueued = false;
  private closed = false;
  private runs = 0;

  constructor(readonly scheduler: Scheduler) {}

  now(): number {
    return this.scheduler.now();
  }

  /** How many times a queue's `run` has finished since the start (tests count sweeps with it). */
  get runCount(): number {
    return this.runs;
  }

  /** A queue of one consumer's times; `run` is called once the earliest of them is due. */
  queue(name: string, run: DueRun, options: QueueOptions = {}): DueQueue {
    const queue = new DueQueue(name, run, () => this.arm(), options);
    this.queues.push(queue);
    return queue;
  }

  /** Forgets a queue (its consumer closed): its times no longer arm the alarm. */
  remove(queue: DueQueue): void {
    const at = this.queues.indexOf(queue);
    if (at >= 0) this.queues.splice(at, 1);
    this.arm();
  }

  /** The earliest due time across every armed queue not running now, or null: what the alarm is set to. */
  earliest(): number | null {
    let next: number | null = null;
    for (const queue of this.queues) {
      if (!queue.armed || this.running.has(queue)) continue;
      const at = queue.earliest();
      if (at !== null && (next === null || at < next)) next = at;
    }
    return next;
  }

  /**
   * Runs every armed queue with a time due now (those already running finish first), then arms the alarm for the
   * next time. The alarm's handler: a Durable Object calls it from `alarm()`. Resolves once those runs finished.
   */
  async runDue(): Promise<void> {
    if (this.closed) return;
    const now = this.now();
    const runs: Array<Promise<void>> = [];
    for (const queue of this.queues) {
      if (!queue.armed) continue;
      const running = this.running.get(queue);
      if (running) {
        runs.push(running);
        continue;
      }
      const at = queue.earliest();
      if (at !== null && at <= now) runs.push(this.runQueue(queue, now));
    }
    this.alarm = undefined; // it fired, or was called early: the next arming asks again whatever it is
    this.arm();
    await Promise.all(runs);
  }

  /** Clears the alarm; queues keep their times but nothing runs from now on. */
  close(): void {
    this.closed = true;
    this.alarm = null;
    this.scheduler.setAlarm(null, () => undefined);
  }

  private runQueue(queue: DueQueue, now: number): Promise<void> {
    const done = (async () => {
      try {
        await queue.run(now);
      } catch {
        // A run reports its own failures; one that throws is tried again at its next time.
      } finally {
        this.running.delete(queue);
        this.runs++;
        this.arm();
      }
    })();
    this.running.set(queue, done);
    return done;
  }

  /** Arms the alarm for the earliest time, once per turn of the event loop however many times changed. */
  private arm(): void {
    if (this.armQueued || this.closed) return;
    this.armQueued = true;
    queueMicrotask(() => {
      this.armQueued = false;
      if (this.closed) return;
      const next = this.earliest();
      if (next === this.alarm) return;
      this.alarm = next;
      this.scheduler.setAlarm(next, () => void this.runDue());
    });
  }
}
