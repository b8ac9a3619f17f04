// One loaded plan: its Y.Doc, its Awareness, the connections on it and who holds it. Relays updates and
// presence without echo and hands every update to the extensions; the protocol that feeds it is in messages.ts.
import { CairnError } from '@cairn/core';
import { remoteOrigin } from '@cairn/core/protocol';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as Y from 'yjs';
import { utf8Bytes } from '../bytes.js';
import { describeError } from '../log.js';
import { CloseCode } from '../wire.js';
import { type AwarenessEntry, encodeAwarenessEntries } from './awareness.js';
import { Connection } from './connection.js';
import type { Extensions } from './extensions.js';
import type { Limits } from './limits.js';
import { awarenessMessage, greeting, type MessageRoom, updateMessage } from './messages.js';
import type { HubMetrics } from './metrics.js';
import { LOAD_ORIGIN, originOf } from './origin.js';

export interface RoomContext {
  limits: Limits;
  metrics: HubMetrics;
  extensions: Extensions;
}

export class Room implements MessageRoom {
  readonly planId: string;
  readonly doc = new Y.Doc();
  readonly awareness: awarenessProtocol.Awareness;
  private readonly connections = new Set<Connection>();
  private current: 'loading' | 'ready' | 'failed' | 'closed' = 'loading';
  /** Server-side users of the doc (openPlan): the room stays loaded while any hold it. */
  private holds = 0;
  private idleTimer: ReturnType<typeof setTimeout> | null = null;
  readonly loaded: Promise<void>;
  /** Estimated size of the plan: its encoded state at load plus every update since (recomputed near the limit). */
  private docBytes = 0;
  /** Which connection speaks for each awareness client id. */
  private readonly owners = new Map<number, Connection>();
  /** Size of each client's awareness state (its JSON in UTF-8), and their sum: the plan's presence budget. */
  private readonly presenceBytes = new Map<number, number>();
  private presenceTotal = 0;
  /**
   * The origin (a connection, or a remote batch) of the transaction being applied whose updates have already been
   * relayed whole, as they came: its 'update' event is not relayed again.
   */
  private relayedBy: Connection | object | null = null;
  /**
   * A transaction that applied one update, integrated whole, and nothing else: that update is what the transaction
   * changed, so it is handed to the extensions as it came instead of Yjs encoding the transaction again.
   */
  private asItCame: { transaction: Y.Transaction; update: Uint8Array } | null = null;

  constructor(
    planId: string,
    private readonly ctx: RoomContext,
    /** The previous room of this plan, still releasing the store. */
    previous: Promise<void> | undefined,
  ) {
    this.planId = planId;
    this.awareness = new awarenessProtocol.Awareness(this.doc);
    this.awareness.setLocalState(null); // the server has no presence of its own
    this.loaded = this.load(previous);
  }

  get state(): 'loading' | 'ready' | 'failed' | 'closed' {
    return this.current;
  }

  get conns(): ReadonlySet<Connection> {
    return this.connections;
  }

  /** Nobody uses it: no connection, no hold. */
  get idle(): boolean {
    return this.connections.size === 0 && this.holds === 0;
  }

  /** A server-side user starts using the doc; returns the (idempotent) end of that use. */
  hold(): () => void {
    this.holds++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.holds--;
    };
  }

  /** Calls `unload` once the room has been idle and ready for `ms`, unless used again before. */
  whenIdle(ms: number, unload: () => void): void {
    if (!this.idle || this.current !== 'ready' || this.idleTimer) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      unload();
    }, ms);
    this.idleTimer.unref?.();
  }

  /** Used again (or closing): no idle unload is pending. */
  cancelIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }

  private async load(previous: Promise<void> | undefined): Promise<void> {
    await previous;
    const loading = {
      planId: this.planId,
      doc: this.doc,
      snapshot: () => Y.encodeStateAsUpdate(this.doc),
      apply: (updates: readonly Uint8Array[]) =>
        Y.transact(
          this.doc,
          () => {
            for (const update of updates) {
              Y.applyUpdate(this.doc, update, LOAD_ORIGIN);
              this.docBytes += update.byteLength;
            }
          },
          LOAD_ORIGIN,
        ),
    };
    await this.ctx.extensions.load(loading, this);
    this.doc.on('afterTransactionCleanup', this.onTransactionEnd);
    this.doc.on('update', this.onUpdate);
    this.awareness.on('update', this.onAwareness);
    this.current = 'ready';
    // Before the first client's messages are handled, so extensions watching the doc miss nothing.
    this.ctx.extensions.loaded(this);
    for (const conn of this.connections) this.start(conn);
  }

  add(conn: Connection): void {
    this.connections.add(conn);
    if (this.current === 'ready') this.start(conn);
  }

  /** The connection ended: its presence goes with it. */
  remove(conn: Connection): void {
    if (!this.connections.delete(conn)) return;
    const ids = [...conn.awarenessClients].filter((id) => this.owners.get(id) === conn);
    for (const id of ids) this.owners.delete(id);
    conn.awarenessClients.clear();
    if (ids.length > 0 && this.current === 'ready')
      awarenessProtocol.removeAwarenessStates(this.awareness, ids, 'close');
  }

  /** The store could not load the plan: every waiting client is told to retry later. */
  fail(error: unknown): void {
    this.current = 'failed';
    for (const conn of [...this.connections]) {
      conn.close(CloseCode.Unavailable, `Plan could not be loaded: ${describeError(error)}`);
    }
  }

  destroy(): void {
    this.current = 'closed';
    this.cancelIdle();
    this.doc.off('afterTransactionCleanup', this.onTransactionEnd);
    this.doc.off('update', this.onUpdate);
    this.awareness.off('update', this.onAwareness);
    this.awareness.destroy();
    this.doc.destroy();
  }

  private start(conn: Connection): void {
    conn.start(() => {
      for (const message of greeting(this.doc, this.awareness)) conn.send(message);
    });
  }

  fits(bytes: number): boolean {
    const { maxDocBytes } = this.ctx.limits;
    if (this.docBytes + bytes <= maxDocBytes) return true;
    this.docBytes = Y.encodeStateAsUpdate(this.doc).byteLength;
    return this.docBytes + bytes <= maxDocBytes;
  }

  /** Bytes of updates the doc holds back for missing dependencies (Yjs keeps them merged, outside the doc). */
  pendingBytes(): number {
    const { pendingStructs, pendingDs } = this.doc.store;
    return (pendingStructs?.update.byteLength ?? 0) + (pendingDs?.byteLength ?? 0);
  }

  private holdsBack(): boolean {
    const { pendingStructs, pendingDs } = this.doc.store;
    return pendingStructs !== null || pendingDs !== null;
  }

  /** Forgets the updates waiting for missing dependencies: never integrated, so never stored nor acknowledged. */
  dropPending(): void {
    this.doc.store.pendingStructs = null;
    this.doc.store.pendingDs = null;
  }

  /**
   * Applies updates from another server in one transaction: Yjs's cleanup after a transaction (its observers, the
   * extensions' `change`, the merge of what it deleted) runs once for the batch instead of once per update, which
   * is what a relayed update cost a receiving instance. Each update is relayed to the clients as it is integrated,
   * as a client's own edit is (applyRelayingEach), so the first client is not kept waiting by the rest. An update
   * that fails to integrate keeps none of the others out; the first failure is thrown once they are in.
   */
  applyRemote(updates: Uint8Array | readonly Uint8Array[], via: string, stored = false): void {
    if (this.current !== 'ready') {
      throw new CairnError('conflict', `Plan "${this.planId}" is not loaded here any more.`, {
        planId: this.planId,
      });
    }
    this.applyRelayingEach(updates instanceof Uint8Array ? [updates] : updates, remoteOrigin(via, stored));
  }

  /**
   * Applies a connection's update. A client's own edit (an Update `message`) is relayed as it came, once Yjs has
   * integrated it and before the transaction's observers and extensions run: what peers wait for is the
   * integration, not the server's bookkeeping (about 0.2 ms per edit, and a GC pause there held every peer). An
   * update that fails to integrate throws before it is relayed, so nothing the server could not apply reaches a
   * peer; the 'update' event then relays what got in, as for every other change.
   */
  applyFrom(conn: Connection, update: Uint8Array, message?: Uint8Array): void {
    if (message) this.applyRelayingEach([update], conn, [message]);
    else Y.applyUpdate(this.doc, update, conn);
    // Counted whole: parts still waiting for a missing dependency are held in memory too.
    this.docBytes += update.byteLength;
  }

  /**
   * Applies updates in one transaction, each relayed to the other clients as soon as Yjs has integrated it, before
   * the transaction's observers, extensions and re-encoding run. An update that fails to integrate is not relayed
   * and keeps none of the others out; the first failure is thrown once the transaction has ended.
   */
  private applyRelayingEach(
    updates: readonly Uint8Array[],
    origin: Connection | object,
    /** The Update message of each, when the caller has it (a client's frame): relayed as is. */
    messages?: readonly Uint8Array[],
  ): void {
    // With updates held back for a missing dependency, one of these may let them in, in the same transaction; and
    // a failed update may have got in part. Then the transaction's 'update' event, which carries them, is relayed
    // too (peers may get an update twice, which Yjs ignores).
    let relayedWhole = !this.holdsBack();
    // Joined to a transaction already running, these updates are not all that it changes.
    const ownTransaction = this.doc._transaction === null;
    const failures: unknown[] = [];
    try {
      Y.transact(
        this.doc,
        (transaction) => {
          updates.forEach((update, i) => {
            try {
              Y.applyUpdate(this.doc, update, origin); // joins this transaction: its cleanup waits for the relay
            } catch (error) {
              failures.push(error);
              relayedWhole = false;
              return;
            }
            this.relay(messages?.[i] ?? updateMessage(update), origin);
          });
          if (!relayedWhole) return;
          this.relayedBy = origin;
          // Nothing held back, before or after: the transaction changed exactly what the update holds (or less, where
          // the doc had part of it already; storing that part again is harmless).
          if (updates.length === 1 && ownTransaction && !this.holdsBack())
            this.asItCame = { transaction, update: updates[0]! };
        },
        origin,
      );
    } finally {
      this.relayedBy = null;
      this.asItCame = null;
    }
    if (failures.length > 0) throw failures[0];
  }

  private relay(message: Uint8Array, from: unknown): void {
    for (const conn of this.connections) if (conn !== from && conn.started) conn.send(message);
  }

  receiveAwareness(conn: Connection, update: Uint8Array, entries: readonly AwarenessEntry[]): void {
    const allowed = this.admitPresence(conn, entries);
    if (allowed.length === 0) return;
    const filtered = allowed.length === entries.length ? update : encodeAwarenessEntries(allowed);
    awarenessProtocol.applyAwarenessUpdate(this.awareness, filtered, conn);
    const states = this.awareness.getStates();
    for (const entry of allowed) {
      if (states.has(entry.clientId)) this.setPresenceBytes(entry.clientId, utf8Bytes(entry.json));
      else this.setPresenceBytes(entry.clientId, 0);
    }
  }

  // The caps hold within one message too: each new client id counts against the connection's cap as it is
  // admitted, and each state against the plan's presence budget, so one frame of many entries cannot bypass them.
  private admitPresence(conn: Connection, entries: readonly AwarenessEntry[]): AwarenessEntry[] {
    const { maxAwarenessClients, maxAwarenessStateBytes, maxPresenceBytes } = this.ctx.limits;
    const admittedIds = new Set<number>();
    let total = this.presenceTotal;
    const out: AwarenessEntry[] = [];
    let overLimit = 0;
    for (const entry of entries) {
      // Others' states are dropped silently: a stock client echoes every change it hears.
      if (!this.mayOwn(conn, entry)) continue;
      if (!entry.removed) {
        const size = utf8Bytes(entry.json);
        const next = total - (this.presenceBytes.get(entry.clientId) ?? 0) + size;
        const isNew = !this.owners.has(entry.clientId) && !admittedIds.has(entry.clientId);
        const full = isNew && conn.awarenessClients.size + admittedIds.size >= maxAwarenessClients;
        if (full || size > maxAwarenessStateBytes || next > maxPresenceBytes) {
          overLimit++;
          continue;
        }
        total = next;
        if (!this.owners.has(entry.clientId)) admittedIds.add(entry.clientId);
      }
      out.push(entry);
    }
    if (overLimit > 0) this.ctx.metrics.refusedUpdatesTotal.inc({ reason: 'presence_limit' }, overLimit);
    return out;
  }

  // A connection speaks for the client ids it announced first; another connection of the same subject may take
  // one over (a reconnect before the old socket timed out); nobody else can change or clear it.
  private mayOwn(conn: Connection, entry: AwarenessEntry): boolean {
    if (entry.clientId === this.awareness.clientID) return false;
    const owner = this.owners.get(entry.clientId);
    if (!owner || owner === conn) return true;
    return owner.grant.sub === conn.grant.sub && !entry.removed;
  }

  private setPresenceBytes(clientId: number, bytes: number): void {
    this.presenceTotal += bytes - (this.presenceBytes.get(clientId) ?? 0);
    if (bytes === 0) this.presenceBytes.delete(clientId);
    else this.presenceBytes.set(clientId, bytes);
  }

  private readonly onAwareness = (
    { added, updated, removed }: { added: number[]; updated: number[]; removed: number[] },
    origin: unknown,
  ): void => {
    const from = origin instanceof Connection ? origin : null;
    if (from) {
      for (const id of [...added, ...updated]) {
        const owner = this.owners.get(id);
        if (owner !== from) {
          owner?.awarenessClients.delete(id);
          this.owners.set(id, from);
          from.awarenessClients.add(id);
        }
      }
    }
    for (const id of removed) {
      this.owners.get(id)?.awarenessClients.delete(id);
      this.owners.delete(id);
      this.setPresenceBytes(id, 0);
    }
    const changed = [...added, ...updated, ...removed];
    const message = awarenessMessage(awarenessProtocol.encodeAwarenessUpdate(this.awareness, changed));
    for (const conn of this.connections) if (conn !== from && conn.started) conn.send(message);
  };

  /**
   * Right before Yjs encodes a transaction's update for the 'update' event, which it does only while someone
   * listens: for a transaction that applied one update whole, the room stops listening and takes that update as
   * it came (the encoding was a tenth of the server's own work per edit); for any other, it listens.
   */
  private readonly onTransactionEnd = (transaction: Y.Transaction): void => {
    const whole = this.asItCame?.transaction === transaction ? this.asItCame : null;
    this.asItCame = null;
    if (whole === null) {
      this.doc.on('update', this.onUpdate); // a Set: listening twice is listening once
      return;
    }
    this.doc.off('update', this.onUpdate);
    if (changedDoc(transaction)) this.changed(whole.update, transaction.origin, true);
  };

  private readonly onUpdate = (update: Uint8Array, yOrigin: unknown): void => {
    if (yOrigin === LOAD_ORIGIN) return;
    this.changed(update, yOrigin, yOrigin === this.relayedBy);
  };

  /** The plan changed by `update`: relayed unless it already was, then handed to the extensions. */
  private changed(update: Uint8Array, yOrigin: unknown, relayed: boolean): void {
    const origin = originOf(yOrigin);
    if (origin.source !== 'connection') this.docBytes += update.byteLength;
    // Relayed before it is stored: peers holding an edit the store has not saved lose nothing (they and the writer
    // keep it and resend it on reconnect), and acknowledgements wait for the store (see acknowledge).
    if (!relayed) this.relay(updateMessage(update), yOrigin);
    this.ctx.extensions.change({ room: this, update, origin });
  }
}

/** Whether a transaction changed the doc: what Yjs checks before it emits 'update' (a repeated update does not). */
function changedDoc(transaction: Y.Transaction): boolean {
  if (transaction.deleteSet.clients.size > 0) return true;
  for (const [client, clock] of transaction.afterState)
    if (transaction.beforeState.get(client) !== clock) return true;
  return false;
}
