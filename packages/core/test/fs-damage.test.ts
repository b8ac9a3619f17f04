// A damaged log on real files: the open refuses it untouched and says what is left, a torn tail is cut and said
// out loud, and inspectLog / repairLog get back every intact record (a client fills the gap the damage left).
import * as fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import {
  encodeRecord,
  type FilePersistenceOptions,
  inspectLog,
  openFilePersistence,
  planFiles,
  repairLog,
  scanLog,
  UpdateLog,
} from '../src/adapters/fs.js';
import { CairnError } from '../src/errors.js';
import { seeded } from '../src/testing/seeded.js';

const dirs: string[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function freshDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-damage-'));
  dirs.push(dir);
  return dir;
}

function edit(doc: Y.Doc, key: string, value: unknown): void {
  doc.transact(() => doc.getMap('m').set(key, value), 'agent:test');
}

async function openLoaded(dir: string, options: FilePersistenceOptions = {}) {
  const doc = new Y.Doc();
  const p = openFilePersistence(dir, options)('p', doc);
  await p.whenLoaded;
  return { doc, p };
}

/** A log of `count` one-key edits, one record each; returns the doc that wrote it and the record offsets. */
async function logOf(dir: string, count: number, compactFirst = 0) {
  const { doc, p } = await openLoaded(dir, { compaction: false });
  for (let i = 0; i < compactFirst; i++) edit(doc, `s${i}`, i);
  if (compactFirst > 0) await p.compact();
  for (let i = 0; i < count; i++) edit(doc, `k${i}`, i);
  await p.close();
  const path = planFiles(dir, 'p').log;
  const offsets: number[] = [];
  let offset = 8;
  for (const record of UpdateLog.read(path) ?? []) {
    offsets.push(offset);
    offset += 8 + record.byteLength;
  }
  return { doc, path, offsets };
}

function flip(path: string, at: number): Buffer {
  const bytes = fs.readFileSync(path);
  bytes[at]! ^= 0x5a;
  fs.writeFileSync(path, bytes);
  return bytes;
}

async function refusal(dir: string): Promise<CairnError> {
  const doc = new Y.Doc();
  const p = openFilePersistence(dir)('p', doc);
  const error = await p.whenLoaded.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CairnError);
  // Editing the doc afterwards writes nothing: the refused open left no listener behind.
  edit(doc, 'after-refusal', true);
  return error as CairnError;
}

describe('fs: a damaged log is refused, not emptied', () => {
  it('one flipped byte in the snapshot record: open fails, names the file and what is left, changes nothing', async () => {
    const dir = await freshDir();
    const { path, offsets } = await logOf(dir, 5, 20);
    expect(offsets).toHaveLength(6); // the snapshot, then five edits
    const damaged = flip(path, offsets[0]! + 8 + 3);
    const error = await refusal(dir);
    expect(error.code).toBe('storage');
    expect(error.details.damage).toEqual({
      path,
      offset: 8,
      keptRecords: 0,
      recordsAfter: 5,
      damagedBytes: offsets[1]! - offsets[0]!,
    });
    expect(error.message).toContain(path);
    expect(error.message).toContain('cairn log repair');
    expect(fs.readFileSync(path).equals(damaged)).toBe(true);
    // No side file, no lock left behind: the directory holds exactly the damaged log (and the first-read
    // snapshot its last close wrote, now stale: the log no longer matches it).
    expect(fs.readdirSync(dir).sort()).toEqual(['p.log', 'p.snap']);
    // Every later open refuses it the same way.
    expect((await refusal(dir)).details.damage).toEqual(error.details.damage);
  });

  it('a length field hit in the middle does not pass for a torn tail: the records after it count', async () => {
    const dir = await freshDir();
    const { path, offsets } = await logOf(dir, 10);
    const bytes = fs.readFileSync(path);
    bytes.writeUInt32LE(1_000_000, offsets[3]!); // the fourth record now "runs past the end"
    fs.writeFileSync(path, bytes);
    const error = await refusal(dir);
    expect(error.details.damage).toMatchObject({ offset: offsets[3], keptRecords: 3, recordsAfter: 6 });
    expect(fs.readFileSync(path).equals(bytes)).toBe(true);
  });

  it('a flipped header byte is damage too: refused, and repaired with every record behind it', async () => {
    const dir = await freshDir();
    const { doc: writer, path, offsets } = await logOf(dir, 6);
    const damaged = flip(path, 2);
    const error = await refusal(dir);
    expect(error.message).toMatch(/its header does not match/);
    expect(error.details.damage).toEqual({
      path,
      offset: 0,
      keptRecords: 0,
      recordsAfter: 6,
      damagedBytes: 8,
    });
    expect(fs.readFileSync(path).equals(damaged)).toBe(true);
    expect(inspectLog(path)).toMatchObject({ header: 'bad', records: 0, damage: { recordsAfter: 6 } });
    expect(repairLog(path)).toMatchObject({ repaired: true, keptRecords: 6 });
    expect(offsets).toHaveLength(6);
    const { doc, p } = await openLoaded(dir);
    expect(doc.getMap('m').toJSON()).toEqual(writer.getMap('m').toJSON());
    await p.close();
  });

  it('a torn tail is cut, and by default said on console.error with the file and what was cut', async () => {
    const dir = await freshDir();
    const { path } = await logOf(dir, 3);
    const intact = fs.statSync(path).size;
    fs.appendFileSync(path, Uint8Array.of(40, 0, 0, 0, 1, 2, 3, 4, 5, 6));
    const errors: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((line: string) => {
      errors.push(line);
    });
    const { doc, p } = await openLoaded(dir);
    expect(doc.getMap('m').size).toBe(3);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(path);
    expect(errors[0]).toMatch(new RegExp(`byte ${intact}.*cut 10 bytes.*kept 3 records`));
    await p.close();
  });
});

describe('fs: inspecting and repairing a damaged log', () => {
  it('inspectLog says what the log holds and changes nothing', async () => {
    const dir = await freshDir();
    const { path, offsets } = await logOf(dir, 10);
    expect(inspectLog(path)).toMatchObject({ header: 'ok', records: 10, damage: null, pending: false });
    const damaged = flip(path, offsets[4]! + 8 + 2);
    expect(inspectLog(path)).toEqual({
      path,
      bytes: damaged.byteLength,
      header: 'ok',
      records: 4,
      damage: {
        path,
        offset: offsets[4],
        keptRecords: 4,
        recordsAfter: 5,
        damagedBytes: offsets[5]! - offsets[4]!,
      },
      tornBytes: 0,
      // The five later edits come from the same client, after the lost one: they wait for it.
      pending: true,
    });
    expect(fs.readFileSync(path).equals(damaged)).toBe(true);
  });

  it('repairLog keeps every intact record and the original; a client that still has the lost edit fills the gap', async () => {
    const dir = await freshDir();
    const { doc: writer, path, offsets } = await logOf(dir, 10);
    const damaged = flip(path, offsets[4]! + 8 + 2);
    const repair = repairLog(path);
    expect(repair).toMatchObject({ repaired: true, keptRecords: 9, droppedRecords: 0 });
    expect(fs.readFileSync(repair.backup!).equals(damaged)).toBe(true);
    expect(inspectLog(path)).toMatchObject({ records: 9, damage: null, pending: true });

    const { doc, p } = await openLoaded(dir);
    expect(doc.getMap('m').toJSON()).toEqual({ k0: 0, k1: 1, k2: 2, k3: 3 });
    // A sync: the client sends what the plan's state vector lacks, the lost edit among it.
    Y.applyUpdate(doc, Y.encodeStateAsUpdate(writer, Y.encodeStateVector(doc)), 'client');
    expect(doc.getMap('m').toJSON()).toEqual(writer.getMap('m').toJSON());
    await p.close();
    const again = await openLoaded(dir);
    expect(again.doc.getMap('m').size).toBe(10);
    await again.p.close();
  });

  it('repairLog can keep only what comes before the damage', async () => {
    const dir = await freshDir();
    const { path, offsets } = await logOf(dir, 10);
    flip(path, offsets[6]! + 8 + 1);
    expect(repairLog(path, { dropAfterDamage: true })).toMatchObject({ keptRecords: 6, droppedRecords: 3 });
    expect(inspectLog(path)).toMatchObject({ records: 6, damage: null, pending: false });
  });

  it('repairLog leaves an intact log, a foreign file and a plan held open alone', async () => {
    const dir = await freshDir();
    const { path } = await logOf(dir, 3);
    const before = fs.readFileSync(path);
    expect(repairLog(path)).toMatchObject({ repaired: false, backup: null, keptRecords: 3 });
    expect(fs.readFileSync(path).equals(before)).toBe(true);

    const { p } = await openLoaded(dir);
    expect(() => repairLog(path)).toThrow(expect.objectContaining({ code: 'locked' }));
    await p.close();

    const foreign = join(dir, 'other.log');
    fs.writeFileSync(foreign, 'SQLite format 3\0');
    expect(() => repairLog(foreign)).toThrow(/not a Cairn update log/);
    expect(fs.readFileSync(foreign, 'utf8')).toBe('SQLite format 3\0');
    expect(() => inspectLog(join(dir, 'missing.log'))).toThrow(
      expect.objectContaining({ code: 'not_found' }),
    );
  });
});

describe('fs: scanLog', () => {
  const header = Uint8Array.of(0x43, 0x59, 0x4c, 0x31, 1, 0, 0, 0);

  function logBytes(payloads: Uint8Array[]): { bytes: Buffer; offsets: number[] } {
    const offsets: number[] = [];
    let offset = header.byteLength;
    const parts = payloads.map((payload) => {
      offsets.push(offset);
      const record = encodeRecord(payload);
      offset += record.byteLength;
      return record;
    });
    return { bytes: Buffer.concat([header, ...parts]), offsets };
  }

  it('finds the intact records on both sides of two damaged ones', () => {
    const payloads = [1, 2, 3, 4, 5].map((n) => new Uint8Array(20 + n).fill(n));
    const { bytes, offsets } = logBytes(payloads);
    bytes[offsets[1]! + 10]! ^= 1;
    bytes[offsets[3]! + 10]! ^= 1;
    const scan = scanLog(bytes);
    expect(scan.before.map((r) => r.payload[0])).toEqual([1]);
    expect(scan.after.map((r) => r.payload[0])).toEqual([3, 5]);
    expect(scan.bad).toEqual({ offset: offsets[1], kind: 'corrupt' });
    expect(scan.damaged).toEqual([
      [offsets[1], offsets[2]],
      [offsets[3], offsets[4]],
    ]);
  });

  it('after one flipped byte anywhere, every other record is found (200 seeded logs)', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const next = seeded(seed);
      const payloads = Array.from({ length: 2 + Math.floor(next() * 30) }, () =>
        Uint8Array.from({ length: 1 + Math.floor(next() * 300) }, () => Math.floor(next() * 256)),
      );
      const { bytes, offsets } = logBytes(payloads);
      const at = header.byteLength + Math.floor(next() * (bytes.byteLength - header.byteLength));
      bytes[at]! ^= 1 + Math.floor(next() * 255);
      const hit = offsets.filter((o) => o <= at).length - 1;
      const scan = scanLog(bytes);
      const found = [...scan.before, ...scan.after].map((r) => r.offset);
      const expected = offsets.filter((_, i) => i !== hit);
      expect({ seed, found }).toEqual({ seed, found: expected });
      // Only the last record may pass for a torn write; anywhere else it is damage the open refuses.
      if (hit < payloads.length - 1)
        expect({ seed, kind: scan.bad?.kind }).toEqual({ seed, kind: 'corrupt' });
    }
  });
});
