// The stores on their own and through the hub: reload, compaction, one owner per directory, and write errors that
// reach the logs, the metrics and the client's acknowledgement instead of vanishing.
import * as nodeFs from 'node:fs';
import { planFiles, UpdateLog } from '@cairn/core/fs';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { DiskStore, MemoryStore, type PlanStore } from '../src/index.js';
import { cairnClient, onCleanup, startServer, storedDoc, tempDir } from './helpers.js';

async function roundTrip(store: PlanStore, reopen: () => PlanStore) {
  const doc = new Y.Doc();
  await store.load('p', () => Y.encodeStateAsUpdate(doc));
  doc.on('update', (u: Uint8Array) => store.append('p', u));
  for (let i = 0; i < 100; i++) doc.getMap('tasks').set(`t${i}`, i);
  await store.flush('p');
  await store.release('p');
  const again = reopen();
  const copy = new Y.Doc();
  for (const u of await again.load('p', () => Y.encodeStateAsUpdate(copy))) Y.applyUpdate(copy, u);
  expect(copy.getMap('tasks').toJSON()).toEqual(doc.getMap('tasks').toJSON());
  return again;
}

describe('stores', () => {
  it('DiskStore: reloads what it stored and compacts a long history', async () => {
    const dir = await tempDir();
    const store = DiskStore.open(dir, { compaction: { records: 10, minBytes: 0 } });
    onCleanup(() => store.close());
    await roundTrip(store, () => store);
    expect(store.metrics().compactions).toBeGreaterThan(0);
    expect((UpdateLog.read(planFiles(dir, 'p').log) ?? []).length).toBeLessThan(20);
    expect(store.metrics()).toMatchObject({ plans: 1, appends: 100, errors: 0 });
  });

  it('MemoryStore: keeps plans across release', async () => {
    const store = new MemoryStore({ compactAfter: 10 });
    await roundTrip(store, () => store);
    expect(store.metrics().compactions).toBeGreaterThan(0);
  });

  it('DiskStore and MemoryStore: refuse a second load of a plan they hold, as locked', async () => {
    const disk = DiskStore.open(await tempDir());
    onCleanup(() => disk.close());
    for (const store of [disk, new MemoryStore()]) {
      await store.load('twice', () => new Uint8Array());
      await expect(store.load('twice', () => new Uint8Array())).rejects.toMatchObject({ code: 'locked' });
    }
  });

  it('DiskStore: a data directory has one server at a time', async () => {
    const dir = await tempDir();
    const store = DiskStore.open(dir);
    onCleanup(() => store.close());
    expect(() => DiskStore.open(dir)).toThrow(
      expect.objectContaining({
        code: 'locked',
        message: expect.stringMatching(/used by another Cairn server/),
      }),
    );
    await store.close();
    const next = DiskStore.open(dir);
    await next.close();
  });

  it('DiskStore: refuses plan ids it cannot store, before anything is created', async () => {
    const store = DiskStore.open(await tempDir());
    onCleanup(() => store.close());
    expect(() => store.validatePlanId('x'.repeat(300))).toThrow(
      expect.objectContaining({ code: 'invalid_argument' }),
    );
  });
});

/** Node's fs whose writes fail with ENOSPC while `full` is set. */
function fullableDisk() {
  const disk = {
    full: false,
    fs: {
      ...nodeFs,
      writeSync: ((...args: Parameters<typeof nodeFs.writeSync>) => {
        if (disk.full) throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
        return (nodeFs.writeSync as (...a: unknown[]) => number)(...args);
      }) as typeof nodeFs.writeSync,
    } as typeof nodeFs,
  };
  return disk;
}

describe('store errors through the server', () => {
  it('fails the acknowledgement, logs and counts a failed write, and repairs the log once the disk recovers', async () => {
    const dir = await tempDir();
    const disk = fullableDisk();
    const store = DiskStore.open(dir, { fs: disk.fs });
    const { url, http, logger } = await startServer({ store });
    const doc = new Y.Doc();
    const conn = cairnClient(url, 'acme:full', doc);
    await conn.whenSynced();
    doc.getMap('tasks').set('t0', 'the plan exists'); // its log is open: the next write is an append to it
    await conn.whenAcknowledged();

    disk.full = true;
    doc.getMap('tasks').set('t1', 'while the disk is full');
    await expect(conn.whenAcknowledged()).rejects.toMatchObject({
      code: 'storage',
      message: expect.stringMatching(/ENOSPC/),
    });
    expect(logger.lines).toContainEqual(
      expect.objectContaining({ level: 'error', message: 'could not store an update' }),
    );
    const metrics = await (await fetch(`${http}/metrics`)).text();
    expect(metrics).toMatch(/cairn_errors_total\{kind="store_append"\} 1/);
    expect(metrics).toMatch(/cairn_acks_total\{result="error"\} 1/);

    disk.full = false;
    await conn.whenAcknowledged();
    expect(storedDoc(dir, 'acme:full').getMap('tasks').get('t1')).toBe('while the disk is full');
  });

  it('fails the acknowledgement of a new plan’s first write while the disk is full, and stores it once it recovers', async () => {
    const dir = await tempDir();
    const disk = fullableDisk();
    const { url } = await startServer({ store: DiskStore.open(dir, { fs: disk.fs }), dataDir: dir });
    const doc = new Y.Doc();
    const conn = cairnClient(url, 'acme:new', doc);
    await conn.whenSynced();
    disk.full = true;
    doc.getMap('tasks').set('t1', 'first write, disk full');
    await expect(conn.whenAcknowledged()).rejects.toMatchObject({ code: 'storage' });
    disk.full = false;
    await conn.whenAcknowledged();
    expect(storedDoc(dir, 'acme:new').getMap('tasks').get('t1')).toBe('first write, disk full');
  });

  it('closes clients with 4503 when a plan cannot be loaded, and keeps serving others', async () => {
    const dir = await tempDir();
    nodeFs.writeFileSync(planFiles(dir, 'broken').log, 'this is not an update log');
    const { url, logger } = await startServer({ dataDir: dir });
    const conn = cairnClient(url, 'broken', new Y.Doc(), { connect: false });
    const closed = new Promise<{ code: number }>((resolve) =>
      conn.provider.on('connection-close', (e) => resolve(e as never)),
    );
    conn.connect();
    expect((await closed).code).toBe(4503);
    conn.destroy();
    expect(logger.lines).toContainEqual(
      expect.objectContaining({ level: 'error', message: 'could not load a plan' }),
    );
    const ok = cairnClient(url, 'fine', new Y.Doc());
    await ok.whenSynced();
  });
});
