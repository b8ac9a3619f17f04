// PostgreSQL on the one persistence core, against a real postgres on a free port: its byte adapter passes the
// contract's suite (rows shared by every instance), and its PlanStore keeps what another instance wrote through
// a merge, refuses a second load, and after a failed insert rewrites the whole state at the next flush.
import { runByteAdapterTests } from '@cairn/core/testing';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { CompactionWorker } from '../src/cluster/compaction-worker.js';
import { PostgresStore } from '../src/cluster/index.js';
import { PostgresByteAdapter } from '../src/cluster/postgres-adapter.js';
import { onCleanup } from './helpers.js';
import { type Service, startPostgres } from './services.js';

let postgres: Service;
let admin: PostgresStore;
beforeAll(async () => {
  postgres = await startPostgres();
  admin = await PostgresStore.connect(postgres.url); // creates the schema
}, 120_000);
afterAll(async () => {
  await admin?.close();
  await postgres?.destroy();
});

runByteAdapterTests('postgres', async () => {
  await admin.pool.query('TRUNCATE cairn_updates');
  const opened: Array<{ pool: pg.Pool; worker: CompactionWorker }> = [];
  // Each adapter is an instance of its own: its pool, its compaction worker.
  const instance = () => {
    const pool = new pg.Pool({ connectionString: postgres.url, max: 2 });
    const worker = new CompactionWorker(postgres.url);
    opened.push({ pool, worker });
    return new PostgresByteAdapter(pool, postgres.url, worker);
  };
  return {
    adapter: instance(),
    reopen: instance,
    secondLock: 'shared',
    teardown: async () => {
      await Promise.all(opened.map(({ pool, worker }) => Promise.all([pool.end(), worker.close()])));
    },
  };
});

/** Loads a plan as the hub does: rows applied to `doc`, its later changes appended. */
async function load(store: PostgresStore, planId: string, doc = new Y.Doc()): Promise<Y.Doc> {
  for (const update of await store.load(planId, () => Y.encodeStateAsUpdate(doc))) {
    Y.applyUpdate(doc, update, 'store');
  }
  doc.on('update', (update: Uint8Array, origin: unknown) => {
    if (origin !== 'store') store.append(planId, update);
  });
  return doc;
}

async function stored(planId: string): Promise<Y.Doc> {
  const doc = new Y.Doc();
  for (const update of await admin.readStored(planId)) Y.applyUpdate(doc, update);
  return doc;
}

async function open(options: { compactAfter?: number } = {}): Promise<PostgresStore> {
  const store = await PostgresStore.connect(postgres.url, { compactAfter: 100_000, ...options });
  onCleanup(() => store.close().catch(() => undefined));
  return store;
}

describe('PostgresStore on StoredLog', () => {
  it('flush means committed, and another instance loads it all back (maps, text)', async () => {
    const store = await open();
    const doc = await load(store, 'acme:flush');
    for (let i = 0; i < 100; i++) doc.getMap('tasks').set(`t${i}`, new Y.Map([['n', i]]));
    const title = new Y.Text();
    doc.getMap('meta').set('title', title);
    title.insert(0, 'a plan');
    await store.flush('acme:flush');
    expect((await stored('acme:flush')).getMap('tasks').size).toBe(100);
    const other = await open();
    const copy = await load(other, 'acme:flush');
    expect(copy.getMap('meta').toJSON()).toEqual({ title: 'a plan' });
    expect(copy.getMap('tasks').toJSON()).toEqual(doc.getMap('tasks').toJSON());
    expect(other.metrics().plans).toBe(1);
  });

  it('opens the connections it keeps at start and keeps them open past the idle timeout', async () => {
    const store = await PostgresStore.connect(postgres.url, { poolKept: 3 });
    onCleanup(() => store.close().catch(() => undefined));
    const backends = async () =>
      Number(
        (
          await admin.pool.query<{ n: string }>(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE backend_type = 'client backend'",
          )
        ).rows[0]!.n,
      );
    expect(store.pool.totalCount).toBe(3);
    expect(store.pool.idleCount).toBe(3);
    const before = await backends();
    // pg's pool closes an idle connection after 10 s unless it is one of those kept: none may go.
    await new Promise((resolve) => setTimeout(resolve, 10_500));
    expect(store.pool.totalCount).toBe(3);
    expect(await backends()).toBe(before);
  }, 20_000);

  it('refuses a second load of a plan it holds, as locked', async () => {
    const store = await open();
    await load(store, 'acme:twice');
    await expect(store.load('acme:twice', () => new Uint8Array())).rejects.toMatchObject({ code: 'locked' });
  });

  it('a merge in one instance keeps the rows another wrote that the first never saw', async () => {
    const a = await open();
    const b = await open();
    const docA = await load(a, 'acme:two');
    docA.getMap('tasks').set('a0', 1);
    await a.flush('acme:two');
    const docB = await load(b, 'acme:two');
    expect(docB.getMap('tasks').get('a0')).toBe(1);
    docB.getMap('tasks').set('b0', 2); // not in docA: a's merge must keep it
    await b.flush('acme:two');
    for (let i = 0; i < 50; i++) docA.getMap('tasks').set('a0', i);
    await a.flush('acme:two');
    await a.compact('acme:two');
    expect(a.metrics()).toMatchObject({ appends: 51, compactions: 1 });
    expect((await admin.readStored('acme:two')).length).toBe(1);
    const tasks = (await stored('acme:two')).getMap('tasks');
    expect(tasks.get('b0')).toBe(2);
    expect(tasks.get('a0')).toBe(49);
  });

  it('after a failed insert, committed() rejects without retrying and the next flush rewrites the whole state', async () => {
    const store = await open();
    const errors: Array<string | undefined> = [];
    store.onError((_error, _planId, what) => errors.push(what));
    const doc = await load(store, 'acme:down');
    doc.getMap('tasks').set('before', 1);
    await store.flush('acme:down');
    // The table is gone for a moment (a failover, a permission revoked): the next insert fails.
    await admin.pool.query('ALTER TABLE cairn_updates RENAME TO cairn_updates_away');
    try {
      doc.getMap('tasks').set('lost', 2);
      await expect(store.committed('acme:down')).rejects.toMatchObject({ code: 'storage' });
      expect(errors).toEqual(['append']);
      doc.getMap('tasks').set('while-down', 3);
      await expect(store.committed('acme:down')).rejects.toMatchObject({ code: 'storage' });
    } finally {
      await admin.pool.query('ALTER TABLE cairn_updates_away RENAME TO cairn_updates');
    }
    // The failed insert's error rejects one flush; the rewrite it started has stored the whole state.
    await store.flush('acme:down').catch(() => undefined);
    await store.flush('acme:down');
    await store.committed('acme:down');
    expect((await stored('acme:down')).getMap('tasks').toJSON()).toEqual({
      before: 1,
      lost: 2,
      'while-down': 3,
    });
  });
});
