// The wire codec of Cairn's acknowledgement messages and the close-code mapping of @cairn/core/websocket (the
// adapter against a real server is tested in packages/server/test/client.test.ts).
import * as decoding from 'lib0/decoding';
import { describe, expect, it } from 'vitest';
import { closeError } from '../src/adapters/websocket.js';
import {
  CloseCode,
  decodeCairnMessage,
  encodeAck,
  encodeAckRequest,
  encodeCairnError,
  MessageType,
  syncPath,
} from '../src/protocol-entry.js';

function decode(bytes: Uint8Array) {
  const decoder = decoding.createDecoder(bytes);
  expect(decoding.readVarUint(decoder)).toBe(MessageType.Cairn);
  return decodeCairnMessage(decoder);
}

describe('protocol', () => {
  it('round-trips every Cairn message, byte for byte as documented', () => {
    expect([...encodeAckRequest(5)]).toEqual([100, 0, 5]);
    expect(decode(encodeAckRequest(300))).toEqual({ type: 'ack-request', reqId: 300 });
    expect([...encodeAck(1, Uint8Array.of(1, 7, 3))]).toEqual([100, 1, 1, 3, 1, 7, 3]);
    expect(decode(encodeAck(1, Uint8Array.of(9)))).toEqual({
      type: 'ack',
      reqId: 1,
      stateVector: Uint8Array.of(9),
    });
    expect(decode(encodeCairnError(2, 'forbidden', 'read-only'))).toEqual({
      type: 'error',
      reqId: 2,
      code: 'forbidden',
      message: 'read-only',
    });
  });

  it('throws on truncated or unknown Cairn messages', () => {
    expect(() => decode(Uint8Array.of(100, 1, 1, 5, 1))).toThrow();
    expect(() => decode(Uint8Array.of(100, 9, 1))).toThrow(/unknown Cairn message type 9/);
  });

  it('maps close codes to error codes and builds sync paths', () => {
    expect(closeError(CloseCode.Unauthorized, 'Token expired.')).toMatchObject({ code: 'unauthorized' });
    expect(closeError(CloseCode.Forbidden, '')).toMatchObject({
      code: 'forbidden',
      details: { closeCode: 4403 },
    });
    expect(closeError(CloseCode.PlanTooLarge, 'x').code).toBe('limit');
    expect(syncPath('acme:conv/7')).toBe('/sync/acme%3Aconv%2F7');
  });
});
