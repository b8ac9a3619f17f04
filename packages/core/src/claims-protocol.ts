// The claim messages of Cairn's sync protocol (docs/PROTOCOL.md, "Claims"): sub-types 3 to 7 of message type 100,
// shared by the client arbiter and the server. Platform-neutral: only lib0's byte codecs.
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import type { ClaimNextFilter } from './claims.js';

/** Message type 100 (Cairn); its sub-types 0 to 2 are the write acknowledgement's (protocol.ts). */
const CAIRN = 100;

/** The second varUint of a Cairn claim message. */
export const ClaimMessageType = {
  /** client -> server: [100, 3, reqId, nonce, actor, taskId] */
  Claim: 3,
  /** client -> server: [100, 4, reqId, nonce, actor, filterJson] */
  ClaimNext: 4,
  /** client -> server: [100, 5, reqId, nonce, actor, taskId] */
  Release: 5,
  /** client -> server: [100, 6, reqId, nonce, actor, taskId, to] */
  HandOff: 6,
  /** server -> client: [100, 7, reqId, outcome, taskId, holder, message, code] */
  Reply: 7,
} as const;

export type ClaimOp = 'claim' | 'claim_next' | 'release' | 'hand_off';

const OP_BY_TYPE: Record<number, ClaimOp> = {
  [ClaimMessageType.Claim]: 'claim',
  [ClaimMessageType.ClaimNext]: 'claim_next',
  [ClaimMessageType.Release]: 'release',
  [ClaimMessageType.HandOff]: 'hand_off',
};

export interface ClaimRequest {
  op: ClaimOp;
  /** Matches the reply to the request on this socket. */
  reqId: number;
  /**
   * Chosen by the client, the same on every resend of one request (after a reconnect), so a request the server
   * already applied is answered again instead of applied twice (a second claim_next would take a second task).
   */
  nonce: string;
  /** Who asks. Empty: the connection's own actor. With auth on the server accepts only `agent:<sub>` / `user:<sub>`. */
  actor: string;
  /** claim, release, hand_off. */
  taskId?: string;
  /** claim_next. */
  filter?: ClaimNextFilter;
  /** hand_off: the actor who gets the task. */
  to?: string;
}

/** A decided request; `error` when the server refused it (unknown task, closed task, not the holder, ...). */
export interface ClaimReply {
  reqId: number;
  outcome: 'won' | 'lost' | 'none' | 'error';
  taskId: string | null;
  holder: string | null;
  message: string;
  /** A CairnError code when `outcome` is `error`, else ''. */
  code: string;
}

/** The sub-types a client sends (the server routes them to its arbiter). */
export const CLAIM_REQUEST_TYPES: readonly number[] = [
  ClaimMessageType.Claim,
  ClaimMessageType.ClaimNext,
  ClaimMessageType.Release,
  ClaimMessageType.HandOff,
];

/** Whether the sub-type of a Cairn message (the varUint after 100) is a claim message. */
export function isClaimMessageType(subtype: number): boolean {
  return subtype >= ClaimMessageType.Claim && subtype <= ClaimMessageType.Reply;
}

export function encodeClaimRequest(request: ClaimRequest): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, CAIRN);
  const type = Number(Object.entries(OP_BY_TYPE).find(([, op]) => op === request.op)?.[0]);
  encoding.writeVarUint(encoder, type);
  encoding.writeVarUint(encoder, request.reqId);
  encoding.writeVarString(encoder, request.nonce);
  encoding.writeVarString(encoder, request.actor);
  if (request.op === 'claim_next') {
    encoding.writeVarString(encoder, JSON.stringify(request.filter ?? {}));
  } else {
    encoding.writeVarString(encoder, request.taskId ?? '');
  }
  if (request.op === 'hand_off') encoding.writeVarString(encoder, request.to ?? '');
  return encoding.toUint8Array(encoder);
}

export function encodeClaimReply(reply: ClaimReply): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, CAIRN);
  encoding.writeVarUint(encoder, ClaimMessageType.Reply);
  encoding.writeVarUint(encoder, reply.reqId);
  encoding.writeVarString(encoder, reply.outcome);
  encoding.writeVarString(encoder, reply.taskId ?? '');
  encoding.writeVarString(encoder, reply.holder ?? '');
  encoding.writeVarString(encoder, reply.message);
  encoding.writeVarString(encoder, reply.code);
  return encoding.toUint8Array(encoder);
}

/**
 * Reads a claim request, the leading `100` already read (the sub-type not yet). Throws on a truncated frame,
 * an unknown sub-type or a filter that is not `{}`, `{ "parent": null }` or `{ "parent": "<id>" }`.
 */
export function decodeClaimRequest(decoder: decoding.Decoder): ClaimRequest {
  return decodeClaimRequestBody(decoding.readVarUint(decoder), decoder);
}

/** Like `decodeClaimRequest`, the sub-type already read. */
export function decodeClaimRequestBody(type: number, decoder: decoding.Decoder): ClaimRequest {
  const op = OP_BY_TYPE[type];
  if (!op) throw new Error(`sub-type ${type} is not a claim request`);
  const reqId = decoding.readVarUint(decoder);
  const nonce = decoding.readVarString(decoder);
  const actor = decoding.readVarString(decoder);
  if (op === 'claim_next') {
    return { op, reqId, nonce, actor, filter: parseFilter(decoding.readVarString(decoder)) };
  }
  const taskId = decoding.readVarString(decoder);
  if (op === 'hand_off') return { op, reqId, nonce, actor, taskId, to: decoding.readVarString(decoder) };
  return { op, reqId, nonce, actor, taskId };
}

/** Reads a claim reply, the leading `100` already read (the sub-type not yet). */
export function decodeClaimReply(decoder: decoding.Decoder): ClaimReply {
  const type = decoding.readVarUint(decoder);
  if (type !== ClaimMessageType.Reply) throw new Error(`sub-type ${type} is not a claim reply`);
  return decodeClaimReplyBody(decoder);
}

/** Like `decodeClaimReply`, the sub-type (7) already read. */
export function decodeClaimReplyBody(decoder: decoding.Decoder): ClaimReply {
  const reqId = decoding.readVarUint(decoder);
  const outcome = decoding.readVarString(decoder);
  if (outcome !== 'won' && outcome !== 'lost' && outcome !== 'none' && outcome !== 'error') {
    throw new Error(`unknown claim outcome "${outcome}"`);
  }
  const taskId = decoding.readVarString(decoder);
  const holder = decoding.readVarString(decoder);
  return {
    reqId,
    outcome,
    taskId: taskId || null,
    holder: holder || null,
    message: decoding.readVarString(decoder),
    code: decoding.readVarString(decoder),
  };
}

function parseFilter(json: string): ClaimNextFilter {
  const value: unknown = JSON.parse(json);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error('the claim_next filter must be a JSON object');
  }
  const keys = Object.keys(value);
  if (keys.some((k) => k !== 'parent'))
    throw new Error(`unknown claim_next filter field "${keys.join(', ')}"`);
  const parent = (value as { parent?: unknown }).parent;
  if (parent === undefined) return {};
  if (parent !== null && (typeof parent !== 'string' || parent.length === 0 || parent.length > 64)) {
    throw new Error('the claim_next filter parent must be null or a task id');
  }
  return { parent };
}
