// The storage damage suite on the server's disk store, wrapped as `cairn serve` wraps it (a plan is created by its
// first write, so a lost log must not pass for a plan that never existed).
import { rm } from 'node:fs/promises';
import { runStorageDamageTests } from '@cairn/core/testing';
import { FILE_DAMAGE, planFileDamage } from '@cairn/core/testing/node';
import { expect } from 'vitest';
import { createOnFirstWrite } from '../src/create-on-write.js';
import { DiskStore } from '../src/store/disk.js';
import { diskPlanExists } from '../src/store/disk-plans.js';
import type { PlanStore } from '../src/store/store.js';
import { tempDir } from './helpers.js';
import { planStoreDamage } from './store-damage.js';

runStorageDamageTests('server disk store', FILE_DAMAGE, async () => {
  const dir = await tempDir();
  const disk = DiskStore.open(dir, { compaction: false });
  const store: PlanStore = createOnFirstWrite(disk, (id) => diskPlanExists(disk.dir, id));
  const files = planFileDamage(dir);
  return {
    ...files,
    ...planStoreDamage(store, (name) => files.remember(name)),
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
