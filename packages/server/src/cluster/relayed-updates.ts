// The other instances' updates of one plan that this instance applied and that their instances have not yet
// confirmed committing (decisions 047 and 061): an acknowledgement here waits until they are durable, reading the
// confirmations beside the stream, or storing them itself once their instance has gone silent on the plan.

import type { RedisClient } from './redis-connection.js';
import { confirmedKey } from './stream-entries.js';

/** A relayed update its instance has not confirmed yet (`seq`: that instance's count for the plan). */
interface Unconfirmed {
  seq: number;
  update: Uint8Array;
  /** Its commit here, once this instance stopped waiting for the confirmation and stored it itself. */
  storing?: Promise<void>;
}

/** What the relay gives each plan's `RelayedUpdates`. */
export interface RelayedUpdatesContext {
  /** Reads the confirmations (`MGET`). */
  client: RedisClient;
  /** How long an instance may stay silent on the plan before its unconfirmed updates are stored here. */
  confirmMs: number;
  /** True while entries may be missing here (the subscriber lost Redis): no instance can be told alive then. */
  behind: () => boolean;
  /** Appends an update to the plan's rows, and resolves once every row appended so far is committed. */
  append: (planId: string, update: Uint8Array) => void;
  stored: (planId: string) => Promise<void>;
  /** Told how many updates of a silent instance were stored here. */
  storedForOthers: (planId: string, count: number) => void;
  failed: (op: string, planId: string, error: unknown) => void;
}

/** How soon an acknowledgement waiting on confirmations reads them again, doubling up to the last. */
const CONFIRMATION_READS_MS = [1, 2, 4, 8, 16, 32, 50];

export class RelayedUpdates {
  /** Relayed updates applied here that their instance has not confirmed yet, by instance. */
  private readonly unconfirmed = new Map<string, Unconfirmed[]>();
  /** Called whenever unconfirmed updates go away (confirmed, or stored here). */
  private readonly waiters = new Set<() => void>();
  /** When each other instance was last heard on this plan: an entry of it read, or its confirmation moving on. */
  private readonly heard = new Map<string, number>();
  /** Overdue relayed updates being stored here. */
  private storingOverdue = false;
  /** The confirmations being read, if they are; and when they were last asked for. */
  private reading: Promise<void> | null = null;
  private readAt = 0;

  constructor(
    private readonly planId: string,
    private readonly context: RelayedUpdatesContext,
  ) {}

  /** An entry of `instance` was read at `at`: it is alive. */
  heardFrom(instance: string, at: number): void {
    this.heard.set(instance, at);
  }

  /** An update of `instance`, its number `seq`, was applied here: held until its instance confirms it. */
  hold(instance: string, seq: number, update: Uint8Array): void {
    const list = this.unconfirmed.get(instance) ?? [];
    list.push({ seq, update });
    this.unconfirmed.set(instance, list);
  }

  /**
   * Resolves once every relayed update applied here so far is durable: confirmed by its instance, or stored here
   * when that instance has gone silent on the plan for `confirmMs` (it may have died before committing it). An
   * instance still adding entries or confirming is alive and only slow: its confirmation is waited for, read again
   * after 1, 2, 4 … up to 50 ms.
   */
  async durable(): Promise<void> {
    const needed = this.last();
    const settled = () =>
      [...needed].every(([instance, seq]) => (this.unconfirmed.get(instance)?.[0]?.seq ?? Infinity) > seq);
    for (let attempt = 0; !settled(); attempt++) {
      if (!this.context.behind()) await this.readConfirmations();
      if (settled()) return;
      const silent = this.context.behind() ? needed : this.silent(needed);
      if (silent.size > 0) {
        await this.store(silent);
        continue;
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      let check: () => void = () => undefined;
      await new Promise<void>((resolve) => {
        check = () => {
          if (settled()) resolve();
        };
        this.waiters.add(check);
        timer = setTimeout(
          resolve,
          CONFIRMATION_READS_MS[Math.min(attempt, CONFIRMATION_READS_MS.length - 1)],
        );
      });
      clearTimeout(timer);
      this.waiters.delete(check);
    }
  }

  /**
   * Reads the confirmations every half `confirmMs` (at most every 500 ms) even when no acknowledgement waits, so
   * confirmed updates are forgotten; those of instances silent for `confirmMs` are then stored here. Called often:
   * it does nothing until then.
   */
  storeOverdue(): void {
    if (this.storingOverdue || this.unconfirmed.size === 0) return;
    if (Date.now() - this.readAt < Math.min(this.context.confirmMs / 2, 500)) return;
    this.storingOverdue = true;
    this.readConfirmations()
      .then(() => {
        const overdue = this.silent(this.last());
        if (overdue.size > 0) return this.store(overdue);
      })
      .catch((error: unknown) => this.context.failed('store', this.planId, error))
      .finally(() => {
        this.storingOverdue = false;
      });
  }

  /**
   * Reads the confirmations of the instances whose relayed updates are unconfirmed here (one read at a time, shared
   * by whoever asks meanwhile). A confirmation that moved on counts as hearing from its instance.
   */
  private readConfirmations(): Promise<void> {
    if (this.reading) return this.reading;
    const instances = [...this.unconfirmed.keys()];
    if (instances.length === 0) return Promise.resolve();
    this.readAt = Date.now();
    this.reading = (async () => {
      try {
        const values = (await this.context.client.sendCommand([
          'MGET',
          ...instances.map((instance) => confirmedKey(this.planId, instance)),
        ])) as Array<string | null>;
        const now = Date.now();
        instances.forEach((instance, i) => {
          const upTo = Number(values[i] ?? Number.NaN);
          if (!((this.unconfirmed.get(instance)?.[0]?.seq ?? Infinity) <= upTo)) return;
          this.heard.set(instance, now);
          this.confirmed(instance, upTo);
        });
      } catch (error) {
        this.context.failed('confirmations', this.planId, error);
      }
    })().finally(() => {
      this.reading = null;
    });
    return this.reading;
  }

  /** The instances among `needed` not heard from on the plan for `confirmMs`. */
  private silent(needed: Map<string, number>): Map<string, number> {
    const since = Date.now() - this.context.confirmMs;
    return new Map([...needed].filter(([instance]) => (this.heard.get(instance) ?? 0) <= since));
  }

  /** Stores here the relayed updates (up to `needed` per instance) their instances did not confirm in time. */
  private async store(needed: Map<string, number>): Promise<void> {
    const appended: Unconfirmed[] = [];
    const storing: Array<Promise<void>> = [];
    for (const [instance, seq] of needed) {
      for (const entry of this.unconfirmed.get(instance) ?? []) {
        if (entry.seq > seq) break;
        // Stored once here, however many callers find it overdue at the same time.
        if (!entry.storing) {
          this.context.append(this.planId, entry.update);
          appended.push(entry);
        } else storing.push(entry.storing);
      }
    }
    if (appended.length > 0) {
      const commit = this.context.stored(this.planId);
      for (const entry of appended) entry.storing = commit;
      storing.push(commit);
    }
    await Promise.all(storing);
    for (const [instance, seq] of needed) this.confirmed(instance, seq);
    if (appended.length > 0) this.context.storedForOthers(this.planId, appended.length);
  }

  /** Forgets the relayed updates of `instance` up to `seq` (durable now) and wakes whoever waits on them. */
  private confirmed(instance: string, seq: number): void {
    const list = this.unconfirmed.get(instance);
    if (!list) return;
    const rest = list.filter((entry) => entry.seq > seq);
    if (rest.length > 0) this.unconfirmed.set(instance, rest);
    else this.unconfirmed.delete(instance);
    for (const waiter of [...this.waiters]) waiter();
  }

  /** The latest unconfirmed relayed update of each instance. */
  private last(): Map<string, number> {
    const last = new Map<string, number>();
    for (const [instance, list] of this.unconfirmed) {
      const entry = list.at(-1);
      if (entry) last.set(instance, entry.seq);
    }
    return last;
  }
}
