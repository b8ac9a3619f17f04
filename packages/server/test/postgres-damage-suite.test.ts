// The storage damage suite on PostgreSQL (a real postgres on a free port). It keeps no snapshot, so the only
// damage it can tell is a row missing among those that stay: the updates after it wait for it.
import { runStorageDamageTests } from '@cairn/core/testing';
import { afterAll, beforeAll } from 'vitest';
import * as Y from 'yjs';
import { PostgresStore } from '../src/cluster/index.js';
import { type Service, startPostgres } from './services.js';

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
  /** Loads the plan as the hub's store extension does: stored rows applied, then checked. */
  const load = async (planId: string): Promise<{ refused: unknown } | { doc: Y.Doc }> => {
    const doc = new Y.Doc();
    try {
      const rows = await store.load(planId, () => Y.encodeStateAsUpdate(doc));
      for (const row of rows) Y.applyUpdate(doc, row, 'store');
      store.verifyLoaded(planId, doc);
    } catch (refused) {
      return { refused };
    }
    doc.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin !== 'store') store.append(planId, update);
    });
    return { doc };
  };
  return {
    async store(planId, edits) {
      const s = await load(planId);
      if ('refused' in s) throw s.refused;
      for (const edit of edits) {
        edit(s.doc);
        await store.flush(planId);
      }
      await store.release(planId);
    },
    async damage(planId) {
      await store.pool.query(
        `DELETE FROM cairn_updates WHERE id = (
           SELECT id FROM cairn_updates WHERE plan_id = $1 ORDER BY id OFFSET
             (SELECT count(*) / 2 FROM cairn_updates WHERE plan_id = $1) LIMIT 1)`,
        [planId],
      );
    },
    async open(planId) {
      const s = await load(planId);
      if ('refused' in s) return s;
      await store.release(planId);
      return { served: s.doc };
    },
    async write(planId, edit) {
      const s = await load(planId);
      if ('refused' in s) return 'refused';
      edit(s.doc);
      await store.flush(planId);
      await store.release(planId);
      return 'written';
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
