// The hub's extension hooks against real servers: their order and the origins they see, a relay that shares a
// plan between two servers without echo (the shape of a pub/sub extension), a veto in authenticate, a failed load
// that lets go of the store, and writes made while the hub closes.
import { CairnError, createPlan } from '@cairn/core';
import { CLAIM_REQUEST_TYPES, decodeClaimRequestBody, encodeClaimReply } from '@cairn/core/protocol';
import * as decoding from 'lib0/decoding';
import { describe, expect, it, vi } from 'vitest';
import { applyAwarenessUpdate, encodeAwarenessUpdate } from 'y-protocols/awareness';
import * as Y from 'yjs';
import { CloseCode, type Extension, type ExtensionHost, type RoomChange } from '../src/index.js';
import { cairnClient, rawClient, serverState, startServer } from './helpers.js';

type AwarenessChanges = { added: number[]; updated: number[]; removed: number[] };

/** The Yjs update a sync update message carries. */
function updateOf(message: Uint8Array): Uint8Array {
  const decoder = decoding.createDecoder(message);
  decoding.readVarUint(decoder); // sync
  decoding.readVarUint(decoder); // update
  return decoding.readVarUint8Array(decoder);
}

/** Records every hook call as `name:hook`, and each change's origin. */
function recorder(name: string, log: string[], priority?: number): Extension & { changes: RoomChange[] } {
  const changes: RoomChange[] = [];
  return {
    name,
    ...(priority !== undefined ? { priority } : {}),
    changes,
    load: (room) => void log.push(`${name}:load:${room.planId}`),
    loaded: (room) => void log.push(`${name}:loaded:${room.planId}`),
    change: (change) => {
      log.push(`${name}:change`);
      changes.push(change);
    },
    store: ({ planId }) => {
      log.push(`${name}:store:${planId}`);
      return Promise.resolve();
    },
    unload: (room) => void log.push(`${name}:unload:${room.planId}`),
    close: () => void log.push(`${name}:close`),
    destroy: () => void log.push(`${name}:destroy`),
  };
}

/**
 * A relay between servers through an in-process bus, as a Redis extension would do it: every update a server
 * applies from its own clients or code is published; an update from the bus is applied as `remote` and never
 * published again. Presence goes the same way through each room's awareness.
 */
function bus() {
  const members: Array<{ host: ExtensionHost; id: number }> = [];
  let published = 0;
  return {
    get published() {
      return published;
    },
    member(id: number) {
      return (host: ExtensionHost): Extension => {
        members.push({ host, id });
        return {
          name: 'relay',
          loaded(room) {
            room.awareness.on('update', (changes: AwarenessChanges, origin: unknown) => {
              if (origin === 'bus') return;
              const clients = [...changes.added, ...changes.updated, ...changes.removed];
              const update = encodeAwarenessUpdate(room.awareness, clients);
              for (const other of members) {
                const there = other.id !== id ? other.host.room(room.planId) : undefined;
                if (there) applyAwarenessUpdate(there.awareness, update, 'bus');
              }
            });
          },
          change({ room, update, origin }) {
            if (origin.source === 'remote' && origin.via === 'bus') return;
            published++;
            for (const other of members) {
              if (other.id !== id) other.host.room(room.planId)?.applyRemote(update, 'bus');
            }
          },
        };
      };
    },
  };
}

describe('hub extensions', () => {
  it('runs hooks in priority order and tells each change where it came from', async () => {
    const log: string[] = [];
    const server = await startServer({ idleUnloadMs: 50 });
    server.server.hub.use(() => recorder('low', log, 10));
    const high = server.server.hub.use(() => recorder('high', log, 500));

    const doc = new Y.Doc();
    const client = cairnClient(server.url, 'acme:1', doc);
    await client.whenSynced();
    // The plan was loaded for the client: every load before every loaded, higher priority first.
    expect(log).toEqual(['high:load:acme:1', 'low:load:acme:1', 'high:loaded:acme:1', 'low:loaded:acme:1']);

    log.length = 0;
    createPlan({ doc, actor: 'agent:a' }).add({ title: 'from a client' });
    await client.whenAcknowledged();
    expect(log).toEqual(['high:change', 'low:change', 'high:store:acme:1', 'low:store:acme:1']);
    const fromClient = high.changes[0]!.origin;
    expect(fromClient.source).toBe('connection');
    expect(fromClient.source === 'connection' && fromClient.connection.actor).toBe('user:anonymous');

    const handle = await server.server.hub.openPlan('acme:1');
    createPlan({ doc: handle.doc, actor: 'agent:server' }).add({ title: 'from the server' });
    expect(high.changes[1]!.origin).toEqual({ source: 'local', actor: 'agent:server' });

    const other = new Y.Doc();
    createPlan({ doc: other, actor: 'agent:far' }).add({ title: 'from elsewhere' });
    const room = server.server.hub.loadedRoom('acme:1')!;
    room.applyRemote(Y.encodeStateAsUpdate(other), 'test');
    expect(high.changes[2]!.origin).toEqual({ source: 'remote', via: 'test', stored: false });
    // A remote update reaches the clients and the store like any other.
    await vi.waitFor(() => expect(doc.getMap('tasks').size).toBe(3), { timeout: 10_000 });
    handle.release();

    log.length = 0;
    client.destroy();
    await vi.waitFor(() => expect(server.server.hub.isLoaded('acme:1')).toBe(false), { timeout: 10_000 });
    expect(log).toEqual(['high:store:acme:1', 'low:store:acme:1', 'high:unload:acme:1', 'low:unload:acme:1']);
    // A room kept past its unload takes no more updates.
    expect(() => room.applyRemote(Y.encodeStateAsUpdate(other), 'test')).toThrow(/not loaded here any more/);

    log.length = 0;
    await server.server.close();
    expect(log).toEqual(['high:close', 'low:close', 'high:destroy', 'low:destroy']);
  });

  it('applies remote updates in one transaction, relaying each to the clients as it comes', async () => {
    const server = await startServer();
    const rec = server.server.hub.use(() => recorder('rec', []));
    const raw = rawClient(server.url, 'acme:batch');
    const isUpdate = (m: Uint8Array) => m[0] === 0 && m[1] === 2;
    const isStep1 = (m: Uint8Array) => m[0] === 0 && m[1] === 0;
    await raw.next(isStep1); // greeted: the room is ready
    const room = server.server.hub.loadedRoom('acme:batch')!;
    let transactions = 0;
    room.doc.on('afterTransaction', () => transactions++);
    const far = new Y.Doc();
    const updates: Uint8Array[] = [];
    far.on('update', (update: Uint8Array) => updates.push(update));
    const plan = createPlan({ doc: far, actor: 'agent:far' });
    for (const title of ['one', 'two', 'three']) plan.add({ title });

    room.applyRemote(updates, 'test', true);
    expect(transactions).toBe(1);
    expect(rec.changes.map((c) => c.origin)).toEqual([{ source: 'remote', via: 'test', stored: true }]);
    // Each update reaches the client as it came, and the transaction's own update is not sent again.
    await vi.waitFor(() => expect(raw.messages.filter(isUpdate)).toHaveLength(updates.length));
    expect(raw.messages.filter(isUpdate).map(updateOf)).toEqual(updates);

    // Out of order, with a malformed update among them: the others get in, in the same transaction, the failure
    // is thrown after, and the client gets what got in whole besides the updates as they came.
    updates.length = 0;
    for (const title of ['four', 'five']) plan.add({ title });
    const [four, five] = updates as [Uint8Array, Uint8Array];
    expect(() => room.applyRemote([five, new Uint8Array([1, 2, 3]), four], 'test', true)).toThrow();
    expect(transactions).toBe(2);
    expect(rec.changes).toHaveLength(2);
    expect(
      createPlan({ doc: room.doc, actor: 'agent:x' })
        .list()
        .map((t) => t.title),
    ).toEqual(['one', 'two', 'three', 'four', 'five']);
    await vi.waitFor(() =>
      expect(raw.messages.filter(isUpdate).length).toBeGreaterThanOrEqual(updates.length + 4),
    );
    const client = new Y.Doc();
    for (const update of raw.messages.filter(isUpdate).map(updateOf)) Y.applyUpdate(client, update);
    expect(Y.encodeStateVector(client)).toEqual(Y.encodeStateVector(room.doc));
  });

  it('relays a plan between two servers without echo', async () => {
    const relay = bus();
    const one = await startServer();
    const two = await startServer();
    one.server.hub.use(relay.member(1));
    two.server.hub.use(relay.member(2));
    const docA = new Y.Doc();
    const docB = new Y.Doc();
    const a = cairnClient(one.url, 'shared', docA, { presence: { id: 'agent:a', name: 'A', kind: 'agent' } });
    const b = cairnClient(two.url, 'shared', docB, { presence: { id: 'agent:b', name: 'B', kind: 'agent' } });
    await Promise.all([a.whenSynced(), b.whenSynced()]);

    const planA = createPlan({ doc: docA, actor: 'agent:a' });
    const planB = createPlan({ doc: docB, actor: 'agent:b' });
    const first = planA.add({ title: 'written on one' });
    await vi.waitFor(() => expect(planB.get(first.id)?.title).toBe('written on one'), { timeout: 10_000 });
    planB.update(first.id, { status: 'in_progress' });
    await vi.waitFor(() => expect(planA.get(first.id)?.status).toBe('in_progress'), { timeout: 10_000 });
    await Promise.all([a.whenAcknowledged(), b.whenAcknowledged()]);

    // One publication per edit: an update that came from the bus is never sent back to it.
    expect(relay.published).toBe(2);
    // Each server stored what it received from the other.
    expect(await serverState(one, 'shared')).toEqual(await serverState(two, 'shared'));
    // Each client sees the other's presence, though they are on different servers.
    await vi.waitFor(() => expect([...a.peers().values()].map((p) => p.id)).toContain('agent:b'), {
      timeout: 10_000,
    });
    await vi.waitFor(() => expect([...b.peers().values()].map((p) => p.id)).toContain('agent:a'), {
      timeout: 10_000,
    });
  });

  it('lets an extension refuse a request in authenticate, on sockets and over HTTP', async () => {
    const server = await startServer();
    server.server.hub.use(() => ({
      name: 'no-archive',
      authenticate({ planId }) {
        if (planId.startsWith('archive:')) throw new CairnError('forbidden', 'Archived plans are closed.');
      },
    }));
    const refused = rawClient(server.url, 'archive:1');
    expect(await refused.closed).toEqual({ code: CloseCode.Forbidden, reason: 'Archived plans are closed.' });
    const response = await fetch(`${server.http}/api/plans/archive%3A1/tasks`);
    expect(response.status).toBe(403);
    const allowed = cairnClient(server.url, 'open:1', new Y.Doc());
    await allowed.whenSynced();
    expect(server.server.hub.isLoaded('archive:1')).toBe(false);
  });

  it('releases the store when a later extension fails the load, so the plan loads next time', async () => {
    const server = await startServer();
    let failures = 1;
    server.server.hub.use(() => ({
      name: 'flaky',
      load() {
        if (failures-- > 0) throw new Error('not yet');
      },
    }));
    const first = rawClient(server.url, 'acme:2');
    expect((await first.closed).code).toBe(CloseCode.Unavailable);
    expect(server.server.hub.store.metrics().plans).toBe(0);
    const doc = new Y.Doc();
    const client = cairnClient(server.url, 'acme:2', doc);
    await client.whenSynced();
    createPlan({ doc, actor: 'agent:a' }).add({ title: 'after a failed load' });
    await client.whenAcknowledged();
    expect(server.server.hub.isLoaded('acme:2')).toBe(true);
  });

  it('lets an extension finish a write while the hub closes, before plans unload', async () => {
    const first = await startServer();
    first.server.hub.use((host) => ({
      name: 'last-word',
      async close() {
        const handle = await host.openPlan('acme:3');
        createPlan({ doc: handle.doc, actor: 'agent:closing' }).add({ title: 'written while closing' });
        await handle.flush();
        handle.release();
      },
    }));
    await first.server.close();
    const second = await startServer({ dataDir: first.dir });
    const handle = await second.server.hub.openPlan('acme:3');
    const titles = createPlan({ doc: handle.doc, actor: 'agent:check' })
      .children(null)
      .map((t) => t.title);
    handle.release();
    expect(titles).toEqual(['written while closing']);
  });

  it('lets an extension veto claims before the arbiter decides the rest', async () => {
    const server = await startServer();
    // Ahead of the arbiter (priority 100): refuses claims on frozen tasks, passes every other request on.
    server.server.hub.use(() => ({
      name: 'freeze',
      priority: 200,
      cairnMessages: CLAIM_REQUEST_TYPES,
      message({ room, connection, subType, decoder }) {
        const request = decodeClaimRequestBody(subType, decoder);
        const task = request.taskId
          ? createPlan({ doc: room.doc, actor: 'agent:freeze' }).get(request.taskId)
          : null;
        if (!task?.title.startsWith('frozen')) return 'pass';
        connection.send(
          encodeClaimReply({
            reqId: request.reqId,
            outcome: 'error',
            taskId: task.id,
            holder: null,
            message: 'This task is frozen.',
            code: 'forbidden',
          }),
        );
        return undefined;
      },
    }));
    const doc = new Y.Doc();
    const plan = createPlan({ doc, actor: 'agent:a' });
    const client = cairnClient(server.url, 'acme:4', doc, { plan });
    await client.whenSynced();
    const frozen = plan.add({ title: 'frozen: do not touch' });
    const open = plan.add({ title: 'open for work' });
    await expect(plan.claim(frozen.id)).rejects.toMatchObject({
      code: 'forbidden',
      message: 'This task is frozen.',
    });
    expect(await plan.claim(open.id)).toMatchObject({ outcome: 'won', arbitrated: true });
    expect(server.server.claims!.leases('acme:4').map((l) => l.taskId)).toEqual([open.id]);
    // The reserved sub-types of the acknowledgement cannot be routed.
    expect(() => server.server.hub.use(() => ({ name: 'ack', cairnMessages: [1] }))).toThrow(/reserved/);
  });
});
