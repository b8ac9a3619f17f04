// A plan whose log is damaged, through the real server: refused for reading and writing (never emptied and
// started over), logged with its file, listed in /healthz and /metrics, until `cairn log repair` brings back
// every intact record; a client that still holds the lost edits then fills the gap. A torn tail is said too.
import * as nodeFs from 'node:fs';
import { planFiles } from '@cairn/core/fs';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { main } from '../src/cli.js';
import { cairnClient, seedPlan, startServer, type TestServer, tempDir } from './helpers.js';

const PLAN = 'acme:hurt';

async function get(server: TestServer, path: string) {
  const response = await fetch(`${server.http}${path}`);
  const text = await response.text();
  return {
    status: response.status,
    text,
    body: response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : null,
  };
}

async function tasksOf(server: TestServer) {
  return get(server, `/api/plans/${encodeURIComponent(PLAN)}/tasks`);
}

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(args, {
    stdout: (t) => {
      out += t;
    },
    stderr: (t) => {
      err += t;
    },
    env: {},
  });
  return { code, out, err };
}

/** A plan of 20 tasks compacted into a snapshot record, then 3 more tasks in records after it. */
async function compactedPlan(dir: string): Promise<Uint8Array> {
  const first = await startServer({ dataDir: dir });
  await seedPlan(
    first,
    PLAN,
    Array.from({ length: 20 }, (_, i) => ({ title: `Task ${i}` })),
  );
  const handle = await first.server.hub.openPlan(PLAN);
  await first.server.hub.store.compact(PLAN);
  handle.release();
  await seedPlan(first, PLAN, [{ title: 'Late 1' }, { title: 'Late 2' }, { title: 'Late 3' }]);
  const state = await (async () => {
    const h = await first.server.hub.openPlan(PLAN);
    const s = Y.encodeStateAsUpdate(h.doc);
    h.release();
    return s;
  })();
  await first.server.close();
  return state;
}

describe('a damaged plan log on the server', () => {
  it('is refused and reported until repaired, then the intact records and a client fill it back', async () => {
    const dir = await tempDir();
    const full = await compactedPlan(dir);
    const path = planFiles(dir, PLAN).log;
    const bytes = nodeFs.readFileSync(path);
    const snapshotBefore = nodeFs.readFileSync(planFiles(dir, PLAN).snapshot);
    bytes[8 + 8 + 5]! ^= 0x20; // one byte inside the snapshot record's payload
    nodeFs.writeFileSync(path, bytes);

    const server = await startServer({ dataDir: dir });
    const read = await tasksOf(server);
    expect(read.status).toBe(503);
    expect(read.body.error.message).toContain(path);
    expect(read.body.error.message).toContain('cairn log repair');
    const write = await fetch(`${server.http}/api/plans/${encodeURIComponent(PLAN)}/tools/add_tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tasks: [{ title: 'Over the top' }] }),
    });
    expect(write.status).toBe(503);
    const socket = cairnClient(server.url, PLAN, new Y.Doc(), { connect: false });
    const closed = new Promise<{ code: number }>((resolve) =>
      socket.provider.on('connection-close', (e) => resolve(e as never)),
    );
    socket.connect();
    expect((await closed).code).toBe(4503);
    socket.destroy();
    // Nothing was written over it.
    expect(nodeFs.readFileSync(path).equals(bytes)).toBe(true);
    // Beside it only the first-read snapshot the first server wrote at its close, untouched and never served.
    expect(nodeFs.readdirSync(dir).filter((name) => name.includes('hurt'))).toEqual([
      `${planFiles(dir, PLAN).log.split('/').pop()}`,
      `${planFiles(dir, PLAN).snapshot.split('/').pop()}`,
    ]);
    expect(nodeFs.readFileSync(planFiles(dir, PLAN).snapshot).equals(snapshotBefore)).toBe(true);

    const errors = server.logger.lines.filter((line) => line.level === 'error');
    expect(errors.length).toBeGreaterThan(0);
    expect(String(errors[0]?.fields?.error)).toMatch(
      /damaged.*0 intact records come before them and 3 after/,
    );
    expect(String(errors[0]?.fields?.error)).toContain(path);
    const health = await get(server, '/healthz');
    expect(health.status).toBe(200);
    expect(health.body.damagedLogs).toBe(1);
    expect(server.server.hub.store.damagedLogs?.()).toEqual([
      expect.objectContaining({ planId: PLAN, path, offset: 8, keptRecords: 0, recordsAfter: 3 }),
    ]);
    expect((await get(server, '/metrics')).text).toMatch(/^cairn_store_damaged_logs 1$/m);

    const inspect = await cli(['log', 'inspect', PLAN, '--data', dir]);
    expect(inspect.code).toBe(1);
    expect(inspect.out).toMatch(/intact records: 0 \(before the damage\)/);
    expect(inspect.out).toMatch(/3 intact records follow/);
    const repair = await cli(['log', 'repair', PLAN, '--data', dir]);
    expect(repair).toMatchObject({ code: 0, err: '' });
    expect(repair.out).toMatch(/repaired\. Kept 3 intact records/);
    expect((await cli(['log', 'inspect', PLAN, '--data', dir])).code).toBe(0);

    // The same server opens it now (no longer 503); the three later tasks wait for the snapshot they were built
    // on, so the plan shows nothing yet.
    const after = await tasksOf(server);
    expect(after.status).not.toBe(503);
    expect((await get(server, '/healthz')).body.damagedLogs).toBe(0);
    expect((await get(server, '/metrics')).text).toMatch(/^cairn_store_damaged_logs 0$/m);
    // A client that still holds the whole plan syncs: every task is back, and stored.
    const holder = new Y.Doc();
    Y.applyUpdate(holder, full);
    const conn = cairnClient(server.url, PLAN, holder);
    await conn.whenSynced();
    await conn.whenAcknowledged();
    const back = await tasksOf(server);
    expect(back.body.tasks).toHaveLength(23);
  });

  it('a log lost beside its snapshot is damage, not an unknown plan: 503, reported, never overwritten', async () => {
    // Issue 29: a deleted, emptied or header-only log next to an intact snapshot was served as "nothing was
    // ever written" (404), and one write then replaced the snapshot: 30 tasks became one.
    for (const loss of ['deleted', 'emptied', 'header only'] as const) {
      const dir = await tempDir();
      const first = await startServer({ dataDir: dir });
      await seedPlan(
        first,
        PLAN,
        Array.from({ length: 30 }, (_, i) => ({ title: `Task ${i}` })),
      );
      await first.server.close();
      const files = planFiles(dir, PLAN);
      if (loss === 'deleted') nodeFs.rmSync(files.log);
      else
        nodeFs.writeFileSync(
          files.log,
          nodeFs.readFileSync(files.log).subarray(0, loss === 'emptied' ? 0 : 8),
        );
      const snapshot = nodeFs.readFileSync(files.snapshot);

      const server = await startServer({ dataDir: dir });
      const read = await tasksOf(server);
      expect(read.status, loss).toBe(503);
      expect(read.body.error.message).toMatch(/holds less than its snapshot/);
      const write = await fetch(`${server.http}/api/plans/${encodeURIComponent(PLAN)}/tools/add_tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tasks: [{ title: 'Over the top' }] }),
      });
      expect(write.status).toBe(503);
      expect(nodeFs.readFileSync(files.snapshot).equals(snapshot)).toBe(true);
      expect(nodeFs.existsSync(files.log)).toBe(loss !== 'deleted');
      expect((await get(server, '/healthz')).body.damagedLogs).toBe(1);
      expect((await get(server, '/metrics')).text).toMatch(/^cairn_store_damaged_logs 1$/m);
      expect(server.server.hub.store.damagedLogs?.()).toEqual([
        expect.objectContaining({
          planId: PLAN,
          keptRecords: 0,
          snapshot: expect.objectContaining({ clients: 1 }),
        }),
      ]);
      const logged = server.logger.lines.find((line) => line.level === 'error');
      expect(String(logged?.fields?.error)).toContain(files.snapshot);

      const inspect = await cli(['log', 'inspect', PLAN, '--data', dir]);
      expect(inspect.code).toBe(1);
      expect(inspect.out).toMatch(/holds less than its snapshot/);
      const repair = await cli(['log', 'repair', PLAN, '--data', dir, '--from-snapshot']);
      expect(repair).toMatchObject({ code: 0, err: '' });
      expect(repair.out).toMatch(/snapshot.* kept at .*\.snap\.damaged-\d+.*content written back/s);
      const back = await tasksOf(server);
      expect(back.status).toBe(200);
      expect(back.body.tasks).toHaveLength(30);
      expect((await get(server, '/healthz')).body.damagedLogs).toBe(0);
      await server.server.close();
    }
  });

  it('cuts a torn tail, logs it with the file and what was cut, and counts it', async () => {
    const dir = await tempDir();
    const first = await startServer({ dataDir: dir });
    await seedPlan(first, PLAN, [{ title: 'Kept' }]);
    await first.server.close();
    const path = planFiles(dir, PLAN).log;
    nodeFs.appendFileSync(path, Uint8Array.of(40, 0, 0, 0, 1, 2, 3, 4, 5, 6));

    const server = await startServer({ dataDir: dir });
    const read = await tasksOf(server);
    expect(read.status).toBe(200);
    expect(read.body.tasks).toHaveLength(1);
    const line = server.logger.lines.find((l) => l.level === 'error');
    expect(String(line?.fields?.error)).toContain(path);
    expect(String(line?.fields?.error)).toMatch(/incomplete record .* cut 10 bytes/);
    expect((await get(server, '/metrics')).text).toMatch(/^cairn_store_torn_tails_total 1$/m);
    expect((await get(server, '/healthz')).body.damagedLogs).toBe(0);
  });
});
