// Shares every loaded plan with the other instances of a cluster through Redis (docs/decisions/023, 039): each
// update accepted here is added to the plan's Redis stream at once and published as it is added (decision 063), and
// once PostgreSQL has it a confirmation is set in a key of its own beside the stream (decision 061), which wakes no
// one; each instance takes the entries of the plans it holds as they are pushed, in stream order (`LiveFeed`, and
// stores none of them again), and presence crosses over pub/sub.
// An acknowledgement here never rests on an update another instance has not confirmed (`RelayedUpdates`): it reads
// the confirmations, or stores the update itself when none comes in time. After a lost connection an instance re-reads
// what it missed (from its last entry, and from PostgreSQL for entries Redis itself lost) and re-publishes what it
// could not add, so no update is skipped.

import { randomUUID } from 'node:crypto';
import { CairnError } from '@cairn/core';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as Y from 'yjs';
import type { Extension, ExtensionHost, LoadingRoom, PlanRoom, RoomChange } from '../hub/extension.js';
import { describeError } from '../log.js';
import { LATENCY_BUCKETS } from '../metrics.js';
import { LiveFeed } from './live-feed.js';
import type { RedisClient } from './redis-connection.js';
import { RelayedUpdates, type RelayedUpdatesContext } from './relayed-updates.js';
import {
  ADD_ENTRY,
  ADD_ENTRY_SHA1,
  confirmedKey,
  decodeEntry,
  entryFields,
  entryInstance,
  liveChannel,
  type StreamEntry,
  streamKey,
  updateOf,
} from './stream-entries.js';
import { redactUrl } from './urls.js';

/** How remote updates and presence are marked as they are applied, so they are not sent back. */
export const REDIS_VIA = 'redis';
const AWARENESS_ORIGIN = Symbol('redis awareness');

export interface RedisRelayOptions {
  url: string;
  /** Stream entries older than this are trimmed; a plan loads from PostgreSQL plus the entries kept. Default 2 min. */
  retentionMs?: number;
  /** Every row stored for a plan (PostgreSQL): read after a lost connection, for entries Redis may have lost. */
  readStored: (planId: string) => Promise<Uint8Array[]>;
  /**
   * Resolves once every update of the plan appended to the store so far is committed (the store's flush). The
   * confirmation of this instance's updates is added to the stream only after that.
   */
  stored: (planId: string) => Promise<void>;
  /**
   * Appends an update to the plan's rows in PostgreSQL (the plan is loaded there): at load, what the stream held
   * that the rows read just before lacked (an update not yet committed by its instance, or one committed between
   * the row read and the stream read: stored again, a duplicate Yjs ignores); and a relayed update its instance did
   * not confirm in time. Either way no edit acknowledged here rests on Redis alone.
   */
  append: (planId: string, update: Uint8Array) => void;
  /**
   * How long an instance may stay silent on a plan (no entry of it read) while updates of it are unconfirmed,
   * before this one stores them itself (the other instance may have died before committing them). Default 2,000 ms.
   */
  confirmMs?: number;
}

interface RelayedPlan {
  room: PlanRoom | null;
  /** Stream additions Redis has not answered yet; an acknowledgement waits for them. */
  pending: Set<Promise<unknown>>;
  /** An addition failed: the plan's whole state is re-published once Redis is back; acknowledgements fail until. */
  unpublished: boolean;
  stopAwareness: () => void;
  /** This instance's updates added to the stream (each entry carries its number), and the last one confirmed. */
  published: number;
  confirmed: number;
  /** The confirmation under way, if any; `again`: more updates were added meanwhile. */
  confirming: Promise<void> | null;
  again: boolean;
  /** The other instances' updates applied here that they have not confirmed committing yet. */
  relayed: RelayedUpdates;
}

const presenceChannel = (planId: string) => `cairn:plan:${planId}:presence`;

export class RedisRelay implements Extension {
  readonly name = 'redis-relay';
  /** After the store: loads after it, and acknowledges only once PostgreSQL has the update. */
  readonly priority = 500;
  readonly instanceId = randomUUID();
  private readonly plans = new Map<string, RelayedPlan>();
  /** Plans unloaded while they still had unpublished updates: re-published (from PostgreSQL) once Redis is back. */
  private readonly orphans = new Set<string>();
  private readonly subscriber: RedisClient;
  private readonly feed: LiveFeed;
  private closed = false;
  /**
   * The subscriber lost Redis and has not caught up yet: entries may be missing here, so whether their instance is
   * alive cannot be told, and an acknowledgement stores what it waits for itself instead of waiting for them.
   */
  private feedBehind = false;
  /** The catch-up after the subscriber lost Redis, while it runs; and how many losses were seen. */
  private catchingUp: Promise<void> | null = null;
  private losses = 0;
  /** Reads confirmations that no acknowledgement waits for, and retries failed stream reads. */
  private readonly ticker: ReturnType<typeof setInterval>;
  private readonly counters;
  private readonly relayedContext: RelayedUpdatesContext;

  constructor(
    private readonly host: ExtensionHost,
    private readonly client: RedisClient,
    private readonly options: RedisRelayOptions,
  ) {
    this.subscriber = client.duplicate();
    // Every error of the subscriber's connection is a loss of it: what was pushed meanwhile is read from the stream.
    this.subscriber.on('error', (error: unknown) => this.lostFeed(error));
    const counter = (name: string, help: string) => host.registry.counter(name, help);
    this.counters = {
      published: counter('cairn_cluster_published_total', 'Updates added to Redis streams by this instance.'),
      received: counter('cairn_cluster_received_total', 'Updates from other instances applied here.'),
      presence: counter('cairn_cluster_presence_total', 'Presence updates exchanged with other instances.'),
      catchUps: counter('cairn_cluster_catch_ups_total', 'Catch-ups after a lost Redis connection.'),
      errors: counter('cairn_cluster_errors_total', 'Failed Redis operations.'),
      storedForOthers: counter(
        'cairn_cluster_stored_for_others_total',
        'Relayed updates stored here because their instance did not confirm them in time.',
      ),
      // The two halves of an edit's way to another instance's clients, to tell where a slow delivery waited.
      publishSeconds: host.registry.histogram(
        'cairn_cluster_publish_seconds',
        "From an update's change here to Redis's reply that it is in the plan's stream.",
        LATENCY_BUCKETS,
      ),
      relaySeconds: host.registry.histogram(
        'cairn_cluster_relay_seconds',
        "From another instance's update entering the plan's stream (the entry id's time, whole ms) to its application here.",
        LATENCY_BUCKETS,
      ),
    };
    this.relayedContext = {
      client,
      confirmMs: options.confirmMs ?? 2000,
      behind: () => this.feedBehind,
      append: options.append,
      stored: options.stored,
      storedForOthers: (planId, count) => {
        this.counters.storedForOthers.inc({}, count);
        host.logger.warn('stored relayed updates their instance did not confirm in time', {
          plan: planId,
          updates: count,
        });
      },
      failed: (op, planId, error) => this.failed(op, planId, error),
    };
    this.feed = new LiveFeed({
      client,
      subscriber: this.subscriber,
      connected: this.subscriber.connect(),
      deliver: (planId, entries) => this.applyEntries(planId, entries),
      failed: (op, planId, error) => this.failed(op, planId, error),
    });
    let ticks = 0;
    this.ticker = setInterval(() => {
      for (const plan of this.plans.values()) plan.relayed.storeOverdue();
      // A failed read of a stream is tried again each second while connected (the catch-up does it otherwise).
      if (++ticks % 10 === 0 && !this.feedBehind && this.client.isReady) this.feed.retry();
    }, 100);
    this.ticker.unref();
  }

  async load(room: LoadingRoom): Promise<void> {
    const plan: RelayedPlan = {
      room: null,
      pending: new Set(),
      unpublished: false,
      stopAwareness: () => undefined,
      published: 0,
      confirmed: 0,
      confirming: null,
      again: false,
      relayed: new RelayedUpdates(room.planId, this.relayedContext),
    };
    try {
      // Entries added before this load may not be in PostgreSQL yet: every entry kept is applied too. Those added
      // from now on are pushed, and applied once the room is loaded.
      const entries = await this.feed.open(room.planId);
      const stored = Y.snapshot(room.doc);
      const before = Y.encodeStateVector(room.doc);
      room.apply(entries.flatMap(([, fields]) => updateOf(decodeEntry(fields))));
      if (!Y.equalSnapshots(stored, Y.snapshot(room.doc))) {
        this.options.append(room.planId, Y.encodeStateAsUpdate(room.doc, before));
      }
    } catch (error) {
      // Served from PostgreSQL alone for now; the feed reads the stream from the start once Redis answers.
      this.failed('load', room.planId, error);
    }
    this.plans.set(room.planId, plan);
  }

  loaded(room: PlanRoom): void {
    const plan = this.plans.get(room.planId);
    if (!plan) return;
    plan.room = room;
    const onPresence = (
      { added, updated, removed }: { added: number[]; updated: number[]; removed: number[] },
      origin: unknown,
    ) => {
      if (origin === AWARENESS_ORIGIN) return;
      const update = awarenessProtocol.encodeAwarenessUpdate(room.awareness, [
        ...added,
        ...updated,
        ...removed,
      ]);
      this.publishPresence(room.planId, 'u', update);
    };
    room.awareness.on('update', onPresence);
    const channel = presenceChannel(room.planId);
    const onMessage = (message: string) => this.onPresenceMessage(room.planId, message);
    this.subscriber
      .subscribe(channel, onMessage)
      // Ask the others for the presence they hold, so clients here see everyone at once.
      .then(() => this.publishPresence(room.planId, 'q', new Uint8Array()))
      .catch((error: unknown) => this.failed('subscribe', room.planId, error));
    plan.stopAwareness = () => {
      room.awareness.off('update', onPresence);
      this.subscriber.unsubscribe(channel, onMessage).catch(() => undefined);
    };
    this.feed.start(room.planId);
  }

  /**
   * The relay's look at a change before the store's (its priority is above the store's): the update is shared at
   * once, so the other instances' clients see it without waiting for this commit. node-redis writes what was sent
   * in a `setImmediate`, which this queues ahead of the store's INSERT: the entry leaves first, and is not held
   * while PostgreSQL runs. The confirmation follows the commit (`change`); an acknowledgement on another instance
   * waits for it, or stores the update itself.
   */
  readonly sharing: Extension = {
    name: 'redis-share',
    priority: 1500,
    change: ({ room, update, origin }: RoomChange) => {
      if (origin.source === 'remote' && origin.via === REDIS_VIA) return;
      const plan = this.plans.get(room.planId);
      if (!plan) return;
      plan.published += 1;
      this.publish(room.planId, plan, update, null, plan.published);
    },
  };

  /**
   * After the store appended the change: confirms it once committed. Started in a `setImmediate` of its own, after
   * the entry's write and the INSERT's (its flush would otherwise write the INSERT at once, ahead of the entry).
   */
  change({ room, origin }: RoomChange): void {
    if (origin.source === 'remote' && origin.via === REDIS_VIA) return;
    const plan = this.plans.get(room.planId);
    if (!plan) return;
    setImmediate(() => {
      if (this.plans.get(room.planId) === plan) this.confirm(room.planId, plan);
    });
  }

  async store({ planId }: { planId: string }): Promise<void> {
    const plan = this.plans.get(planId);
    if (!plan) return;
    await Promise.allSettled([...plan.pending]);
    await plan.relayed.durable();
    if (plan.unpublished && plan.room && this.client.isReady) {
      // Redis is back before the reader noticed anything: publish the whole state now instead of waiting.
      plan.unpublished = false;
      // The store's flush ran before this hook (it has the higher priority): the whole state is stored.
      this.publish(planId, plan, Y.encodeStateAsUpdate(plan.room.doc), null);
      await Promise.allSettled([...plan.pending]);
    }
    // A confirmation lost with Redis is sent again, so the others stop waiting for it.
    if (plan.confirmed < plan.published && !plan.confirming && this.client.isReady)
      this.confirm(planId, plan);
    if (plan.unpublished) {
      throw new CairnError(
        'storage',
        `Redis at ${redactUrl(this.options.url)} is unreachable: the update is stored but not yet shared with the other instances.`,
        { planId },
      );
    }
  }

  async unload(room: PlanRoom): Promise<void> {
    const plan = this.plans.get(room.planId);
    if (!plan) return;
    await Promise.allSettled([...plan.pending, plan.confirming]);
    plan.stopAwareness();
    await this.feed.close(room.planId);
    if (plan.unpublished) this.orphans.add(room.planId);
    this.plans.delete(room.planId);
  }

  async destroy(): Promise<void> {
    this.closed = true;
    clearInterval(this.ticker);
    this.subscriber.destroy();
    await this.catchingUp;
    this.client.destroy();
  }

  /**
   * Adds `update` to the plan's stream once `stored` resolved (null: now). With `seq` the entry is this instance's
   * update number `seq`, which the others hold as unconfirmed until its confirmation; without, it is durable already.
   */
  private publish(
    planId: string,
    plan: RelayedPlan,
    update: Uint8Array,
    stored: Promise<void> | null,
    seq?: number,
  ): void {
    const add = () => this.add(planId, entryFields(update, seq));
    const started = performance.now();
    const adding = (stored ? stored.then(add) : add())
      .then(
        () => {
          this.counters.published.inc();
          // Only an edit's own entry: a whole state re-published after an outage waited for the store first.
          if (seq !== undefined) this.counters.publishSeconds.observe((performance.now() - started) / 1000);
        },
        (error: unknown) => {
          // Not stored, or not added: the whole state is published once both work again.
          plan.unpublished = true;
          this.failed('publish', planId, error);
        },
      )
      .finally(() => plan.pending.delete(adding));
    plan.pending.add(adding);
  }

  private get retentionMs(): number {
    return this.options.retentionMs ?? 120_000;
  }

  /** Adds an entry of this instance to the plan's stream and publishes it (`ADD_ENTRY`). */
  private async add(planId: string, fields: string[]): Promise<unknown> {
    const args = [
      '1',
      streamKey(planId),
      liveChannel(planId),
      String(Date.now() - this.retentionMs),
      'i',
      this.instanceId,
      ...fields,
    ];
    try {
      return await this.client.sendCommand(['EVALSHA', ADD_ENTRY_SHA1, ...args]);
    } catch (error) {
      // Redis keeps scripts until it restarts: the first addition after that sends the script itself.
      if (!String((error as Error)?.message).startsWith('NOSCRIPT')) throw error;
      return await this.client.sendCommand(['EVAL', ADD_ENTRY, ...args]);
    }
  }

  /**
   * Confirms this instance's updates published so far once they are committed here (one confirmation covers every
   * earlier number; one is under way at a time). It is set in a key of its own, not added to the stream, so no
   * other instance wakes for it: they read it when they need it. It does not wait for the relayed updates they rest
   * on: every instance reads those from the stream before these, and waits for them itself before acknowledging
   * (waiting here too would make two instances that edit the same plan wait on each other's confirmations).
   */
  private confirm(planId: string, plan: RelayedPlan): void {
    if (plan.confirming) {
      plan.again = true;
      return;
    }
    plan.confirming = (async () => {
      do {
        plan.again = false;
        const upTo = plan.published;
        try {
          await this.options.stored(planId);
          await Promise.all([...plan.pending]);
          await this.client.sendCommand([
            'SET',
            confirmedKey(planId, this.instanceId),
            String(upTo),
            'PX',
            String(this.retentionMs),
          ]);
          plan.confirmed = upTo;
        } catch (error) {
          // Not confirmed: the others store what they relayed of it themselves once they stop waiting.
          this.failed('confirm', planId, error);
          return;
        }
      } while (plan.again && !this.closed);
    })().finally(() => {
      plan.confirming = null;
    });
  }

  private publishPresence(planId: string, kind: 'u' | 'q', update: Uint8Array): void {
    const message = `${kind}${this.instanceId}${Buffer.from(update).toString('base64')}`;
    this.client
      .publish(presenceChannel(planId), message)
      .then(() => this.counters.presence.inc())
      .catch((error: unknown) => this.failed('presence', planId, error));
  }

  private onPresenceMessage(planId: string, message: string): void {
    const kind = message[0];
    const from = message.slice(1, 37);
    if (from === this.instanceId) return;
    const room = this.plans.get(planId)?.room;
    if (!room) return;
    if (kind === 'q') {
      const ids = [...room.awareness.getStates().keys()];
      if (ids.length > 0) {
        this.publishPresence(planId, 'u', awarenessProtocol.encodeAwarenessUpdate(room.awareness, ids));
      }
      return;
    }
    try {
      awarenessProtocol.applyAwarenessUpdate(
        room.awareness,
        Buffer.from(message.slice(37), 'base64'),
        AWARENESS_ORIGIN,
      );
      this.counters.presence.inc();
    } catch (error) {
      this.failed('presence', planId, error);
    }
  }

  /**
   * Applies a plan's entries as the feed hands them over, in order (those of this instance skipped): the updates of
   * one hand-over in one transaction, so a receiving instance pays Yjs's cleanup once for them, and a backlog (after
   * a pause of this instance) clears in one go.
   */
  private applyEntries(planId: string, entries: StreamEntry[]): void {
    const plan = this.plans.get(planId);
    if (!plan?.room) return;
    const updates: Uint8Array[] = [];
    const addedAt: number[] = [];
    const heardAt = Date.now();
    for (const [id, fields] of entries) {
      if (entryInstance(fields) === this.instanceId) continue;
      const entry = decodeEntry(fields);
      plan.relayed.heardFrom(entry.instance, heardAt);
      if (!entry.update) continue; // not an update: nothing else is written to the stream
      updates.push(entry.update);
      addedAt.push(Number.parseInt(id, 10));
      if (entry.seq !== null) plan.relayed.hold(entry.instance, entry.seq, entry.update);
    }
    if (updates.length === 0) return;
    this.applyRemote(planId, plan.room, updates);
    const appliedAt = Date.now();
    for (const at of addedAt) this.counters.relaySeconds.observe(Math.max(0, appliedAt - at) / 1000);
  }

  /** The subscriber lost Redis: catches up once both connections are back (again if it is lost meanwhile). */
  private lostFeed(error: unknown): void {
    this.losses += 1;
    if (this.closed || this.catchingUp) return;
    this.failed('read', null, error);
    this.feedBehind = true;
    this.catchingUp = (async () => {
      while (!this.closed && !(await this.catchUp()));
    })().finally(() => {
      this.feedBehind = false;
      this.catchingUp = null;
    });
  }

  /**
   * Once both connections are back: reads every loaded plan's stream from its last entry (what was pushed while the
   * subscriber was away), re-reads the plan from PostgreSQL (entries lost with a Redis restart are there when
   * acknowledged), re-publishes the whole state of plans whose additions failed, and of plans unloaded meanwhile.
   * False when the subscriber was lost again meanwhile: it is then done again.
   */
  private async catchUp(): Promise<boolean> {
    while (!this.closed) {
      await sleep(200);
      if (!this.subscriber.isReady || !this.client.isReady) continue;
      try {
        await this.client.ping();
        break;
      } catch {}
    }
    if (this.closed) return true;
    const losses = this.losses;
    this.counters.catchUps.inc();
    this.host.logger.warn('redis connection back: catching up', { url: redactUrl(this.options.url) });
    await this.feed.resume();
    for (const [planId, plan] of this.plans) {
      try {
        const stored = await this.options.readStored(planId);
        if (plan.room && stored.length > 0) this.applyRemote(planId, plan.room, [Y.mergeUpdates(stored)]);
        if (plan.unpublished && plan.room) {
          plan.unpublished = false;
          this.publish(planId, plan, Y.encodeStateAsUpdate(plan.room.doc), this.options.stored(planId));
        }
        if (plan.confirmed < plan.published) this.confirm(planId, plan);
      } catch (error) {
        this.failed('catch-up', planId, error);
      }
    }
    for (const planId of [...this.orphans]) {
      if (this.plans.has(planId)) {
        this.orphans.delete(planId);
        continue;
      }
      try {
        const stored = await this.options.readStored(planId);
        await this.add(planId, entryFields(Y.mergeUpdates(stored)));
        this.orphans.delete(planId);
      } catch (error) {
        this.failed('catch-up', planId, error);
      }
    }
    return losses === this.losses;
  }

  /** Applies other instances' updates of a plan in one transaction (a malformed one is logged, the rest get in). */
  private applyRemote(planId: string, room: PlanRoom, updates: Uint8Array[]): void {
    try {
      room.applyRemote(updates, REDIS_VIA, true);
      this.counters.received.inc({}, updates.length);
    } catch (error) {
      this.failed('apply', planId, error);
    }
  }

  private failed(op: string, planId: string | null, error: unknown): void {
    this.counters.errors.inc();
    this.host.metrics.errorsTotal.inc({ kind: `cluster_${op}` });
    this.host.logger.error(`redis ${op} failed`, {
      ...(planId ? { plan: planId } : {}),
      error: describeError(error),
    });
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
