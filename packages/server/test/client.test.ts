// @cairn/core/websocket against the real server: reconnects after a restart, token refresh, acknowledgement
// timeouts and destroy, status events, and the guarantee that a stock client never sees Cairn's messages.
import { CloseCode } from '@cairn/core/protocol';
import { connectPlan } from '@cairn/core/websocket';
import * as decoding from 'lib0/decoding';
import { describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import * as Y from 'yjs';
import { cairnClient, rawClient, startServer, stockClient, whenProviderSynced } from './helpers.js';

describe('connectPlan', () => {
  it('reconnects after a server restart, asks for a fresh token, and merges edits made meanwhile', async () => {
    const secret = 'client-test-secret-long-enough-for-hs256';
    const { signToken } = await import('../src/index.js');
    const first = await startServer({ secret });
    let asked = 0;
    const doc = new Y.Doc();
    const statuses: string[] = [];
    const conn = cairnClient(first.url, 'acme:re', doc, {
      maxBackoffMs: 50,
      token: () => {
        asked++;
        return signToken(secret, { plan: 'acme:re', role: 'write' });
      },
    });
    conn.on('status', (s) => statuses.push(s));
    await conn.whenSynced();
    doc.getMap('tasks').set('before', 1);
    await conn.whenAcknowledged();

    const disconnected = new Promise<void>((resolve) =>
      conn.on('status', (s) => {
        if (s === 'disconnected') resolve();
      }),
    );
    await first.server.close();
    await disconnected;
    doc.getMap('tasks').set('offline', 2);
    const acked = conn.whenAcknowledged();

    const second = await startServer({ secret, dataDir: first.dir, port: first.port });
    await acked;
    expect(asked).toBeGreaterThanOrEqual(2);
    expect(statuses).toEqual(expect.arrayContaining(['connected', 'disconnected', 'connecting']));

    const check = new Y.Doc();
    const reader = cairnClient(second.url, 'acme:re', check, {
      token: await signToken(secret, { plan: 'acme:re', role: 'read' }),
    });
    await reader.whenSynced();
    expect(check.getMap('tasks').toJSON()).toEqual({ before: 1, offline: 2 });
  });

  it('rejects whenAcknowledged after its timeout while offline, and pending waits on destroy', async () => {
    const doc = new Y.Doc();
    const conn = connectPlan(doc, {
      url: 'ws://127.0.0.1:9',
      planId: 'p',
      WebSocketPolyfill: WebSocket,
      connect: false,
    });
    await expect(conn.whenAcknowledged()).resolves.toBeUndefined(); // nothing of ours yet
    doc.getMap('tasks').set('t', 1);
    await expect(conn.whenAcknowledged(20)).rejects.toMatchObject({ code: 'limit', message: /within 20 ms/ });
    const pending = conn.whenAcknowledged();
    const syncing = conn.whenSynced();
    conn.destroy();
    await expect(pending).rejects.toMatchObject({ code: 'invalid_transition' });
    await expect(syncing).rejects.toMatchObject({ code: 'invalid_transition' });
    expect(conn.status).toBe('closed');
  });

  it('says what is missing when there is no WebSocket, and refuses a bad plan id or presence', () => {
    vi.stubGlobal('WebSocket', undefined);
    try {
      expect(() => connectPlan(new Y.Doc(), { url: 'ws://x', planId: 'p' })).toThrow(/WebSocketPolyfill/);
    } finally {
      vi.unstubAllGlobals();
    }
    expect(() =>
      connectPlan(new Y.Doc(), { url: 'ws://x', planId: '', WebSocketPolyfill: WebSocket }),
    ).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    expect(() =>
      connectPlan(new Y.Doc(), {
        url: 'ws://x',
        planId: 'p',
        WebSocketPolyfill: WebSocket,
        connect: false,
        presence: { id: 'a', name: 'A', kind: 'cat' } as never,
      }),
    ).toThrow(/kind/);
  });

  it('a stock client in the same room never receives a Cairn message', async () => {
    const { url } = await startServer();
    const errors = vi.spyOn(console, 'error');
    const stockDoc = new Y.Doc();
    const stock = stockClient(url, 'mixed', stockDoc);
    const doc = new Y.Doc();
    const conn = cairnClient(url, 'mixed', doc);
    await Promise.all([whenProviderSynced(stock), conn.whenSynced()]);
    for (let i = 0; i < 5; i++) {
      doc.getMap('tasks').set(`t${i}`, i);
      await conn.whenAcknowledged();
    }
    await vi.waitFor(() => expect(stockDoc.getMap('tasks').size).toBe(5));
    expect(errors).not.toHaveBeenCalledWith('Unable to compute message');
    errors.mockRestore();
  });

  it('keeps an idle client alive with an empty awareness message', async () => {
    const { url } = await startServer({ keepAliveMs: 30 });
    const client = rawClient(url, 'quiet');
    const keepAlive = await client.next((m) => m.length === 3 && m[0] === 1 && m[1] === 1 && m[2] === 0);
    expect([...keepAlive]).toEqual([1, 1, 0]);
  });

  it('routes extension sub-types of message 100 between hub and client, in socket order', async () => {
    const { url, server } = await startServer();
    server.hub.handleCairnMessages([50], (room, conn, _subType, decoder) => {
      const n = decoding.readVarUint(decoder);
      // Answered from the room's doc: the edit sent before this message on the socket is already applied.
      conn.send(Uint8Array.of(100, 51, n, room.doc.getMap('tasks').size));
    });
    expect(() => server.hub.handleCairnMessages([1], () => undefined)).toThrow(/reserved/);
    const doc = new Y.Doc();
    const conn = cairnClient(url, 'ext', doc);
    const replies: number[][] = [];
    const got = new Promise<void>((resolve) =>
      conn.onCairnMessage(51, (decoder) => {
        replies.push([decoding.readVarUint(decoder), decoding.readVarUint(decoder)]);
        resolve();
      }),
    );
    await conn.whenSynced();
    doc.getMap('tasks').set('t1', 1);
    expect(conn.send(Uint8Array.of(100, 50, 7))).toBe(true);
    await got;
    expect(replies).toEqual([[7, 1]]);

    const truncated = rawClient(url, 'ext');
    await truncated.opened;
    truncated.send([100, 50]);
    expect((await truncated.closed).code).toBe(CloseCode.BadMessage);
    const unknown = rawClient(url, 'ext');
    await unknown.opened;
    unknown.send([100, 60, 1]);
    expect(await unknown.closed).toEqual({
      code: 4400,
      reason: expect.stringMatching(/unknown Cairn message type 60/),
    });
  });
});
