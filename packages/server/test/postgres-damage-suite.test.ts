// The storage damage suite on PostgreSQL (a real postgres on a free port). It keeps no snapshot, so the only
// damage it can tell is a row missing among those that stay: the updates after it wait for it.
import { runStorageDamageTests } from '@cairn/core/testing';
import { afterAll, beforeAll } from 'vitest';
import { PostgresStore } from '../src/cluster/index.js';
import { type Service, startPostgres } from './services.js';
import { planStoreDamage } from './store-damage.js';

let postgres: Service;
let database = 0;
beforeAll(async () => {
  postgres = await startPostgres();
});
afterAll(() => postgres?.destroy());

runStorageDamageTests('postgres', ['row-missing'], async () => {
  const name = `damage${++database}`;
  const admin = await PostgresStore.connect(postgres.url);
  await admin.pool.query(`CREATE DATABASE ${name}`);
  await admin.close();
  const store = await PostgresStore.connect(postgres.url.replace(/\/cairn$/, `/${name}`), {
    compactAfter: 100_000,
  });
  return {
    ...planStoreDamage(store),
    async damage(planId) {
      await store.pool.query(
        `DELETE FROM cairn_updates WHERE id = (
           SELECT id FROM cairn_updates WHERE plan_id = $1 ORDER BY id OFFSET
             (SELECT count(*) / 2 FROM cairn_updates WHERE plan_id = $1) LIMIT 1)`,
        [planId],
      );
    },
    async reported(planId) {
      const entry = store.damagedLogs().find((d) => d.planId === planId) ?? null;
      if (entry && store.metrics().damagedLogs < 1) throw new Error('the gauge does not count it');
      return entry;
    },
    async fingerprint(planId) {
      const rows = await store.readStored(planId);
      return rows.map((row) => row.join(',')).join(';');
    },
    teardown: () => store.close(),
  };
});
