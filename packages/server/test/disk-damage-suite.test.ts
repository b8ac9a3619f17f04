// The storage damage suite on the server's disk store, wrapped as `cairn serve` wraps it (a plan is created by its
// first write, so a lost log must not pass for a plan that never existed).
import { rm } from 'node:fs/promises';
import { runStorageDamageTests } from '@cairn/core/testing';
import { FILE_DAMAGE, planFileDamage } from '@cairn/core/testing/node';
import { expect } from 'vitest';
import * as Y from 'yjs';
import { createOnFirstWrite } from '../src/create-on-write.js';
import { DiskStore } from '../src/store/disk.js';
import { diskPlanExists } from '../src/store/disk-plans.js';
import type { PlanStore } from '../src/store/store.js';
import { tempDir } from './helpers.js';

runStorageDamageTests('server disk store', FILE_DAMAGE, async () => {
  const dir = await tempDir();
  const disk = DiskStore.open(dir, { compaction: false });
  const store: PlanStore = createOnFirstWrite(disk, (id) => diskPlanExists(disk.dir, id));
  const files = planFileDamage(dir);
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
    ...files,
    async store(name, edits) {
      const s = await load(name);
      if ('refused' in s) throw s.refused;
      for (const [i, edit] of edits.entries()) {
        edit(s.doc);
        await store.flush(name);
        if (i === edits.length >> 1) files.remember(name);
      }
      await store.release(name);
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
    async teardown() {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});
