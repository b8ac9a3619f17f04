// Hands the relay each loaded plan's stream entries in stream order, each once, as Redis pushes them (decision
// 063). Every entry is published as it is added, with the id of the entry before it (`ADD_ENTRY`), so a reader
// waits on no blocking read that it must issue again after each entry. A message whose previous entry was not
// handed over yet (a message lost with the connection, or sent while subscribing) makes the feed read the stream
// from its last entry first; so does a lost connection, for a plan that stays quiet after it.

import type { RedisClient } from './redis-connection.js';
import {
  compareIds,
  type LiveEntry,
  liveChannel,
  parseLiveMessage,
  type StreamEntry,
  streamKey,
} from './stream-entries.js';

interface FedPlan {
  /** The last entry handed over (or read at open). */
  lastId: string;
  /** Messages not handed over yet, in the order they came. */
  inbox: LiveEntry[];
  /** Handing over has begun (`start`): until then messages wait in the inbox. */
  started: boolean;
  /** The stream is being read: messages wait in the inbox meanwhile. `again`: read once more after it. */
  reading: boolean;
  again: boolean;
  /** A read of the stream failed, or the subscription did: tried again on `retry` and `resume`. */
  stale: boolean;
  subscribed: boolean;
  /** A turn to hand over the inbox is scheduled. */
  scheduled: boolean;
  listener: (message: string) => void;
}

export interface LiveFeedOptions {
  /** Runs commands (the stream reads). */
  client: RedisClient;
  /** The connection in subscriber mode that takes the pushes. */
  subscriber: RedisClient;
  /** Resolves once `subscriber` is connected. */
  connected: Promise<unknown>;
  /** Takes a plan's entries after its last, in order; the pushes of one turn come together. */
  deliver: (planId: string, entries: StreamEntry[]) => void;
  failed: (op: string, planId: string, error: unknown) => void;
}

export class LiveFeed {
  private readonly plans = new Map<string, FedPlan>();

  constructor(private readonly options: LiveFeedOptions) {}

  /**
   * Subscribes to the plan's channel, then reads its whole stream: returns what it holds. What is pushed from then on
   * waits until `start`. On failure the plan stays registered, stale, from the stream's start: `retry` or `resume`
   * reads it whole later, and hands it over then.
   */
  async open(planId: string): Promise<StreamEntry[]> {
    const plan: FedPlan = {
      lastId: '0-0',
      inbox: [],
      started: false,
      reading: true,
      again: false,
      stale: false,
      subscribed: false,
      scheduled: false,
      listener: (message) => this.received(planId, plan, message),
    };
    this.plans.set(planId, plan);
    try {
      await this.subscribe(planId, plan);
      const entries = await this.read(planId, '-');
      plan.lastId = entries.at(-1)?.[0] ?? plan.lastId;
      return entries;
    } catch (error) {
      plan.stale = true;
      throw error;
    } finally {
      plan.reading = false;
    }
  }

  /** Hands over what was pushed since `open`, and from now on every entry as it comes. */
  start(planId: string): void {
    const plan = this.plans.get(planId);
    if (!plan) return;
    plan.started = true;
    // A read asked for before (by `retry` or `resume`) waited for this.
    if (plan.stale || plan.again) void this.fill(planId, plan);
    else this.handOver(planId, plan);
  }

  async close(planId: string): Promise<void> {
    const plan = this.plans.get(planId);
    if (!plan) return;
    this.plans.delete(planId);
    if (plan.subscribed)
      await this.options.subscriber.unsubscribe(liveChannel(planId), plan.listener).catch(() => undefined);
  }

  /** Reads again the stream of every plan whose last read failed. */
  retry(): void {
    for (const [planId, plan] of this.plans) if (plan.stale) void this.fill(planId, plan);
  }

  /**
   * After the subscriber's connection came back (it subscribes again to every channel it had before it is ready):
   * subscribes the plans that never were, and reads every plan's stream from its last entry, so what was pushed
   * while it was away is handed over even to a plan that stays quiet.
   */
  async resume(): Promise<void> {
    await Promise.all([...this.plans].map(([planId, plan]) => this.fill(planId, plan)));
  }

  private async subscribe(planId: string, plan: FedPlan): Promise<void> {
    await this.options.connected;
    await this.options.subscriber.subscribe(liveChannel(planId), plan.listener);
    plan.subscribed = true;
  }

  private read(planId: string, after: string): Promise<StreamEntry[]> {
    const start = after === '-' ? '-' : `(${after}`;
    return this.options.client.sendCommand(['XRANGE', streamKey(planId), start, '+']) as Promise<
      StreamEntry[]
    >;
  }

  private received(planId: string, plan: FedPlan, message: string): void {
    const live = parseLiveMessage(message);
    if (!live) return;
    plan.inbox.push(live);
    // The messages of one socket read arrive in one turn: handed over together, after it.
    if (plan.scheduled) return;
    plan.scheduled = true;
    queueMicrotask(() => {
      plan.scheduled = false;
      this.handOver(planId, plan);
    });
  }

  /**
   * Hands over the inbox in order, skipping what was already handed over, up to a message whose previous entry was
   * not: the stream is then read from the last entry first. `afterRead`: the stream was just read up to now, so a
   * previous entry still missing is gone from it (trimmed), and the message is taken as it is.
   */
  private handOver(planId: string, plan: FedPlan, afterRead = false): void {
    if (!plan.started || plan.reading || this.plans.get(planId) !== plan) return;
    const entries: StreamEntry[] = [];
    let taken = 0;
    for (const { previous, entry } of plan.inbox) {
      if (compareIds(entry[0], plan.lastId) <= 0) {
        taken++;
        continue;
      }
      if (compareIds(previous, plan.lastId) > 0 && !afterRead) break;
      entries.push(entry);
      plan.lastId = entry[0];
      taken++;
    }
    plan.inbox.splice(0, taken);
    if (entries.length > 0) this.options.deliver(planId, entries);
    if (plan.inbox.length > 0) void this.fill(planId, plan);
  }

  /**
   * Reads the plan's stream after its last entry, hands that over, then the inbox. One read at a time, and none
   * before `start` (what it read could not be handed over yet): asked for then, it runs at `start`.
   */
  private async fill(planId: string, plan: FedPlan): Promise<void> {
    if (plan.reading || !plan.started) {
      plan.again = true;
      return;
    }
    plan.reading = true;
    let read = false;
    try {
      do {
        plan.again = false;
        if (!plan.subscribed) await this.subscribe(planId, plan);
        const entries = await this.read(planId, plan.lastId);
        plan.stale = false;
        read = true;
        if (entries.length === 0) continue;
        plan.lastId = entries.at(-1)![0];
        if (this.plans.get(planId) === plan) this.options.deliver(planId, entries);
      } while (plan.again);
    } catch (error) {
      plan.stale = true;
      this.options.failed('read', planId, error);
    } finally {
      plan.reading = false;
    }
    if (read) this.handOver(planId, plan, true);
  }
}
