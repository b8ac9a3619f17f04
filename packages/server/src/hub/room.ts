// One loaded plan: its Y.Doc, its Awareness and the connections on it. Speaks the y-websocket protocol (sync +
// awareness) plus Cairn's acknowledgement message; refuses read-only writes; relays without echo.
import { CairnError } from '@cairn/core';
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';
import type { Logger } from '../log.js';
import { describeError } from '../log.js';
import type { PlanStore } from '../store/store.js';
import {
  AUTH_PERMISSION_DENIED,
  CloseCode,
  decodeCairnBody,
  encodeAck,
  encodeCairnError,
  isAckMessageType,
  MessageType,
  SyncMessageType,
} from '../wire.js';
import { type AwarenessEntry, decodeAwarenessUpdate, encodeAwarenessEntries } from './awareness.js';
import { Connection } from './connection.js';
import type { Limits } from './limits.js';
import type { HubMetrics } from './metrics.js';
import { changesDoc, type DecodedUpdate } from './updates.js';

/** Origin of the transaction that applies stored updates: never stored again, never relayed. */
export const LOAD_ORIGIN = Symbol('cairn:load');

/**
 * Handles a Cairn message of an extension's sub-type (3 and up; claims use 3 to 7), its sub-type already read.
 * Called in the socket's message order once the plan has loaded. Reply with `conn.send`. Throw for bad input
 * (the connection is closed with 4400).
 */
export type CairnMessageHandler = (
  room: Room,
  conn: Connection,
  subType: number,
  decoder: decoding.Decoder,
) => void;

export interface RoomContext {
  /** Extensions' Cairn message handlers, by sub-type. */
  cairnHandlers: ReadonlyMap<number, CairnMessageHandler>;
  store: PlanStore;
  limits: Limits;
  metrics: HubMetrics;
  logger: Logger;
  /** Times a store call into the latency histogram and counts its failure. */
  timed<T>(op: 'load' | 'flush' | 'release', run: () => Promise<T>): Promise<T>;
}

/** A frame the protocol does not allow: the connection is closed with CloseCode.BadMessage. */
class BadMessage extends Error {}

function read<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    throw new BadMessage(`${what}: ${describeError(error)}`);
  }
}

const TYPE_NAMES: Record<number, string> = {
  [MessageType.Sync]: 'sync',
  [MessageType.Awareness]: 'awareness',
  [MessageType.Auth]: 'auth',
  [MessageType.QueryAwareness]: 'query_awareness',
  [MessageType.Cairn]: 'cairn',
};

export class Room {
  readonly planId: string;
  readonly doc = new Y.Doc();
  readonly awareness: awarenessProtocol.Awareness;
  readonly conns = new Set<Connection>();
  state: 'loading' | 'ready' | 'failed' | 'closed' = 'loading';
  /** Server-side users of the doc (openPlan): the room stays loaded while any hold it. */
  holds = 0;
  idleTimer: ReturnType<typeof setTimeout> | null = null;
  readonly loaded: Promise<void>;
  /** Estimated size of the plan: its encoded state at load plus every update since (recomputed near the limit). */
  private docBytes = 0;
  /** Which connection speaks for each awareness client id. */
  private readonly owners = new Map<number, Connection>();
  /** Size of each client's awareness state (its JSON in UTF-8), and their sum: the plan's presence budget. */
  private readonly presenceBytes = new Map<number, number>();
  private presenceTotal = 0;

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

  get idle(): boolean {
    return this.conns.size === 0 && this.holds === 0;
  }

  private async load(previous: Promise<void> | undefined): Promise<void> {
    await previous;
    const updates = await this.ctx.timed('load', () =>
      this.ctx.store.load(this.planId, () => Y.encodeStateAsUpdate(this.doc)),
    );
    Y.transact(
      this.doc,
      () => {
        for (const update of updates) {
          Y.applyUpdate(this.doc, update, LOAD_ORIGIN);
          this.docBytes += update.byteLength;
        }
      },
      LOAD_ORIGIN,
    );
    this.doc.on('update', this.onUpdate);
    this.awareness.on('update', this.onAwareness);
    this.state = 'ready';
    for (const conn of this.conns) this.start(conn);
  }

  add(conn: Connection): void {
    this.conns.add(conn);
    if (this.state === 'ready') this.start(conn);
  }

  /** The connection ended: its presence goes with it. */
  remove(conn: Connection): void {
    if (!this.conns.delete(conn)) return;
    const ids = [...conn.awarenessClients].filter((id) => this.owners.get(id) === conn);
    for (const id of ids) this.owners.delete(id);
    conn.awarenessClients.clear();
    if (ids.length > 0 && this.state === 'ready')
      awarenessProtocol.removeAwarenessStates(this.awareness, ids, 'close');
  }

  /** The store could not load the plan: every waiting client is told to retry later. */
  fail(error: unknown): void {
    this.state = 'failed';
    for (const conn of [...this.conns]) {
      conn.close(CloseCode.Unavailable, `Plan could not be loaded: ${describeError(error)}`);
    }
  }

  destroy(): void {
    this.state = 'closed';
    this.doc.off('update', this.onUpdate);
    this.awareness.off('update', this.onAwareness);
    this.awareness.destroy();
    this.doc.destroy();
  }

  // Server -> client, first: our state vector (so the client sends what we lack), then everyone's presence.
  private start(conn: Connection): void {
    conn.start(() => {
      const encoder = encoding.createEncoder();
      encoding.writeVarUint(encoder, MessageType.Sync);
      syncProtocol.writeSyncStep1(encoder, this.doc);
      conn.send(encoding.toUint8Array(encoder));
      const clients = [...this.awareness.getStates().keys()];
      if (clients.length > 0) {
        conn.send(awarenessMessage(awarenessProtocol.encodeAwarenessUpdate(this.awareness, clients)));
      }
    });
  }

  /** One message from a started connection. */
  handle(conn: Connection, data: Uint8Array): void {
    try {
      this.dispatch(conn, data);
    } catch (error) {
      if (error instanceof BadMessage) {
        this.ctx.metrics.errorsTotal.inc({ kind: 'bad_message' });
        conn.close(CloseCode.BadMessage, `Bad message: ${error.message}`);
        return;
      }
      this.ctx.metrics.errorsTotal.inc({ kind: 'internal' });
      this.ctx.logger.error('failed to handle a message', { plan: this.planId, error: describeError(error) });
      conn.close(CloseCode.Internal, 'Internal error.');
    }
  }

  private dispatch(conn: Connection, data: Uint8Array): void {
    const decoder = decoding.createDecoder(data);
    const type = read('message type', () => decoding.readVarUint(decoder));
    this.ctx.metrics.messagesTotal.inc({ type: TYPE_NAMES[type] ?? 'unknown' });
    switch (type) {
      case MessageType.Sync:
        this.sync(conn, decoder);
        return;
      case MessageType.Awareness: {
        const update = read('awareness message', () => decoding.readVarUint8Array(decoder));
        this.receiveAwareness(conn, update);
        return;
      }
      case MessageType.QueryAwareness: {
        const clients = [...this.awareness.getStates().keys()];
        conn.send(awarenessMessage(awarenessProtocol.encodeAwarenessUpdate(this.awareness, clients)));
        return;
      }
      case MessageType.Auth:
        return; // only the server sends these
      case MessageType.Cairn: {
        const subType = read('Cairn message type', () => decoding.readVarUint(decoder));
        if (isAckMessageType(subType)) {
          const message = read('Cairn message', () => decodeCairnBody(subType, decoder));
          if (message.type !== 'ack-request')
            throw new BadMessage(`a client does not send "${message.type}"`);
          this.acknowledge(conn, message.reqId);
          return;
        }
        const extension = this.ctx.cairnHandlers.get(subType);
        if (!extension) throw new BadMessage(`unknown Cairn message type ${subType}`);
        this.runExtension(extension, conn, subType, decoder);
        return;
      }
      default:
        throw new BadMessage(`unknown message type ${type}`);
    }
  }

  // An extension's own input errors (a lib0 decoding error, an invalid_argument) are the client's fault: 4400.
  private runExtension(
    handler: CairnMessageHandler,
    conn: Connection,
    subType: number,
    decoder: decoding.Decoder,
  ) {
    try {
      handler(this, conn, subType, decoder);
    } catch (error) {
      if (error instanceof CairnError && error.code !== 'invalid_argument') throw error;
      throw new BadMessage(`Cairn message type ${subType}: ${describeError(error)}`);
    }
  }

  private sync(conn: Connection, decoder: decoding.Decoder): void {
    const step = read('sync message type', () => decoding.readVarUint(decoder));
    const payload = read('sync message', () => decoding.readVarUint8Array(decoder));
    if (step === SyncMessageType.Step1) {
      const diff = read('state vector', () => Y.encodeStateAsUpdate(this.doc, payload));
      const encoder = encoding.createEncoder();
      encoding.writeVarUint(encoder, MessageType.Sync);
      encoding.writeVarUint(encoder, SyncMessageType.Step2);
      encoding.writeVarUint8Array(encoder, diff);
      conn.send(encoding.toUint8Array(encoder));
      return;
    }
    if (step !== SyncMessageType.Step2 && step !== SyncMessageType.Update) {
      throw new BadMessage(`unknown sync message type ${step}`);
    }
    // Decoded in full before anything is applied, so a truncated update changes nothing.
    const decoded = read('update', () => Y.decodeUpdate(payload));
    if (!conn.canWrite) {
      this.refuseReadOnly(conn, decoded);
      return;
    }
    const { maxDocBytes } = this.ctx.limits;
    if (this.docBytes + payload.byteLength > maxDocBytes) {
      this.docBytes = Y.encodeStateAsUpdate(this.doc).byteLength;
      if (this.docBytes + payload.byteLength > maxDocBytes) {
        this.ctx.metrics.refusedUpdatesTotal.inc({ reason: 'plan_too_large' });
        conn.refusal = new CairnError('limit', `The plan would exceed ${maxDocBytes} bytes.`, {
          maxDocBytes,
        });
        conn.close(CloseCode.PlanTooLarge, `Update refused: the plan would exceed ${maxDocBytes} bytes.`);
        return;
      }
    }
    read('update', () => Y.applyUpdate(this.doc, payload, conn));
    // Counted whole: parts still waiting for a missing dependency are held in memory too.
    this.docBytes += payload.byteLength;
  }

  private refuseReadOnly(conn: Connection, update: DecodedUpdate): void {
    if (!changesDoc(this.doc, update)) return; // a sync step 2 that repeats what we have is not a write
    this.ctx.metrics.refusedUpdatesTotal.inc({ reason: 'read_only' });
    if (conn.refusal) return; // told once per connection
    const reason = `This connection is read-only (role "${conn.grant.role}"): its edits are neither stored nor relayed.`;
    conn.refusal = new CairnError('forbidden', reason, { role: conn.grant.role });
    const encoder = encoding.createEncoder();
    encoding.writeVarUint(encoder, MessageType.Auth);
    encoding.writeVarUint(encoder, AUTH_PERMISSION_DENIED);
    encoding.writeVarString(encoder, reason);
    conn.send(encoding.toUint8Array(encoder));
  }

  // Everything this connection sent before is applied (messages are handled in order): wait for the store to make
  // it durable, then tell the client which state is safe.
  private acknowledge(conn: Connection, reqId: number): void {
    const { metrics } = this.ctx;
    if (conn.refusal) {
      metrics.acksTotal.inc({ result: 'refused' });
      conn.send(encodeCairnError(reqId, conn.refusal.code, conn.refusal.message));
      return;
    }
    if (conn.pendingAcks >= this.ctx.limits.maxPendingAcks) {
      metrics.acksTotal.inc({ result: 'refused' });
      conn.send(
        encodeCairnError(
          reqId,
          'limit',
          `More than ${this.ctx.limits.maxPendingAcks} acknowledgements pending.`,
        ),
      );
      return;
    }
    const stateVector = Y.encodeStateVector(this.doc);
    conn.pendingAcks++;
    this.ctx
      .timed('flush', () => this.ctx.store.flush(this.planId))
      .then(
        () => {
          metrics.acksTotal.inc({ result: 'ok' });
          conn.send(encodeAck(reqId, stateVector));
        },
        (error: unknown) => {
          metrics.acksTotal.inc({ result: 'error' });
          conn.send(
            encodeCairnError(
              reqId,
              'storage',
              `The server could not store the plan: ${describeError(error)}`,
            ),
          );
        },
      )
      .finally(() => {
        conn.pendingAcks--;
      });
  }

  private receiveAwareness(conn: Connection, update: Uint8Array): void {
    const { maxAwarenessEntries } = this.ctx.limits;
    const entries = read('awareness update', () => decodeAwarenessUpdate(update, maxAwarenessEntries));
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
    for (const conn of this.conns) if (conn !== from && conn.started) conn.send(message);
  };

  private readonly onUpdate = (update: Uint8Array, origin: unknown): void => {
    if (origin === LOAD_ORIGIN) return;
    const { metrics } = this.ctx;
    if (!(origin instanceof Connection)) this.docBytes += update.byteLength;
    metrics.updatesTotal.inc();
    metrics.updateBytesTotal.inc({}, update.byteLength);
    // Relayed before it is stored: peers holding an edit the store has not saved lose nothing (they and the writer
    // keep it and resend it on reconnect), and acknowledgements wait for the store (see acknowledge).
    const encoder = encoding.createEncoder();
    encoding.writeVarUint(encoder, MessageType.Sync);
    syncProtocol.writeUpdate(encoder, update);
    const message = encoding.toUint8Array(encoder);
    for (const conn of this.conns) if (conn !== origin && conn.started) conn.send(message);
    try {
      this.ctx.store.append(this.planId, update);
    } catch (error) {
      // The doc keeps the edit and the store repairs itself by a rewrite; until then acknowledgements fail.
      metrics.errorsTotal.inc({ kind: 'store_append' });
      this.ctx.logger.error('could not store an update', { plan: this.planId, error: describeError(error) });
    }
  };
}

const utf8 = new TextEncoder();

function utf8Bytes(text: string): number {
  return utf8.encode(text).byteLength;
}

function awarenessMessage(update: Uint8Array): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, MessageType.Awareness);
  encoding.writeVarUint8Array(encoder, update);
  return encoding.toUint8Array(encoder);
}
