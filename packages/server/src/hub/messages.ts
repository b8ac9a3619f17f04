// The sync protocol of a room, lib0 style: one handler per message type in a table, the encoders of what the
// server sends, and the mapping of bad input to close codes. y-websocket's sync + awareness, plus Cairn's
// acknowledgement (message 100); other Cairn sub-types go to the hub's extensions.
import { CairnError } from '@cairn/core';
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';
import { describeError, type Logger } from '../log.js';
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
import { type AwarenessEntry, decodeAwarenessUpdate } from './awareness.js';
import type { Connection } from './connection.js';
import type { PlanRoom, RoomMessage } from './extension.js';
import { type Limits, planTooLarge } from './limits.js';
import type { HubMetrics } from './metrics.js';
import { writesSystemRole } from './system-turns.js';
import { changesDoc, type DecodedUpdate } from './updates.js';
import { checkWholeUpdate } from './whole-update.js';

/** What the handlers may read and do in a room (hub/room.ts). */
export interface MessageRoom extends PlanRoom {
  /** Whether an update of `bytes` keeps the plan under `maxDocBytes`. */
  fits(bytes: number): boolean;
  /**
   * Applies a client's update (throws on a malformed one); `message`, the Update message of its own edit, is relayed
   * as it came (see Room.applyFrom).
   */
  applyFrom(conn: Connection, update: Uint8Array, message?: Uint8Array): void;
  /** Bytes of updates held back for missing dependencies. */
  pendingBytes(): number;
  /** Forgets them (see Room.dropPending). */
  dropPending(): void;
  /** Applies the entries of an awareness update `conn` may speak for. */
  receiveAwareness(conn: Connection, update: Uint8Array, entries: readonly AwarenessEntry[]): void;
}

export interface MessageContext {
  limits: Limits;
  metrics: HubMetrics;
  logger: Logger;
  /** Resolves once every edit of the plan so far is durably stored. */
  flush(planId: string): Promise<void>;
  /** The handler of an extension's Cairn sub-type, if one is routed. */
  cairnHandler(subType: number): ((message: RoomMessage) => void) | undefined;
}

type Handler = (ctx: MessageContext, room: MessageRoom, conn: Connection, decoder: decoding.Decoder) => void;

/** A frame the protocol does not allow: the connection is closed with CloseCode.BadMessage. */
class BadMessage extends Error {}

function read<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    throw new BadMessage(`${what}: ${describeError(error)}`);
  }
}

/** The `type` label of each message type, made once: a message is counted before it is handled. */
const TYPE_LABELS: Record<number, { type: string }> = {
  [MessageType.Sync]: { type: 'sync' },
  [MessageType.Awareness]: { type: 'awareness' },
  [MessageType.Auth]: { type: 'auth' },
  [MessageType.QueryAwareness]: { type: 'query_awareness' },
  [MessageType.Cairn]: { type: 'cairn' },
};
const UNKNOWN_TYPE = { type: 'unknown' };

const handlers: Record<number, Handler> = {
  [MessageType.Sync]: (ctx, room, conn, decoder) => sync(ctx, room, conn, decoder),
  [MessageType.Awareness]: (ctx, room, conn, decoder) => {
    const update = read('awareness message', () => decoding.readVarUint8Array(decoder));
    const entries = read('awareness update', () =>
      decodeAwarenessUpdate(update, ctx.limits.maxAwarenessEntries),
    );
    room.receiveAwareness(conn, update, entries);
  },
  [MessageType.QueryAwareness]: (_ctx, room, conn) => {
    const clients = [...room.awareness.getStates().keys()];
    conn.send(awarenessMessage(awarenessProtocol.encodeAwarenessUpdate(room.awareness, clients)));
  },
  [MessageType.Auth]: () => {}, // only the server sends these
  [MessageType.Cairn]: (ctx, room, conn, decoder) => {
    const subType = read('Cairn message type', () => decoding.readVarUint(decoder));
    if (isAckMessageType(subType)) {
      const message = read('Cairn message', () => decodeCairnBody(subType, decoder));
      if (message.type !== 'ack-request') throw new BadMessage(`a client does not send "${message.type}"`);
      acknowledge(ctx, room, conn, message.reqId);
      return;
    }
    const extension = ctx.cairnHandler(subType);
    if (!extension) throw new BadMessage(`unknown Cairn message type ${subType}`);
    runExtension(extension, room, conn, subType, decoder);
  },
};

/** One message from a started connection: handled, or the connection closed with the matching code. */
export function handleMessage(
  ctx: MessageContext,
  room: MessageRoom,
  conn: Connection,
  data: Uint8Array,
): void {
  try {
    const decoder = decoding.createDecoder(data);
    const type = read('message type', () => decoding.readVarUint(decoder));
    ctx.metrics.messagesTotal.inc(TYPE_LABELS[type] ?? UNKNOWN_TYPE);
    const handler = handlers[type];
    if (!handler) throw new BadMessage(`unknown message type ${type}`);
    handler(ctx, room, conn, decoder);
  } catch (error) {
    if (error instanceof BadMessage) {
      ctx.metrics.errorsTotal.inc({ kind: 'bad_message' });
      conn.close(CloseCode.BadMessage, `Bad message: ${error.message}`);
      return;
    }
    ctx.metrics.errorsTotal.inc({ kind: 'internal' });
    ctx.logger.error('failed to handle a message', { plan: room.planId, error: describeError(error) });
    conn.close(CloseCode.Internal, 'Internal error.');
  }
}

// An extension's own input errors (a lib0 decoding error, an invalid_argument) are the client's fault: 4400.
function runExtension(
  handler: (message: RoomMessage) => void,
  room: MessageRoom,
  conn: Connection,
  subType: number,
  decoder: decoding.Decoder,
) {
  try {
    handler({ room, connection: conn, subType, decoder });
  } catch (error) {
    if (error instanceof CairnError && error.code !== 'invalid_argument') throw error;
    throw new BadMessage(`Cairn message type ${subType}: ${describeError(error)}`);
  }
}

function sync(ctx: MessageContext, room: MessageRoom, conn: Connection, decoder: decoding.Decoder): void {
  const step = read('sync message type', () => decoding.readVarUint(decoder));
  const payload = read('sync message', () => decoding.readVarUint8Array(decoder));
  if (step === SyncMessageType.Step1) {
    const diff = read('state vector', () => Y.encodeStateAsUpdate(room.doc, payload));
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
  if (!conn.canWrite) {
    refuseReadOnly(
      ctx,
      room,
      conn,
      read('update', () => Y.decodeUpdate(payload)),
    );
    return;
  }
  // Read to its end before anything is applied, so a truncated update changes nothing.
  read('update', () => checkWholeUpdate(payload));
  const { maxDocBytes } = ctx.limits;
  if (!room.fits(payload.byteLength)) {
    ctx.metrics.refusedUpdatesTotal.inc({ reason: 'plan_too_large' });
    conn.refusal = planTooLarge(maxDocBytes);
    conn.close(CloseCode.PlanTooLarge, `Update refused: the plan would exceed ${maxDocBytes} bytes.`);
    return;
  }
  if (conn.grant.role !== 'admin' && writesSystemRole(room.doc, payload)) {
    ctx.metrics.refusedUpdatesTotal.inc({ reason: 'system_turn' });
    const reason = `Update refused: a "system" chat turn needs role admin, not ${conn.grant.role}.`;
    conn.refusal = new CairnError('forbidden', `${reason} Write "user" or "assistant" turns.`, {
      role: conn.grant.role,
      needs: 'admin',
    });
    conn.close(CloseCode.Forbidden, reason);
    return;
  }
  // A SyncStep2 answers the server's state vector (and repeats the client's whole delete set): only what it adds
  // is relayed, from the 'update' event. An Update is the client's edit, relayed as it came: the very frame when
  // nothing follows the update in it (any decoder reads it as the frame updateMessage would make).
  const edit =
    step !== SyncMessageType.Update
      ? undefined
      : decoder.pos === decoder.arr.byteLength
        ? decoder.arr
        : updateMessage(payload);
  const before = room.pendingBytes();
  if (before === 0) conn.pendingUpdateBytes = 0; // nothing waits: what this connection sent all got in
  read('update', () => room.applyFrom(conn, payload, edit));
  boundPending(ctx, room, conn, before);
}

/**
 * Updates whose dependencies never arrive are held whole in memory, merged again with each new one, and sent to
 * every joiner: a writer could make the server hold, re-merge and send megabytes it never stores. Past either
 * bound, what waits is dropped (it was never stored nor acknowledged; an honest sender still holds it and sends
 * it again with its dependencies on its next sync) and the connection closed.
 */
function boundPending(ctx: MessageContext, room: MessageRoom, conn: Connection, before: number): void {
  const after = room.pendingBytes();
  if (after === 0) {
    conn.pendingUpdateBytes = 0;
    return;
  }
  conn.pendingUpdateBytes += Math.max(0, after - before);
  const { maxPendingBytesPerConnection: perConnection, maxPendingBytesPerPlan: perPlan } = ctx.limits;
  if (conn.pendingUpdateBytes <= perConnection && after <= perPlan) return;
  const [scope, held, limit] =
    after > perPlan
      ? ['This plan', after, perPlan]
      : ['This connection', conn.pendingUpdateBytes, perConnection];
  const reason = `${scope} holds ${held} bytes of updates waiting for missing dependencies; the limit is ${limit}. Dropped.`;
  room.dropPending();
  conn.pendingUpdateBytes = 0;
  ctx.metrics.refusedUpdatesTotal.inc({ reason: 'missing_dependencies' });
  conn.refusal = new CairnError('limit', `${reason} They were never stored.`, {
    maxPendingBytesPerConnection: perConnection,
    maxPendingBytesPerPlan: perPlan,
  });
  conn.close(CloseCode.MissingDependencies, reason);
}

function refuseReadOnly(
  ctx: MessageContext,
  room: MessageRoom,
  conn: Connection,
  update: DecodedUpdate,
): void {
  if (!changesDoc(room.doc, update)) return; // a sync step 2 that repeats what we have is not a write
  ctx.metrics.refusedUpdatesTotal.inc({ reason: 'read_only' });
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
function acknowledge(ctx: MessageContext, room: MessageRoom, conn: Connection, reqId: number): void {
  const { metrics } = ctx;
  if (conn.refusal) {
    metrics.acksTotal.inc({ result: 'refused' });
    conn.send(encodeCairnError(reqId, conn.refusal.code, conn.refusal.message));
    return;
  }
  if (conn.pendingAcks >= ctx.limits.maxPendingAcks) {
    metrics.acksTotal.inc({ result: 'refused' });
    conn.send(
      encodeCairnError(reqId, 'limit', `More than ${ctx.limits.maxPendingAcks} acknowledgements pending.`),
    );
    return;
  }
  const stateVector = Y.encodeStateVector(room.doc);
  conn.pendingAcks++;
  ctx
    .flush(room.planId)
    .then(
      () => {
        metrics.acksTotal.inc({ result: 'ok' });
        conn.send(encodeAck(reqId, stateVector));
      },
      (error: unknown) => {
        metrics.acksTotal.inc({ result: 'error' });
        conn.send(
          encodeCairnError(reqId, 'storage', `The server could not store the plan: ${describeError(error)}`),
        );
      },
    )
    .finally(() => {
      conn.pendingAcks--;
    });
}

/** The server's first messages to a client: its state vector (so the client sends what we lack), then presence. */
export function greeting(doc: Y.Doc, awareness: awarenessProtocol.Awareness): Uint8Array[] {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, MessageType.Sync);
  syncProtocol.writeSyncStep1(encoder, doc);
  const messages: Uint8Array[] = [encoding.toUint8Array(encoder)];
  const clients = [...awareness.getStates().keys()];
  if (clients.length > 0) {
    messages.push(awarenessMessage(awarenessProtocol.encodeAwarenessUpdate(awareness, clients)));
  }
  return messages;
}

export function updateMessage(update: Uint8Array): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, MessageType.Sync);
  syncProtocol.writeUpdate(encoder, update);
  return encoding.toUint8Array(encoder);
}

export function awarenessMessage(update: Uint8Array): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, MessageType.Awareness);
  encoding.writeVarUint8Array(encoder, update);
  return encoding.toUint8Array(encoder);
}
