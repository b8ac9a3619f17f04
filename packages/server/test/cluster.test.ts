// Three instances sharing plans through a real redis-server and PostgreSQL: stock y-websocket and Cairn clients on
// different instances converge under random edits (title text included), presence crosses instances, an
// acknowledged edit is in PostgreSQL, /healthz names both services, and bad configurations are refused.
import { createClient } from 'redis';
import { describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import { seeded } from '../../core/src/testing/seeded.js';
import { connectCluster, PostgresStore } from '../src/cluster/index.js';
import { ADD_ENTRY } from '../src/cluster/stream-entries.js';
import { startInstance, useClusterServices } from './cluster-helpers.js';
import { cairnClient, onCleanup, stockClient, whenProviderSynced } from './helpers.js';

const services = useClusterServices();

/** What every replica must agree on: the tasks map and every title's text. */
function content(doc: Y.Doc): unknown {
  const tasks = doc.getMap<Y.Map<unknown>>('tasks');
  return Object.fromEntries(
    [...tasks.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([id, task]) => [id, { n: task.get('n'), title: String(task.get('title') ?? '') }]),
  );
}

/**
 * What an instance that died between the stream and its commit leaves behind: its update in the plan's stream,
 * numbered `seq`, and no confirmation after it.
 */
async function addUnconfirmed(plan: string, ghost: unknown, seq: number): Promise<void> {
  const redis = await redisOfTest();
  // Added as an instance adds it: to the stream, and published on the plan's live channel.
  await redis.sendCommand([
    'EVAL',
    ADD_ENTRY,
    '1',
    `cairn:plan:${plan}:updates`,
    `cairn:plan:${plan}:live`,
    '0',
    'i',
    'an-instance-that-died',
    'u',
    taskUpdateBase64('ghost', ghost),
    's',
    String(seq),
  ]);
}

/** An update that sets one task key, base64 as a stream entry carries it. */
function taskUpdateBase64(key: string, value: unknown): string {
  const update = new Y.Doc();
  update.getMap('tasks').set(key, value);
  return Buffer.from(Y.encodeStateAsUpdate(update)).toString('base64');
}

/** A Cairn client on each of `instances`, each with a doc of its own, synced to `plan`. */
async function clientOnEach(instances: Array<{ url: string }>, plan: string) {
  const docs = instances.map(() => new Y.Doc());
  const conns = instances.map((instance, i) => cairnClient(instance.url, plan, docs[i]!));
  await Promise.all(conns.map((c) => c.whenSynced()));
  return { docs, conns };
}

/** A Redis connection of the test's own, closed after it. */
async function redisOfTest() {
  const redis = createClient({ url: services.redis.url });
  await redis.connect();
  onCleanup(() => redis.destroy());
  return redis;
}

describe('three instances on Redis and PostgreSQL', () => {
  it('stock y-websocket and Cairn clients on different instances converge under random edits, titles included', async () => {
    const instances = await Promise.all([0, 1, 2].map(() => startInstance(services)));
    const plan = 'acme:converge';
    const docs: Y.Doc[] = [];
    const cairns = instances.map((instance) => {
      const doc = new Y.Doc();
      docs.push(doc);
      return cairnClient(instance.url, plan, doc);
    });
    const stocks = instances.map((instance) => {
      const doc = new Y.Doc();
      docs.push(doc);
      return stockClient(instance.url, plan, doc);
    });
    await Promise.all([...cairns.map((c) => c.whenSynced()), ...stocks.map(whenProviderSynced)]);

    const random = seeded(13);
    // Every client creates its own tasks first, then everyone edits everyone's tasks (once they have arrived).
    docs.forEach((doc, i) => {
      doc.transact(() => {
        for (let t = 0; t < 3; t++) {
          const task = new Y.Map<unknown>();
          task.set('n', 0);
          task.set('title', new Y.Text(`task ${i}.${t}`));
          doc.getMap('tasks').set(`t${i}-${t}`, task);
        }
      });
    });
    for (let round = 0; round < 200; round++) {
      const doc = docs[Math.floor(random() * docs.length)]!;
      const tasks = [...doc.getMap<Y.Map<unknown>>('tasks').values()];
      const task = tasks[Math.floor(random() * tasks.length)]!;
      const roll = random();
      if (roll < 0.4) task.set('n', Math.floor(random() * 1000));
      else {
        const title = task.get('title') as Y.Text;
        if (roll < 0.8 || title.length < 2)
          title.insert(Math.floor(random() * (title.length + 1)), 'xyz'[round % 3]!);
        else title.delete(Math.floor(random() * (title.length - 1)), 1);
      }
      if (round % 20 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await Promise.all(cairns.map((c) => c.whenAcknowledged()));
    await vi.waitFor(
      () => {
        const first = content(docs[0]!);
        expect(Object.keys(first as object)).toHaveLength(18);
        for (const doc of docs) expect(content(doc)).toEqual(first);
      },
      { timeout: 30_000, interval: 100 },
    );
    // The servers agree with the clients, and PostgreSQL holds it all.
    const stored = new Y.Doc();
    for (const u of await instances[0]!.cluster.store.readStored(plan)) Y.applyUpdate(stored, u);
    const acked = content(docs[0]!);
    for (const i of [0, 1, 2]) {
      const cairnDoc = docs[i]!;
      expect(content(cairnDoc)).toEqual(acked);
    }
    // Every Cairn client's edits were acknowledged, so they are stored; the stock clients' may still be arriving.
    await vi.waitFor(async () => {
      const again = new Y.Doc();
      for (const u of await instances[0]!.cluster.store.readStored(plan)) Y.applyUpdate(again, u);
      expect(content(again)).toEqual(acked);
    });
  });

  it('presence set on one instance is seen by clients of the others, and leaves with its client', async () => {
    const [a, b] = await Promise.all([startInstance(services), startInstance(services)]);
    const plan = 'acme:presence';
    const alice = cairnClient(a!.url, plan, new Y.Doc());
    const bob = cairnClient(b!.url, plan, new Y.Doc());
    await Promise.all([alice.whenSynced(), bob.whenSynced()]);
    alice.setPresence({ id: 'user:alice', name: 'Alice', kind: 'human', activeTask: 't1' });
    await vi.waitFor(() =>
      expect([...bob.peers().values()]).toContainEqual(
        expect.objectContaining({ id: 'user:alice', activeTask: 't1' }),
      ),
    );
    // A client joining later on a third instance sees Alice at once (the instances answer a presence query).
    const c = await startInstance(services);
    const carol = cairnClient(c.url, plan, new Y.Doc());
    await carol.whenSynced();
    await vi.waitFor(() =>
      expect([...carol.peers().values()]).toContainEqual(expect.objectContaining({ id: 'user:alice' })),
    );
    alice.destroy();
    await vi.waitFor(() => expect([...bob.peers().values()].map((p) => p.id)).not.toContain('user:alice'));
  });

  it('an acknowledged edit is in PostgreSQL, and an instance started later loads it', async () => {
    const a = await startInstance(services);
    const doc = new Y.Doc();
    const conn = cairnClient(a.url, 'acme:durable', doc);
    await conn.whenSynced();
    doc.getMap('tasks').set('t1', 'stored');
    await conn.whenAcknowledged();
    const stored = new Y.Doc();
    for (const u of await a.cluster.store.readStored('acme:durable')) Y.applyUpdate(stored, u);
    expect(stored.getMap('tasks').get('t1')).toBe('stored');
    await a.server.close();
    const b = await startInstance(services);
    const copy = new Y.Doc();
    const reader = cairnClient(b.url, 'acme:durable', copy);
    await reader.whenSynced();
    expect(copy.getMap('tasks').get('t1')).toBe('stored');
  });

  it('stores each update once, where it entered: 1,000 edits from clients on three instances make at most 1,000 rows plus compactions', async () => {
    const instances = await Promise.all([0, 1, 2].map(() => startInstance(services)));
    const plan = 'acme:once';
    const { docs, conns } = await clientOnEach(instances, plan);
    const edits = 1_000;
    for (let n = 0; n < edits; n++) {
      docs[n % 3]!.getMap('tasks').set(`k${n}`, n); // one transaction, one update
      if (n % 50 === 49) await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(conns.map((c) => c.whenAcknowledged()));
    // Every instance has every edit (so each had the chance to store what it relayed) and has stored all it will.
    await vi.waitFor(
      () => {
        for (const doc of docs) expect(doc.getMap('tasks').size).toBe(edits);
      },
      { timeout: 30_000 },
    );
    await Promise.all(instances.map((i) => i.cluster.store.flush(plan)));
    const metrics = instances.map((i) => i.cluster.store.metrics());
    const appended = metrics.reduce((n, m) => n + m.appends, 0);
    const compactions = metrics.reduce((n, m) => n + m.compactions, 0);
    expect(appended).toBeLessThanOrEqual(edits);
    const { rows } = await instances[0]!.cluster.store.pool.query<{ count: string }>(
      'SELECT count(*) FROM cairn_updates WHERE plan_id = $1',
      [plan],
    );
    expect(Number(rows[0]!.count)).toBeLessThanOrEqual(edits + compactions);
    const stored = new Y.Doc();
    for (const u of await instances[0]!.cluster.store.readStored(plan)) Y.applyUpdate(stored, u);
    expect(stored.getMap('tasks').size).toBe(edits);
    expect(stored.store.pendingStructs).toBeNull();
  });

  it('a confirmation wakes no reader: the stream holds the updates alone, and each instance confirms its last one beside it', async () => {
    const instances = await Promise.all([0, 1].map(() => startInstance(services)));
    const plan = 'acme:confirmed';
    const { docs, conns } = await clientOnEach(instances, plan);
    for (let n = 0; n < 30; n++) {
      docs[n % 2]!.getMap('tasks').set(`k${n}`, n);
      await conns[n % 2]!.whenAcknowledged(); // each edit its own update, committed and confirmed
    }
    await vi.waitFor(() => expect(docs.map((d) => d.getMap('tasks').size)).toEqual([30, 30]));
    const redis = await redisOfTest();
    const entries = (await redis.sendCommand(['XRANGE', `cairn:plan:${plan}:updates`, '-', '+'])) as Array<
      [string, string[]]
    >;
    expect(entries).toHaveLength(30);
    for (const [, fields] of entries) expect(fields).toContain('u');
    for (const instance of instances) {
      const id = instance.cluster.relay()!.instanceId;
      await vi.waitFor(async () => expect(await redis.get(`cairn:plan:${plan}:confirmed:${id}`)).toBe('15'));
      expect(await redis.pTTL(`cairn:plan:${plan}:confirmed:${id}`)).toBeGreaterThan(0);
    }
  });

  it('an instance that loads a plan again and again while another streams edits into it ends with every edit, and reports no failure', async () => {
    // The second unloads the plan as soon as its client leaves, so each client there loads it again.
    const [a, b] = await Promise.all([{}, { idleUnloadMs: 1 }].map((o) => startInstance(services, o)));
    const plan = 'acme:loading';
    const { docs, conns } = await clientOnEach([a!], plan);
    const writer = docs[0]!;
    let n = 0;
    let streaming = true;
    const stream = (async () => {
      while (streaming) {
        writer.getMap('tasks').set(`k${n}`, n);
        n++;
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    })();
    // The second instance loads the plan in the middle of the stream, several times over.
    const readers: Y.Doc[] = [];
    for (let round = 0; round < 5; round++) {
      await new Promise((resolve) => setTimeout(resolve, 40));
      const doc = new Y.Doc();
      const conn = cairnClient(b!.url, plan, doc);
      await conn.whenSynced();
      readers.push(doc);
      if (round < 4) {
        conn.destroy();
        await vi.waitFor(() => expect(b!.server.hub.roomCount).toBe(0));
      }
    }
    streaming = false;
    await stream;
    await conns[0]!.whenAcknowledged();
    const last = readers.at(-1)!;
    await vi.waitFor(() => expect(last.getMap('tasks').size).toBe(n));
    expect(last.getMap('tasks').toJSON()).toEqual(writer.getMap('tasks').toJSON());
    expect(b!.logger.lines.filter((line) => line.level === 'error')).toEqual([]);
  });

  it('an entry whose push was missed is read from the stream: at the next push, or after the subscriber reconnects on a quiet plan', async () => {
    const instances = await Promise.all([0, 1].map(() => startInstance(services)));
    const plan = 'acme:missed';
    const { docs, conns } = await clientOnEach(instances, plan);
    const redis = await redisOfTest();
    // An entry in the stream that no one was told of (its message lost): a durable whole update, as re-published.
    const addSilently = (key: string) =>
      redis.sendCommand([
        'XADD',
        `cairn:plan:${plan}:updates`,
        '*',
        'i',
        'an-instance-unheard',
        'u',
        taskUpdateBase64(key, 'in the stream only'),
      ]);
    await addSilently('missed');
    // The next push names the missed entry as the one before it: the second instance reads the gap first.
    docs[0]!.getMap('tasks').set('next', 'pushed');
    await conns[0]!.whenAcknowledged();
    await vi.waitFor(() =>
      expect(docs[1]!.getMap('tasks').toJSON()).toEqual({ missed: 'in the stream only', next: 'pushed' }),
    );
    // Every subscriber connection dropped, and an entry added before they are back; no push follows it.
    await redis.sendCommand(['CLIENT', 'KILL', 'TYPE', 'pubsub']);
    await addSilently('while away');
    await vi.waitFor(
      () => {
        for (const doc of docs) expect(doc.getMap('tasks').get('while away')).toBe('in the stream only');
      },
      { timeout: 5_000 },
    );
    // And the feed carries on after the reconnection.
    docs[1]!.getMap('tasks').set('after', 'pushed again');
    await vi.waitFor(() => expect(docs[0]!.getMap('tasks').get('after')).toBe('pushed again'));
  });

  it('an update shared but never confirmed (its instance died before committing it) is stored by the instance that acknowledges an edit on top of it', async () => {
    const a = await startInstance(services, { cluster: { relay: { confirmMs: 300 } } });
    const plan = 'acme:unconfirmed';
    const doc = new Y.Doc();
    const conn = cairnClient(a.url, plan, doc);
    await conn.whenSynced();
    await addUnconfirmed(plan, 'from an instance that died', 1);
    await vi.waitFor(() => expect(doc.getMap('tasks').get('ghost')).toBeDefined());
    doc.getMap('tasks').set('built', 'on top of it');
    await conn.whenAcknowledged();
    const stored = new Y.Doc();
    for (const u of await a.cluster.store.readStored(plan)) Y.applyUpdate(stored, u);
    expect(stored.getMap('tasks').toJSON()).toEqual({
      ghost: 'from an instance that died',
      built: 'on top of it',
    });
    expect(await (await fetch(`${a.http}/metrics`)).text()).toMatch(
      /cairn_cluster_stored_for_others_total 1\b/,
    );
  });

  it('an unconfirmed update is stored once overdue even when no acknowledgement waits for it; confirmed ones never are', async () => {
    const instances = await Promise.all(
      [0, 1].map(() => startInstance(services, { cluster: { relay: { confirmMs: 300 } } })),
    );
    const plan = 'acme:overdue';
    const { docs, conns } = await clientOnEach(instances, plan);
    // Confirmed traffic both ways: nothing is stored for another instance.
    for (let n = 0; n < 40; n++) docs[n % 2]!.getMap('tasks').set(`k${n}`, n);
    await Promise.all(conns.map((c) => c.whenAcknowledged()));
    await vi.waitFor(() => expect(docs.map((d) => d.getMap('tasks').size)).toEqual([40, 40]));
    await addUnconfirmed(plan, 1, 7);
    const counts = async () =>
      Promise.all(
        instances.map(async (i) => {
          const text = await (await fetch(`${i.http}/metrics`)).text();
          return Number(/cairn_cluster_stored_for_others_total (\d+)/.exec(text)?.[1] ?? 'NaN');
        }),
      );
    // Each instance holding the plan stores it (a duplicate Yjs ignores); none stored anything before.
    await vi.waitFor(async () => expect(await counts()).toEqual([1, 1]), { timeout: 10_000 });
    const stored = new Y.Doc();
    for (const u of await instances[0]!.cluster.store.readStored(plan)) Y.applyUpdate(stored, u);
    expect(stored.getMap('tasks').get('ghost')).toBe(1);
    expect(stored.getMap('tasks').size).toBe(41);
  });

  it('/healthz reports Redis and PostgreSQL; /metrics counts what crossed instances', async () => {
    const [a, b] = await Promise.all([startInstance(services), startInstance(services)]);
    const health = await (await fetch(`${a.http}/healthz`)).json();
    expect(health).toMatchObject({ ok: true, services: { redis: 'ok', postgres: 'ok' } });
    const docA = new Y.Doc();
    const docB = new Y.Doc();
    const ca = cairnClient(a.url, 'acme:metrics', docA);
    const cb = cairnClient(b.url, 'acme:metrics', docB);
    await Promise.all([ca.whenSynced(), cb.whenSynced()]);
    docA.getMap('tasks').set('x', 1);
    await vi.waitFor(() => expect(docB.getMap('tasks').get('x')).toBe(1));
    const [fromA, fromB] = await Promise.all(
      [a, b].map(async (i) => (await fetch(`${i.http}/metrics`)).text()),
    );
    expect(fromA).toMatch(/cairn_cluster_published_total [1-9]/);
    expect(fromB).toMatch(/cairn_cluster_received_total [1-9]/);
    // Where the edit's way to B's clients went: its publication on A, its relay to B.
    expect(fromA).toMatch(/cairn_cluster_publish_seconds_count [1-9]/);
    expect(fromB).toMatch(/cairn_cluster_relay_seconds_count [1-9]/);
    expect(fromA).toMatch(/cairn_cluster_relay_seconds_count 0\b/);
  });

  it('refuses to start when a service is down, naming its URL, and refuses a mixed configuration', async () => {
    await expect(
      connectCluster({ redisUrl: 'redis://127.0.0.1:1', postgresUrl: services.postgres.url }),
    ).rejects.toMatchObject({ code: 'storage', message: expect.stringContaining('redis://127.0.0.1:1') });
    await expect(
      connectCluster({
        redisUrl: services.redis.url,
        postgresUrl: 'postgres://cairn:secret@127.0.0.1:1/cairn',
      }),
    ).rejects.toMatchObject({
      code: 'storage',
      message: expect.stringMatching(/postgres:\/\/cairn:\*\*\*@127\.0\.0\.1:1\/cairn/),
    });
    // The database serves a cluster: a single server (no Redis) on it is refused.
    await expect(PostgresStore.connect(services.postgres.url)).rejects.toMatchObject({
      code: 'invalid_argument',
      message: expect.stringMatching(/store of a cluster: start this server with --redis/),
    });
    // Another database on the same Redis: refused, so two clusters never mix their plans.
    const other = await PostgresStore.connect(services.postgres.url.replace(/\/cairn$/, '/postgres'), {
      mode: 'cluster',
    });
    onCleanup(() => other.close());
    await other.pool.query('CREATE DATABASE other');
    await expect(
      connectCluster({
        redisUrl: services.redis.url,
        postgresUrl: services.postgres.url.replace(/\/cairn$/, '/other'),
      }),
    ).rejects.toMatchObject({
      code: 'invalid_argument',
      message: expect.stringMatching(/another PostgreSQL/),
    });
  });
});
