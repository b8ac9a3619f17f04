// The storage damage suite on the server's disk store, wrapped as `cairn serve` wraps it (a plan is created by its
// first write, so a lost log must not pass for a plan that never existed).
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { rm } from 'node:fs/promises';
import { planFiles, repairLog } from '@cairn/core/fs';
import { damageFiles, runStorageDamageTests, type StorageDamage } from '@cairn/core/testing';
import { expect } from 'vitest';
import * as Y from 'yjs';
import { createOnFirstWrite } from '../src/create-on-write.js';
import { DiskStore } from '../src/store/disk.js';
import { diskPlanExists } from '../src/store/disk-plans.js';
import type { PlanStore } from '../src/store/store.js';
import { tempDir } from './helpers.js';

const FILE_DAMAGE: readonly StorageDamage[] = [
  'log-missing',
  'log-empty',
  'header-only',
  'cut-at-boundary',
  'cut-mid-record',
  'flipped-byte',
  'row-missing',
  'snapshot-newer',
  'snapshot-missing',
];

function readOrNull(path: string): Uint8Array | null {
  try {
    return fs.readFileSync(path);
  } catch {
    return null;
  }
}

function writeOrRemove(path: string, bytes: Uint8Array | null): void {
  if (bytes) fs.writeFileSync(path, bytes);
  else fs.rmSync(path, { force: true });
}

runStorageDamageTests('server disk store', FILE_DAMAGE, async () => {
  const dir = await tempDir();
  const disk = DiskStore.open(dir, { compaction: false });
  const store: PlanStore = createOnFirstWrite(disk, (id) => diskPlanExists(disk.dir, id));
  const earlier = new Map<string, Uint8Array>();
  /** Loads the plan as the hub does: its doc, stored updates applied, every later update appended. */
  const load = async (name: string): Promise<{ refused: unknown } | { doc: Y.Doc }> => {
    const doc = new Y.Doc();
    try {
      const records = await store.load(name, () => Y.encodeStateAsUpdate(doc), doc);
      for (const record of records) Y.applyUpdate(doc, record, 'store');
    } catch (refused) {
      return { refused };
    }
    doc.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin !== 'store') store.append(name, update);
    });
    return { doc };
  };
  return {
    async store(name, edits) {
      const s = await load(name);
      if ('refused' in s) throw s.refused;
      for (const [i, edit] of edits.entries()) {
        edit(s.doc);
        await store.flush(name);
        if (i === edits.length >> 1) earlier.set(name, fs.readFileSync(planFiles(dir, name).log));
      }
      await store.release(name);
    },
    async damage(name, kind) {
      const files = planFiles(dir, name);
      const damaged = damageFiles(kind, {
        log: readOrNull(files.log),
        snapshot: readOrNull(files.snapshot),
        earlier: earlier.get(name) ?? new Uint8Array(0),
      });
      writeOrRemove(files.log, damaged.log);
      writeOrRemove(files.snapshot, damaged.snapshot);
    },
    async open(name) {
      const s = await load(name);
      if ('refused' in s) return s;
      await store.release(name);
      return { served: s.doc };
    },
    async write(name, edit) {
      const s = await load(name);
      if ('refused' in s) return 'refused';
      edit(s.doc);
      await store.flush(name);
      await store.release(name);
      return 'written';
    },
    async reported(name) {
      const entry = disk.damagedLogs().find((d) => d.planId === name) ?? null;
      // The same count reaches /healthz and the gauge cairn_store_damaged_logs.
      if (entry) expect(disk.metrics().damagedLogs).toBeGreaterThan(0);
      return entry;
    },
    async fingerprint(name) {
      const files = planFiles(dir, name);
      const hash = createHash('sha256');
      for (const path of [files.log, files.snapshot])
        hash.update(`${path}:${readOrNull(path)?.join(',') ?? 'none'};`);
      hash.update(fs.readdirSync(dir).sort().join(','));
      return hash.digest('hex');
    },
    async repair(name) {
      repairLog(planFiles(dir, name).log);
    },
    async teardown() {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});
