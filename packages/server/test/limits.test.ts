// Hostile and broken clients at limits set for the test (garbage frames, floods and the default limits are in
// test/contract/bad-input.ts, on every host): oversized and unfinished frames, a plan that grows too large, a
// queue before the plan loads, half-open sockets. Each closes only its own connection; the server and every other client carry on.
import { CloseCode } from '@cairn/core/protocol';
import * as encoding from 'lib0/encoding';
import { describe, expect, it, vi } from 'vitest';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';
import { MemoryStore, signToken } from '../src/index.js';
import { cairnClient, healthyPair, rawClient, rawUpgrade, startServer, type TestServer } from './helpers.js';

describe('bad frames', () => {
  it('closes a frame over the message limit with 4413, far over it too, before it is buffered', async () => {
    const server = await startServer({ limits: { maxMessageBytes: 1024 } });
    const healthy = await healthyPair(server.url, 'room');
    const big = rawClient(server.url, 'room');
    await big.opened;
    big.send(new Uint8Array(1500));
    expect(await big.closed).toEqual({
      code: CloseCode.MessageTooLarge,
      reason: expect.stringMatching(/1500 bytes/),
    });
    const huge = rawClient(server.url, 'room');
    await huge.opened;
    huge.send(new Uint8Array(10_000));
    expect(await huge.closed).toEqual({
      code: CloseCode.MessageTooLarge,
      reason: expect.stringContaining('the limit is 1024'),
    });
    await healthy.stillSyncing();
  });
});

describe('updates whose dependencies never arrive (issue 29)', () => {
  /** Updates of one writer that all build on an edit the server never gets: each stays pending there. */
  function orphans(count: number, bytes: number): Uint8Array[] {
    const doc = new Y.Doc();
    doc.getMap('tasks').set('never-sent', 1);
    const base = Y.encodeStateVector(doc);
    return Array.from({ length: count }, (_, i) => {
      const before = Y.encodeStateVector(doc);
      doc.getMap('tasks').set(`orphan${i}`, 'x'.repeat(bytes));
      expect(Y.encodeStateVector(doc)).not.toEqual(base);
      return Y.encodeStateAsUpdate(doc, before);
    });
  }

  function updateMessage(update: Uint8Array): Uint8Array {
    const encoder = encoding.createEncoder();
    encoding.writeVarUint(encoder, 0);
    syncProtocol.writeUpdate(encoder, update);
    return encoding.toUint8Array(encoder);
  }

  it('closes a connection past its bound (4424, naming the limit), drops what waits, stores nothing of it', async () => {
    const server = await startServer({ limits: { maxPendingBytesPerConnection: 256 * 1024 } });
    const healthy = await healthyPair(server.url, 'room');
    const bad = rawClient(server.url, 'room');
    await bad.opened;
    for (const update of orphans(4, 100 * 1024)) bad.send(updateMessage(update));
    expect(await bad.closed).toEqual({
      code: CloseCode.MissingDependencies,
      reason: expect.stringMatching(/^This connection holds \d+ bytes .* the limit is 262144\. Dropped\.$/),
    });
    const handle = await server.server.hub.openPlan('room');
    expect(handle.doc.store.pendingStructs).toBeNull();
    // A joiner gets the plan, not the orphans.
    expect(Y.encodeStateAsUpdate(handle.doc).byteLength).toBeLessThan(10_000);
    handle.release();
    await healthy.stillSyncing();
    expect(await fetch(`${server.http}/metrics`).then((r) => r.text())).toMatch(
      /cairn_updates_refused_total\{reason="missing_dependencies"\} 1/,
    );
  });

  it('bounds a plan too, whoever sends: many connections under their own bound', async () => {
    const server = await startServer({
      limits: { maxPendingBytesPerConnection: 1024 * 1024, maxPendingBytesPerPlan: 300 * 1024 },
    });
    const [first, second, third, fourth] = orphans(4, 100 * 1024);
    const sockets = [first, second, third, fourth].map(() => rawClient(server.url, 'room'));
    await Promise.all(sockets.map((s) => s.opened));
    for (const [i, update] of [first, second, third, fourth].entries())
      sockets[i]!.send(updateMessage(update!));
    const closes = await Promise.race([
      Promise.any(sockets.map((s) => s.closed)),
      new Promise((r) => setTimeout(() => r('none'), 5000)),
    ]);
    expect(closes).toEqual({
      code: CloseCode.MissingDependencies,
      reason: expect.stringMatching(/^This plan holds \d+ bytes .* the limit is 307200\. Dropped\.$/),
    });
  });
});

describe('unfinished fragmented messages (issue 29)', () => {
  const secret = 'test-secret-with-at-least-thirty-two-bytes';

  /** A read-only socket that starts a message in fragments of `size` bytes and never finishes it. */
  async function reader(server: TestServer) {
    const token = await signToken(secret, { plan: 'room', role: 'read', sub: 'reader' });
    const socket = rawClient(server.url, 'room', { token });
    await socket.opened;
    return {
      closed: socket.closed,
      fragment(size: number) {
        socket.ws.send(new Uint8Array(size).fill(1), { binary: true, fin: false });
      },
    };
  }

  it('closes a socket whose unfinished message passes the message limit (4413, naming the limit)', async () => {
    const server = await startServer({ secret, limits: { maxMessageBytes: 256 * 1024 } });
    const bad = await reader(server);
    for (let i = 0; i < 8; i++) bad.fragment(48 * 1024); // 384 KiB, never finished: below ws's 512 KiB
    expect(await bad.closed).toEqual({
      code: CloseCode.MessageTooLarge,
      reason: expect.stringContaining('the limit is 262144'),
    });
  });

  it('closes a socket whose message stays unfinished past the time limit (4408), others carry on', async () => {
    const server = await startServer({ secret, limits: { maxMessageMs: 300 } });
    const bad = await reader(server);
    const started = performance.now();
    bad.fragment(100 * 1024);
    const closed = await bad.closed;
    expect(closed).toEqual({ code: CloseCode.MessageTimeout, reason: expect.stringContaining('300 ms') });
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    // A small unfinished message (below 64 KiB) and finished ones are not timed.
    const calm = await reader(server);
    calm.fragment(1024);
    const writer = await signToken(secret, { plan: 'room', role: 'write', sub: 'writer' });
    const doc = new Y.Doc();
    const client = cairnClient(server.url, 'room', doc, { token: writer });
    await client.whenSynced();
    doc.getMap('tasks').set('k', 1);
    await client.whenAcknowledged();
    const outcome = await Promise.race([calm.closed, new Promise((r) => setTimeout(() => r('open'), 600))]);
    expect(outcome).toBe('open');
    client.destroy();
  });
});

describe('limits', () => {
  it('refuses an update that would grow the plan past its limit (4414), changing nothing', async () => {
    const server = await startServer({ limits: { maxDocBytes: 4096 } });
    const healthy = await healthyPair(server.url, 'room');
    const doc = new Y.Doc();
    const greedy = cairnClient(server.url, 'room', doc);
    await greedy.whenSynced();
    const closed = new Promise<{ code: number }>((resolve) => greedy.on('closed', resolve));
    doc.getText('note').insert(0, 'x'.repeat(10_000));
    expect(await closed).toMatchObject({ code: CloseCode.PlanTooLarge });
    await healthy.stillSyncing();
    const handle = await server.server.hub.openPlan('room');
    expect(handle.doc.getText('note').length).toBe(0);
    handle.release();
  });

  it('bounds what a client may send before its plan has loaded (4429)', async () => {
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const server = await startServer({
      store: new MemoryStore({ beforeLoad: (id) => (id === 'slow' ? gate : undefined) }),
      limits: { maxQueuedMessages: 5 },
    });
    const healthy = await healthyPair(server.url, 'fast');
    const eager = rawClient(server.url, 'slow');
    await eager.opened;
    for (let i = 0; i < 10; i++) eager.send([3]);
    expect(await eager.closed).toEqual({
      code: CloseCode.RateLimited,
      reason: expect.stringMatching(/before the plan loaded/),
    });
    await healthy.stillSyncing();
    open();
  });

  it('drops a half-open socket that stops answering pings', async () => {
    const server = await startServer({ pingIntervalMs: 50 });
    const healthy = await healthyPair(server.url, 'room');
    // A client that completes the handshake and then goes silent, as a peer behind a dead network would.
    const { socket, reply: upgraded } = rawUpgrade(server.port, '/sync/room');
    expect(await upgraded).toMatch(/^HTTP\/1.1 101/);
    await vi.waitFor(() => expect(server.server.hub.connectionCount).toBe(3));
    const gone = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    await gone;
    // The two healthy clients answer pings and stay.
    await vi.waitFor(() => expect(server.server.hub.connectionCount).toBe(2));
    await healthy.stillSyncing();
  });
});
