// Every server PlanStore through the one acceptance suite: the disk store, the memory store and PostgreSQL (a real
// postgres started on a free port for this file).
import { planFiles, UpdateLog } from '@cairn/core/fs';
import { afterAll, beforeAll } from 'vitest';
import { PostgresStore } from '../src/cluster/index.js';
import { DiskStore, MemoryStore } from '../src/index.js';
import { onCleanup, tempDir } from './helpers.js';
import { runPlanStoreTests } from './plan-store-suite.js';
import { type Service, startPostgres } from './services.js';

runPlanStoreTests('disk', async () => {
  const dir = await tempDir();
  return {
    open: () => DiskStore.open(dir),
    readStored: async (planId) => UpdateLog.read(planFiles(dir, planId).log) ?? [],
    secondInstance: 'locked',
  };
});

runPlanStoreTests('memory', async () => {
  // One memory store is its own data: it outlives close, and a "second store" is the same object.
  const store = new MemoryStore();
  return {
    open: () => store,
    readStored: async (planId) => {
      const merged = store.stored(planId);
      return merged ? [merged] : [];
    },
    secondInstance: 'locked',
  };
});

let postgres: Service;
let database = 0;
beforeAll(async () => {
  postgres = await startPostgres();
});
afterAll(() => postgres?.destroy());

runPlanStoreTests('postgres', async () => {
  // A fresh database per test, as the disk store gets a fresh directory.
  const name = `t${++database}`;
  const admin = await PostgresStore.connect(postgres.url);
  await admin.pool.query(`CREATE DATABASE ${name}`);
  await admin.close();
  const url = postgres.url.replace(/\/cairn$/, `/${name}`);
  const reader = await PostgresStore.connect(url);
  onCleanup(() => reader.close());
  return {
    open: () => PostgresStore.connect(url, { compactAfter: 100_000 }),
    readStored: (planId) => reader.readStored(planId),
    secondInstance: 'shared',
  };
});
