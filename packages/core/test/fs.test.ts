// @cairn/core/fs on real files in a temp dir: the first-read tests, then what only a log file has (locks
// across processes, torn tails, compaction, recovery from a full disk). Damaged logs: fs-damage.test.ts.
import type { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import {
  encodePlanName,
  type FilePersistenceOptions,
  type LogRecovery,
  openFilePersistence,
  openFilePlan,
  planFiles,
  SnapshotWriter,
  UpdateLog,
} from '../src/adapters/fs.js';
import { CairnError } from '../src/errors.js';
import { createPlan } from '../src/plan.js';
import { runFirstReadTests } from './first-read-suite.js';
import { spawnEditor } from './fixtures/spawn-editor.js';

/** node:fs with writes sent to /dev/full while `armed`: the kernel's own ENOSPC, on demand. */
function fullDiskFs(): { fs: typeof fs; arm(on: boolean): void } {
  let armed = false;
  const full = fs.openSync('/dev/full', 'w');
  const writeSync = ((fd: number, ...rest: unknown[]) =>
    (fs.writeSync as (...args: unknown[]) => number)(armed ? full : fd, ...rest)) as typeof fs.writeSync;
  return {
    fs: { ...fs, writeSync },
    arm(on) {
      armed = on;
    },
  };
}

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'cairn-fs-'));
}

runFirstReadTests('fs', async () => {
  const dir = await tempDir();
  const quiet: FilePersistenceOptions = { onRecover: () => undefined };
  return {
    open: openFilePersistence(dir, quiet),
    openPlan: (name, plan) => openFilePlan(dir, name, { ...quiet, plan }),
    appendRaw: async (name, update) => {
      // What any other writer of the log does (an older version, the server's store): append a record.
      const log = UpdateLog.open(planFiles(dir, name).log);
      log.append(update);
      await log.close();
    },
    damageSnapshot: async (name) => {
      const path = planFiles(dir, name).snapshot;
      const bytes = fs.readFileSync(path);
      bytes[bytes.byteLength >> 1]! ^= 0x20;
      fs.writeFileSync(path, bytes);
    },
    teardown: () => rm(dir, { recursive: true, force: true }),
  };
});

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});
async function freshDir(): Promise<string> {
  const dir = await tempDir();
  dirs.push(dir);
  return dir;
}

function json(doc: Y.Doc): unknown {
  return { m: doc.getMap('m').toJSON(), t: doc.getText('t').toString() };
}

function edit(doc: Y.Doc, key: string, value: unknown): void {
  doc.transact(() => doc.getMap('m').set(key, value), 'agent:test');
}

async function openLoaded(dir: string, name: string, options: FilePersistenceOptions = {}) {
  const doc = new Y.Doc();
  const p = openFilePersistence(dir, options)(name, doc);
  await p.whenLoaded;
  return { doc, p };
}

describe('fs: plan names', () => {
  it('encodes names injectively, inside the directory, apart on case-insensitive disks', () => {
    expect(encodePlanName('biz-1_conv.7')).toBe('biz-1_conv.7');
    expect(encodePlanName('a:b')).toBe('a%3Ab');
    expect(encodePlanName('Plan')).not.toBe(encodePlanName('plan'));
    expect(encodePlanName('Plan').toLowerCase()).not.toBe(encodePlanName('plan'));
    for (const evil of ['..', '.', '../x', 'a/b', 'a\\b', '/etc/passwd', '\0']) {
      const encoded = encodePlanName(evil);
      expect(encoded).not.toMatch(/[/\\\0]/);
      expect(encoded.startsWith('.')).toBe(false);
    }
    expect(planFiles('/data', '../../etc').log).toBe('/data/%2E.%2F..%2Fetc.log');
  });

  it('refuses an empty or too long name with a message saying what is valid', () => {
    for (const bad of ['', 'x'.repeat(201), '✓'.repeat(30)]) {
      let caught: unknown;
      try {
        openFilePersistence('/nonexistent')(bad, new Y.Doc());
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(CairnError);
      expect((caught as CairnError).code).toBe('invalid_argument');
      expect((caught as CairnError).message).toMatch(/non-empty|at most 200/);
    }
    expect(fs.existsSync('/nonexistent')).toBe(false);
  });
});

describe('fs: locks', () => {
  it('refuses a second open in this process, naming the pid and the lock file', async () => {
    const dir = await freshDir();
    const first = await openLoaded(dir, 'p');
    const second = openFilePersistence(dir)('p', new Y.Doc());
    const error = (await second.whenLoaded.catch((e: unknown) => e)) as CairnError;
    expect(error).toBeInstanceOf(CairnError);
    expect(error.code).toBe('locked');
    expect(error.message).toContain(`pid ${process.pid}`);
    expect(error.message).toContain(planFiles(dir, 'p').lock);
    expect(error.details).toMatchObject({ pid: process.pid, path: planFiles(dir, 'p').lock });
    await expect(second.flush()).rejects.toThrow(error);
    await second.close();
    await first.p.close();
    expect(fs.existsSync(planFiles(dir, 'p').lock)).toBe(false);
  });

  it('a plan opened for a first read that is locked rejects only where it is awaited (no unhandled rejection)', async () => {
    const dir = await freshDir();
    const first = await openLoaded(dir, 'p');
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const second = openFilePlan(dir, 'p');
      let caught: unknown = null;
      try {
        await second.whenHydrated; // what a user writes: firstRead is never awaited
      } catch (error) {
        caught = error;
      }
      expect((caught as CairnError).code).toBe('locked');
      // Unhandled rejections are reported after the microtask queue drains: give it two macrotasks.
      await new Promise((resolve) => setTimeout(resolve, 0));
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(unhandled).toEqual([]);
      await expect(second.firstRead).rejects.toMatchObject({ code: 'locked' });
      await second.close();
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await first.p.close();
    }
  });

  it('refuses while another process holds the plan, and takes over once it was killed', async () => {
    const dir = await freshDir();
    const child = spawnFixture(dir, 'p', { edits: 1, hold: true });
    const lines = createInterface({ input: child.stdout! });
    const ready = new Promise<string>((resolve) => lines.once('line', resolve));
    await ready;
    const refused = openFilePersistence(dir)('p', new Y.Doc());
    const error = (await refused.whenLoaded.catch((e: unknown) => e)) as CairnError;
    expect(error.code).toBe('locked');
    expect(error.message).toContain(`pid ${child.pid}`);
    expect(error.message).toContain('another process');
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    // The lock file is still there, with a dead pid: stale, so it is taken over.
    expect(fs.existsSync(planFiles(dir, 'p').lock)).toBe(true);
    const { doc, p } = await openLoaded(dir, 'p');
    expect(doc.getMap('m').get('e0')).toBe(0);
    await p.close();
  });

  it('takes over a lock left by an earlier process that had our pid (a restarted container)', async () => {
    const dir = await freshDir();
    const lock = planFiles(dir, 'p').lock;
    fs.writeFileSync(
      lock,
      JSON.stringify({ pid: process.pid, host: (await import('node:os')).hostname(), since: 'x' }),
    );
    const { p } = await openLoaded(dir, 'p');
    expect(JSON.parse(fs.readFileSync(lock, 'utf8')).since).not.toBe('x'); // ours now, written afresh
    await p.close();
    expect(fs.existsSync(lock)).toBe(false);
  });
});

describe('fs: damaged logs', () => {
  async function logWith(dir: string, count: number): Promise<Y.Doc> {
    const { doc, p } = await openLoaded(dir, 'p', { compaction: false });
    for (let i = 0; i < count; i++) edit(doc, `k${i}`, i);
    await p.close();
    return doc;
  }

  it('cuts a torn last record, keeps every valid one, and appends after it', async () => {
    const dir = await freshDir();
    const before = await logWith(dir, 10);
    const path = planFiles(dir, 'p').log;
    const intact = fs.statSync(path).size;
    fs.appendFileSync(path, Uint8Array.of(40, 0, 0, 0, 1, 2, 3, 4, 5, 6)); // claims 40 bytes, has 2
    const recoveries: LogRecovery[] = [];
    const { doc, p } = await openLoaded(dir, 'p', { onRecover: (r) => recoveries.push(r) });
    expect(recoveries).toEqual([
      expect.objectContaining({
        kind: 'torn',
        offset: intact,
        discardedBytes: 10,
        keptRecords: 10,
      }),
    ]);
    expect(p.recovery?.kind).toBe('torn');
    expect(json(doc)).toEqual(json(before));
    expect(fs.statSync(path).size).toBe(intact);
    edit(doc, 'after', true);
    await p.close();
    const again = await openLoaded(dir, 'p');
    expect(again.doc.getMap('m').get('after')).toBe(true);
    expect(again.p.recovery).toBeNull();
    await again.p.close();
  });

  it('treats a tail of zeros (a file extended by a crash but never filled) as torn', async () => {
    const dir = await freshDir();
    await logWith(dir, 3);
    fs.appendFileSync(planFiles(dir, 'p').log, new Uint8Array(64));
    const recoveries: LogRecovery[] = [];
    const { doc, p } = await openLoaded(dir, 'p', { onRecover: (r) => recoveries.push(r) });
    expect(recoveries[0]).toMatchObject({ kind: 'torn', discardedBytes: 64 });
    expect(doc.getMap('m').size).toBe(3);
    await p.close();
  });

  it('refuses a file that is not a log, and leaves it untouched', async () => {
    const dir = await freshDir();
    const path = planFiles(dir, 'p').log;
    fs.writeFileSync(path, 'SQLite format 3\0 and more');
    const p = openFilePersistence(dir)('p', new Y.Doc());
    const error = (await p.whenLoaded.catch((e: unknown) => e)) as CairnError;
    expect(error.code).toBe('storage');
    expect(error.message).toContain('not a Cairn update log');
    expect(fs.readFileSync(path, 'utf8')).toBe('SQLite format 3\0 and more');
    expect(fs.existsSync(planFiles(dir, 'p').lock)).toBe(false);
  });
});

describe('fs: compaction and durability', () => {
  it('keeps the log bounded through 10,000 updates and loads it identical', async () => {
    const dir = await freshDir();
    const { doc, p } = await openLoaded(dir, 'p');
    let maxBytes = 0;
    for (let i = 0; i < 10_000; i++) {
      edit(doc, `k${i % 100}`, i);
      if (i % 500 === 499) {
        await p.flush();
        maxBytes = Math.max(maxBytes, p.stats()!.bytes);
      }
    }
    const stats = p.stats()!;
    const fresh = Y.encodeStateAsUpdate(doc).byteLength;
    expect(stats.compactions).toBeGreaterThanOrEqual(5);
    // At most about twice the snapshot plus the 16 KiB floor, plus one batch of records.
    expect(maxBytes).toBeLessThan(2 * fresh + 16 * 1024 + 500 * 40);
    await p.close();
    const again = await openLoaded(dir, 'p');
    expect(json(again.doc)).toEqual(json(doc));
    expect(again.p.stats()!.records).toBeLessThanOrEqual(1000);
    await again.p.close();
  });

  it('compacts after a burst of writes that never lets the event loop turn, from the whole state', async () => {
    const dir = await freshDir();
    const { doc, p } = await openLoaded(dir, 'p');
    // An agent loop whose awaits never reach I/O: only microtasks run between the writes.
    for (let i = 0; i < 3_000; i++) {
      edit(doc, `k${i % 100}`, i);
      await Promise.resolve();
    }
    // The policy asked for a compaction after the first few hundred writes; it waits for the loop to turn.
    expect(p.stats()!.compactions).toBe(0);
    await p.flush();
    // Started inside the burst, it snapshotted those first writes and carried every later one into the new file
    // (held in memory twice meanwhile); started after it, the new file is the whole state and nothing more.
    expect(p.stats()).toMatchObject({ compactions: 1, tailRecords: 0 });
    await p.close();
    const again = await openLoaded(dir, 'p');
    expect(json(again.doc)).toEqual(json(doc));
    await again.p.close();
  });

  it('carries over the updates appended while a compaction runs', async () => {
    const dir = await freshDir();
    const path = join(dir, 'raw.log');
    const doc = new Y.Doc();
    const log = UpdateLog.open(path);
    const seen: Uint8Array[] = [];
    doc.on('update', (u: Uint8Array) => {
      seen.push(u);
      log.append(u);
    });
    for (let i = 0; i < 10; i++) edit(doc, `a${i}`, i);
    const compaction = log.compact(Y.encodeStateAsUpdate(doc));
    // The compaction is waiting for its fsync: these go to the old file and must reach the new one.
    await Promise.resolve();
    for (let i = 0; i < 10; i++) edit(doc, `b${i}`, i);
    await compaction;
    expect(log.stats()).toMatchObject({ compactions: 1, records: 11, tailRecords: 10 });
    for (let i = 0; i < 5; i++) edit(doc, `c${i}`, i);
    await log.close();
    const loaded = new Y.Doc();
    for (const u of UpdateLog.read(path)!) Y.applyUpdate(loaded, u);
    expect(json(loaded)).toEqual(json(doc));
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.compact'))).toEqual([]);
  });

  it('removes the temp file of a compaction interrupted by a crash', async () => {
    const dir = await freshDir();
    const { p } = await openLoaded(dir, 'p');
    await p.close();
    const leftover = `${planFiles(dir, 'p').log}.12345-abc.compact`;
    const someoneElse = `${planFiles(dir, 'p.log.x').log}.12345-abc.compact`;
    fs.writeFileSync(leftover, 'partial');
    fs.writeFileSync(someoneElse, 'partial');
    const again = await openLoaded(dir, 'p');
    expect(fs.existsSync(leftover)).toBe(false);
    expect(fs.existsSync(someoneElse)).toBe(true); // a plan whose name extends ours keeps its file
    await again.p.close();
  });

  it('fsyncs in the background within a few ms, without flush()', async () => {
    const dir = await freshDir();
    const { doc, p } = await openLoaded(dir, 'p', { fsyncDelayMs: 1 });
    const before = p.stats()!.fsyncs;
    for (let i = 0; i < 50; i++) edit(doc, `k${i}`, i);
    await expect.poll(() => p.stats()!.fsyncs, { interval: 2 }).toBeGreaterThan(before);
    expect(p.stats()!.fsyncs - before).toBeLessThan(50); // batched, not one per edit
    await p.close();
  });

  it('with fsync-every-write, fsyncs each update before the edit returns', async () => {
    const dir = await freshDir();
    const { doc, p } = await openLoaded(dir, 'p', { durability: 'fsync-every-write' });
    const before = p.stats()!.fsyncs;
    for (let i = 0; i < 20; i++) {
      edit(doc, `k${i}`, i);
      expect(p.stats()!.fsyncs).toBe(before + i + 1);
    }
    await p.close();
    const again = await openLoaded(dir, 'p');
    expect(again.doc.getMap('m').size).toBe(20);
    await again.p.close();
  });

  it('after a full disk, flush() reports it once, then rewrites everything once space is back', async () => {
    const dir = await freshDir();
    const disk = fullDiskFs();
    const { doc, p } = await openLoaded(dir, 'p', { fs: disk.fs });
    edit(doc, 'before', 1);
    await p.flush();
    const errors: CairnError[] = [];
    p.onError((error) => errors.push(error));
    disk.arm(true);
    for (let i = 0; i < 5; i++) edit(doc, `during${i}`, i);
    const error = (await p.flush().catch((e: unknown) => e)) as CairnError;
    expect(error.code).toBe('storage');
    expect(error.message).toContain('no space left on device');
    expect(errors[0]?.details).toMatchObject({ errno: 'ENOSPC' });
    disk.arm(false);
    edit(doc, 'after', 1);
    await p.flush(); // the rewrite now succeeds
    await p.close();
    const again = await openLoaded(dir, 'p');
    expect(json(again.doc)).toEqual(json(doc));
    await again.p.close();
  });
});

function spawnFixture(dir: string, name: string, options: { edits: number; hold?: boolean }) {
  const child = spawnEditor({ dir, name, prefix: '', edits: options.edits, hold: options.hold });
  children.push(child);
  return child;
}

describe('fs: first-read snapshot', () => {
  /** The plan's files as a crash would leave them: copied while the plan is still open (and locked) here. */
  function crashImage(dir: string, name: string): string {
    const image = fs.mkdtempSync(join(tmpdir(), 'cairn-fs-image-'));
    dirs.push(image);
    const from = planFiles(dir, name);
    const to = planFiles(image, name);
    fs.copyFileSync(from.log, to.log);
    if (fs.existsSync(from.snapshot)) fs.copyFileSync(from.snapshot, to.snapshot);
    return image;
  }

  it('is rewritten only when the log has moved (SnapshotWriter, shared with the server store)', async () => {
    const dir = await freshDir();
    let renames = 0;
    const counting = {
      ...fs,
      renameSync: (from: fs.PathLike, to: fs.PathLike) => {
        renames++;
        fs.renameSync(from, to);
      },
    } as typeof fs;
    const plan = createPlan({ actor: 'agent:test' });
    plan.add({ title: 'a' });
    const at = (bytes: number) => ({ bytes, first: null, last: null });
    const path = join(dir, 'p.snap');
    const writer = new SnapshotWriter(counting, path);
    writer.write(plan.doc, at(10));
    writer.write(plan.doc, at(10));
    expect(renames).toBe(1);
    writer.write(plan.doc, at(20));
    expect(renames).toBe(2);
    // One that knows the snapshot found on disk skips it too.
    const reopened = new SnapshotWriter(counting, path);
    reopened.found(at(20));
    reopened.write(plan.doc, at(20));
    expect(renames).toBe(2);
  });

  it('after a compaction the policy started, is written once writes pause, not on the write path', async () => {
    const dir = await freshDir();
    const open = (quietMs: number) =>
      openFilePersistence(dir, { compaction: { records: 50, minBytes: 0 }, snapshotQuietMs: quietMs });
    const doc = new Y.Doc();
    const stored = open(60_000)('p', doc);
    await stored.whenLoaded;
    const plan = createPlan({ doc, actor: 'agent:test' });
    const id = plan.add({ title: 'a' }).id;
    for (let i = 0; i < 60; i++) plan.update(id, { note: `edit ${i}` });
    await vi.waitFor(() => expect(stored.stats()?.compactions).toBe(1), { timeout: 10_000 });
    await stored.flush();
    // Compacted, but the plan has not been quiet for a minute: no snapshot yet, a crash now loads the log.
    expect(fs.existsSync(planFiles(dir, 'p').snapshot)).toBe(false);
    const early = openFilePlan(crashImage(dir, 'p'), 'p');
    expect((await early.firstRead).fromSnapshot).toBe(false);
    await early.close();
    await stored.close();
    plan.destroy();

    // Reopened with a short quiet time: after the next compaction and a pause, a crash image reads from it.
    const doc2 = new Y.Doc();
    const again = open(100)('p', doc2);
    await again.whenLoaded;
    const plan2 = createPlan({ doc: doc2, actor: 'agent:test' });
    fs.rmSync(planFiles(dir, 'p').snapshot); // the one close() wrote
    for (let i = 0; i < 60; i++) plan2.update(id, { note: `more ${i}` });
    await vi.waitFor(() => expect(fs.existsSync(planFiles(dir, 'p').snapshot)).toBe(true), {
      timeout: 10_000,
    });
    const late = openFilePlan(crashImage(dir, 'p'), 'p');
    const first = await late.firstRead;
    expect(first.fromSnapshot).toBe(true);
    expect(first.plan.toJSON()).toEqual(plan2.toJSON());
    await late.close();
    await again.close();
    plan2.destroy();
  });

  it('is written with each compaction, so a process killed after it leaves a valid one; the next append makes it stale', async () => {
    const dir = await freshDir();
    const doc = new Y.Doc();
    const stored = openFilePersistence(dir)('p', doc);
    await stored.whenLoaded;
    const plan = createPlan({ doc, actor: 'agent:test' });
    const ids = plan.addMany([{ title: 'a' }, { title: 'b' }, { title: 'c' }]).map((t) => t.id);
    for (let i = 0; i < 300; i++) plan.update(ids[i % 3]!, { status: i % 2 ? 'done' : 'pending' });
    await stored.compact();

    const image = crashImage(dir, 'p');
    const fromImage = openFilePlan(image, 'p');
    const first = await fromImage.firstRead;
    expect(first.fromSnapshot).toBe(true);
    expect(first.plan.toJSON()).toEqual(plan.toJSON());
    await fromImage.close();

    plan.update(ids[0]!, { title: 'after the snapshot' });
    const stale = openFilePlan(crashImage(dir, 'p'), 'p');
    const second = await stale.firstRead;
    expect(second.fromSnapshot).toBe(false);
    expect(second.plan.get(ids[0]!)?.title).toBe('after the snapshot');
    await stale.close();
    await stored.close();
    plan.destroy();
  });
});
