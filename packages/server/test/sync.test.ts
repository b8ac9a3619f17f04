// Sync through a real server on a free port: stock y-websocket and Cairn clients, load before sync, acks,
// awareness relay and cleanup, idle unload.
import { openFilePersistence } from '@cairn/core/fs';
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import { describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import { SOURCE_CLI_ARGS } from '../../../test/source-cli.js';
import { MemoryStore, signToken } from '../src/index.js';
import { start } from './child-server.js';
import {
  cairnClient,
  rawClient,
  startServer,
  stockClient,
  storedDoc,
  tempDir,
  whenProviderSynced,
} from './helpers.js';

describe('sync', () => {
  it('a stock y-websocket client and a Cairn client see each other’s edits', async () => {
    const { url } = await startServer();
    const a = new Y.Doc();
    const b = new Y.Doc();
    const stock = stockClient(url, 'acme:1', a);
    const cairn = cairnClient(url, 'acme:1', b);
    await Promise.all([whenProviderSynced(stock), cairn.whenSynced()]);

    a.getMap('tasks').set('t1', 'from stock');
    await vi.waitFor(() => expect(b.getMap('tasks').get('t1')).toBe('from stock'));
    b.getMap('tasks').set('t2', 'from cairn');
    await vi.waitFor(() => expect(a.getMap('tasks').get('t2')).toBe('from cairn'));
    expect(cairn.status).toBe('connected');
  });

  it('keeps plans apart: an edit in one room never reaches another', async () => {
    const { url } = await startServer();
    const a = new Y.Doc();
    const b = new Y.Doc();
    const a2 = new Y.Doc();
    const ca = cairnClient(url, 'acme:a', a);
    const cb = cairnClient(url, 'acme:b', b);
    const ca2 = cairnClient(url, 'acme:a', a2);
    await Promise.all([ca.whenSynced(), cb.whenSynced(), ca2.whenSynced()]);
    a.getMap('tasks').set('only', 'in a');
    await vi.waitFor(() => expect(a2.getMap('tasks').get('only')).toBe('in a'));
    await ca.whenAcknowledged();
    expect(b.getMap('tasks').size).toBe(0);
  });

  it('loads a plan written to disk before answering the first sync', async () => {
    const { dir, server } = await startServer();
    await server.close();
    const agent = new Y.Doc();
    const stored = openFilePersistence(dir)('acme:disk', agent);
    await stored.whenLoaded;
    agent.getMap('tasks').set('t1', 'written by an agent');
    await stored.close();

    const { url } = await startServer({ dataDir: dir });
    const doc = new Y.Doc();
    const provider = stockClient(url, 'acme:disk', doc);
    // The very first sync already carries the plan: no client ever sees it empty.
    const seenAtFirstSync = await new Promise<unknown>((resolve) => {
      provider.on('sync', (synced: boolean) => {
        if (synced) resolve(doc.getMap('tasks').get('t1'));
      });
    });
    expect(seenAtFirstSync).toBe('written by an agent');
  });

  it('holds a client’s messages until the store has loaded the plan', async () => {
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let held = false;
    const store = new MemoryStore({ beforeLoad: () => (held ? gate : undefined) });
    const seed = new Y.Doc();
    seed.getMap('tasks').set('t1', 'stored');
    await store.load('slow', () => Y.encodeStateAsUpdate(seed));
    store.append('slow', Y.encodeStateAsUpdate(seed));
    await store.release('slow');
    held = true;
    const { url, server } = await startServer({ store });

    const doc = new Y.Doc();
    const provider = stockClient(url, 'slow', doc);
    await vi.waitFor(() => expect(server.hub.connectionCount).toBe(1));
    const firstSync = new Promise<unknown>((resolve) => {
      provider.on('sync', (synced: boolean) => {
        if (synced) resolve(doc.getMap('tasks').get('t1'));
      });
    });
    expect(provider.synced).toBe(false);
    open();
    expect(await firstSync).toBe('stored');
  });

  it('whenAcknowledged resolves once the edit is in the log on disk', async () => {
    const { url, dir } = await startServer();
    const doc = new Y.Doc();
    const conn = cairnClient(url, 'acme:ack', doc);
    await conn.whenSynced();
    doc.getMap('tasks').set('t1', 'durable');
    await conn.whenAcknowledged();
    expect(storedDoc(dir, 'acme:ack').getMap('tasks').get('t1')).toBe('durable');
  });

  it('acknowledges edits made offline once they reach the server', async () => {
    const { url, dir } = await startServer();
    const doc = new Y.Doc();
    doc.getMap('tasks').set('t1', 'made before connecting');
    const conn = cairnClient(url, 'acme:offline', doc, { connect: false });
    const acked = conn.whenAcknowledged();
    conn.connect();
    await acked;
    expect(storedDoc(dir, 'acme:offline').getMap('tasks').get('t1')).toBe('made before connecting');
  });

  it('with allClients, acknowledges edits another client made that this doc carries (an earlier run’s)', async () => {
    const { url, dir } = await startServer();
    const earlier = new Y.Doc();
    earlier.getMap('tasks').set('t1', 'left by an earlier run');
    const doc = new Y.Doc();
    Y.applyUpdate(doc, Y.encodeStateAsUpdate(earlier));
    const conn = cairnClient(url, 'acme:carried', doc, { connect: false });
    const acked = conn.whenAcknowledged(30_000, { allClients: true });
    conn.connect();
    await acked;
    expect(storedDoc(dir, 'acme:carried').getMap('tasks').get('t1')).toBe('left by an earlier run');
  });

  it('flushes and unloads an idle plan, and loads it again for the next client', async () => {
    const { url, server } = await startServer({ idleUnloadMs: 10 });
    const doc = new Y.Doc();
    const conn = cairnClient(url, 'acme:idle', doc);
    await conn.whenSynced();
    doc.getMap('tasks').set('t1', 'kept');
    await conn.whenAcknowledged();
    conn.destroy();
    await vi.waitFor(() => expect(server.hub.roomCount).toBe(0));

    const again = new Y.Doc();
    const next = cairnClient(url, 'acme:idle', again);
    await next.whenSynced();
    expect(again.getMap('tasks').get('t1')).toBe('kept');
  });
});

describe('a cap on loaded plans', () => {
  it('unloads the least recently used plan nobody uses, never one with a client or a job holding it', async () => {
    const { url, server } = await startServer({ maxLoadedPlans: 4, idleUnloadMs: 3_600_000 });
    const hub = server.hub;
    const connect = async (planId: string) => {
      const doc = new Y.Doc();
      const conn = cairnClient(url, planId, doc);
      await conn.whenSynced();
      doc.getMap('tasks').set('t1', planId);
      await conn.whenAcknowledged();
      return conn;
    };
    const visit = async (planId: string) => {
      (await connect(planId)).destroy();
      await vi.waitFor(() => expect(hub.connectionCount).toBe(1));
    };
    const loaded = () =>
      ['connected', 'job', 'old', 'recent', 'new', 'held'].filter((p) => hub.isLoaded(`acme:${p}`));
    const connected = await connect('acme:connected'); // stays connected
    const job = await hub.openPlan('acme:job'); // a server-side job holds it
    await visit('acme:old');
    await visit('acme:recent');
    expect(loaded()).toEqual(['connected', 'job', 'old', 'recent']);
    // A use makes a plan the most recently used: loading a fifth unloads `recent`, now the idlest.
    (await hub.openPlan('acme:old')).release();
    await visit('acme:new');
    await vi.waitFor(() => expect(loaded()).toEqual(['connected', 'job', 'old', 'new']));
    const held = await hub.openPlan('acme:held');
    await vi.waitFor(() => expect(loaded()).toEqual(['connected', 'job', 'new', 'held']));
    // Only plans in use are left: one more passes the cap rather than unload a plan someone uses.
    const alsoHeld = await hub.openPlan('acme:recent');
    await vi.waitFor(() => expect(loaded()).toEqual(['connected', 'job', 'recent', 'held']));
    const more = await hub.openPlan('acme:old');
    expect(hub.roomCount).toBe(5);
    expect(loaded()).toEqual(['connected', 'job', 'old', 'recent', 'held']);
    // An unloaded plan loads again with what was written to it.
    expect(more.doc.getMap('tasks').get('t1')).toBe('acme:old');
    for (const handle of [more, alsoHeld, held, job]) handle.release();
    connected.destroy();
  });
  it('`cairn serve --max-loaded-plans` and `--idle-unload` bound the plans a server keeps', async () => {
    const dir = await tempDir();
    const server = await start([
      ...SOURCE_CLI_ARGS,
      'serve',
      '--port',
      '0',
      '--data',
      dir,
      '--static',
      'none',
      '--max-loaded-plans',
      '1',
      '--idle-unload',
      '2',
    ]);
    const rooms = async () =>
      ((await (await fetch(`${server.url.replace('ws', 'http')}/healthz`)).json()) as { rooms: number })
        .rooms;
    for (const planId of ['acme:cli-a', 'acme:cli-b']) {
      const doc = new Y.Doc();
      const conn = cairnClient(server.url, planId, doc);
      await conn.whenSynced();
      doc.getMap('tasks').set('t1', planId);
      await conn.whenAcknowledged();
      conn.destroy();
    }
    // Two plans used one after the other, a cap of one: the first was unloaded when the second loaded (counted
    // as it happens, so no idle timer could have done it instead).
    const metrics = await (await fetch(`${server.url.replace('ws', 'http')}/metrics`)).text();
    expect(metrics).toMatch(/^cairn_plans_evicted_total 1$/m);
    // And the last one unloads after its idle 2 s.
    await vi.waitFor(async () => expect(await rooms()).toBe(0), { timeout: 15_000, interval: 250 });
  });
});

describe('awareness', () => {
  it('relays presence and clears it when a socket closes without saying goodbye', async () => {
    const { url } = await startServer();
    const a = new Y.Doc();
    const b = new Y.Doc();
    const alice = cairnClient(url, 'acme:aw', a, { presence: { id: 'alice', name: 'Alice', kind: 'human' } });
    const watcher = stockClient(url, 'acme:aw', b);
    await Promise.all([alice.whenSynced(), whenProviderSynced(watcher)]);
    await vi.waitFor(() =>
      expect(watcher.awareness.getStates().get(a.clientID)).toMatchObject({ presence: { id: 'alice' } }),
    );

    // Cut the socket as a crash would: no "left" message is sent, the server must clear it.
    alice.provider.shouldConnect = false;
    const ws = alice.provider.ws as unknown as { real: { terminate(): void } };
    ws.real.terminate();
    await vi.waitFor(() => expect(watcher.awareness.getStates().has(a.clientID)).toBe(false));
  });

  it('reports peers’ presence to a Cairn client', async () => {
    const { url } = await startServer();
    const a = new Y.Doc();
    const b = new Y.Doc();
    const agent = cairnClient(url, 'acme:peers', a, { presence: { id: 'bot', name: 'Bot', kind: 'agent' } });
    const human = cairnClient(url, 'acme:peers', b);
    await Promise.all([agent.whenSynced(), human.whenSynced()]);
    await vi.waitFor(() =>
      expect([...human.peers().values()]).toEqual([{ id: 'bot', name: 'Bot', kind: 'agent' }]),
    );
    agent.setPresence({ id: 'bot', name: 'Bot', kind: 'agent', activeTask: 't1' });
    await vi.waitFor(() => expect(human.peers().get(a.clientID)?.activeTask).toBe('t1'));
    expect(() => agent.setPresence({ id: 'bot', name: 'Bot', kind: 'robot' } as never)).toThrow(/kind/);
  });

  it('never echoes a client’s awareness back to it, and lets nobody else speak for it', async () => {
    const secret = 'a-test-secret-that-is-long-enough-for-hs256';
    const { url } = await startServer({ secret });
    const token = (sub: string) => signToken(secret, { plan: 'acme:*', role: 'write', sub });
    const me = rawClient(url, 'acme:echo', { token: await token('me') });
    const other = rawClient(url, 'acme:echo', { token: await token('other') });
    await Promise.all([me.opened, other.opened]);
    const announce = (clientId: number, clock: number, state: unknown) => {
      const inner = encoding.createEncoder();
      encoding.writeVarUint(inner, 1);
      encoding.writeVarUint(inner, clientId);
      encoding.writeVarUint(inner, clock);
      encoding.writeVarString(inner, JSON.stringify(state));
      const outer = encoding.createEncoder();
      encoding.writeVarUint(outer, 1);
      encoding.writeVarUint8Array(outer, encoding.toUint8Array(inner));
      return encoding.toUint8Array(outer);
    };
    const mentions = (message: Uint8Array, clientId: number) => {
      const d = decoding.createDecoder(message);
      if (decoding.readVarUint(d) !== 1) return false;
      const inner = decoding.createDecoder(decoding.readVarUint8Array(d));
      const n = decoding.readVarUint(inner);
      for (let i = 0; i < n; i++) {
        const id = decoding.readVarUint(inner);
        decoding.readVarUint(inner);
        const state = decoding.readVarString(inner);
        if (id === clientId) return state;
      }
      return false;
    };
    me.send(announce(4242, 1, { presence: { id: 'me' } }));
    await other.next((m) => mentions(m, 4242) !== false);
    // Another connection tries to overwrite and then clear my presence: both are dropped.
    other.send(announce(4242, 5, { presence: { id: 'impostor' } }));
    other.send(announce(4242, 6, null));
    // An ack round trip on each socket proves everything sent before was handled.
    other.send([100, 0, 1]);
    me.send([100, 0, 1]);
    await Promise.all([other.next((m) => m[0] === 100), me.next((m) => m[0] === 100)]);
    expect(me.messages.filter((m) => mentions(m, 4242) !== false)).toEqual([]);
    const watcher = rawClient(url, 'acme:echo', { token: await token('watcher') });
    const seen = await watcher.next((m) => mentions(m, 4242) !== false);
    expect(mentions(seen, 4242)).toBe(JSON.stringify({ presence: { id: 'me' } }));
  });
});
