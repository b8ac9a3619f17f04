// The wire of Cairn's sync protocol (docs/PROTOCOL.md): message type numbers, close codes and the codec of the
// Cairn-specific messages, shared by the client adapter and the server. Platform-neutral: only lib0's byte codecs.
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';

/** The first varUint of every frame. 0 to 3 are y-websocket's, 100 is Cairn's (write acknowledgement). */
export const MessageType = {
  Sync: 0,
  Awareness: 1,
  Auth: 2,
  QueryAwareness: 3,
  Cairn: 100,
} as const;

/** The second varUint of a Sync message (y-protocols/sync). */
export const SyncMessageType = { Step1: 0, Step2: 1, Update: 2 } as const;

/** The second varUint of an Auth message (y-protocols/auth); followed by a varString reason. */
export const AUTH_PERMISSION_DENIED = 0;

/** The second varUint of a Cairn message. */
export const CairnMessageType = {
  /** client -> server: [100, 0, reqId] */
  AckRequest: 0,
  /** server -> client: [100, 1, reqId, stateVector] */
  Ack: 1,
  /** server -> client: [100, 2, reqId, code, message] */
  Error: 2,
} as const;

/**
 * WebSocket close codes the server uses. 4400-4499 mean "reconnecting will not help" (y-websocket stops
 * retrying on them), 4500-4599 and 1001 mean "try again later".
 */
export const CloseCode = {
  /** The server is shutting down. */
  GoingAway: 1001,
  /** Set by the socket layer for a frame far above the message limit, before it is even buffered. */
  MessageTooBig: 1009,
  /** A frame that is not a valid message: garbage, truncated, an unknown type, a text frame. */
  BadMessage: 4400,
  /** No token, a bad signature, an expired or malformed token. */
  Unauthorized: 4401,
  /** A valid token without the right to this plan. */
  Forbidden: 4403,
  /** A message whose fragments did not all arrive within the server's time limit for one message. */
  MessageTimeout: 4408,
  /** A message larger than the server's message limit (finished, or still arriving in fragments). */
  MessageTooLarge: 4413,
  /** An update that would grow the plan past the server's document limit. */
  PlanTooLarge: 4414,
  /** Updates waiting for dependencies that never arrived passed the server's bound (they are dropped, never stored). */
  MissingDependencies: 4424,
  /** Too many messages or bytes per second, or too many queued before the plan loaded. */
  RateLimited: 4429,
  /** A bug on the server side. */
  Internal: 4500,
  /** The plan could not be loaded from the store, or the client reads too slowly; retry later. */
  Unavailable: 4503,
} as const;

export type CloseCodeName = keyof typeof CloseCode;

/** The subprotocol a Cairn client offers (and the server selects) when it sends its token as a subprotocol. */
export const SUBPROTOCOL = 'cairn.v1';
/** A token travels as the subprotocol `cairn.token.<jwt>` (JWTs use only characters a subprotocol allows). */
export const TOKEN_SUBPROTOCOL_PREFIX = 'cairn.token.';
/** The sync endpoint: `/sync/<encodeURIComponent(planId)>`. */
export const SYNC_PATH_PREFIX = '/sync/';

/** The path of a plan's sync endpoint. */
export function syncPath(planId: string): string {
  return SYNC_PATH_PREFIX + encodeURIComponent(planId);
}

export type CairnWireMessage =
  | { type: 'ack-request'; reqId: number }
  | { type: 'ack'; reqId: number; stateVector: Uint8Array }
  | { type: 'error'; reqId: number; code: string; message: string };

export function encodeAckRequest(reqId: number): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, MessageType.Cairn);
  encoding.writeVarUint(encoder, CairnMessageType.AckRequest);
  encoding.writeVarUint(encoder, reqId);
  return encoding.toUint8Array(encoder);
}

export function encodeAck(reqId: number, stateVector: Uint8Array): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, MessageType.Cairn);
  encoding.writeVarUint(encoder, CairnMessageType.Ack);
  encoding.writeVarUint(encoder, reqId);
  encoding.writeVarUint8Array(encoder, stateVector);
  return encoding.toUint8Array(encoder);
}

/** `code` is a CairnError code (`forbidden`, `storage`, `limit`, ...). */
export function encodeCairnError(reqId: number, code: string, message: string): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, MessageType.Cairn);
  encoding.writeVarUint(encoder, CairnMessageType.Error);
  encoding.writeVarUint(encoder, reqId);
  encoding.writeVarString(encoder, code);
  encoding.writeVarString(encoder, message);
  return encoding.toUint8Array(encoder);
}

/**
 * Reads the rest of a Cairn message, the leading `100` already read. Throws on a truncated frame or an unknown
 * sub-type (the caller treats both as a bad message).
 */
export function decodeCairnMessage(decoder: decoding.Decoder): CairnWireMessage {
  return decodeCairnBody(decoding.readVarUint(decoder), decoder);
}

/** True for the sub-types of the write acknowledgement (0 to 2); others belong to extensions (e.g. claims). */
export function isAckMessageType(type: number): boolean {
  return (
    type === CairnMessageType.AckRequest || type === CairnMessageType.Ack || type === CairnMessageType.Error
  );
}

/** Like `decodeCairnMessage`, the sub-type already read. */
export function decodeCairnBody(type: number, decoder: decoding.Decoder): CairnWireMessage {
  const reqId = decoding.readVarUint(decoder);
  switch (type) {
    case CairnMessageType.AckRequest:
      return { type: 'ack-request', reqId };
    case CairnMessageType.Ack:
      return { type: 'ack', reqId, stateVector: decoding.readVarUint8Array(decoder) };
    case CairnMessageType.Error:
      return {
        type: 'error',
        reqId,
        code: decoding.readVarString(decoder),
        message: decoding.readVarString(decoder),
      };
    default:
      throw new Error(`unknown Cairn message type ${type}`);
  }
}

/** The empty awareness update [1, [0]] the server sends an idle client so its "no message in 30 s" watchdog holds. */
export function encodeKeepAlive(): Uint8Array {
  return Uint8Array.of(MessageType.Awareness, 1, 0);
}
