// The storage damage suite's store, open and write over a server PlanStore, each loading the plan as the hub's
// store extension does: stored updates applied, checked by the store, every later update appended.
import type { DamageHarness } from '@cairn/core/testing';
import * as Y from 'yjs';
import type { PlanStore } from '../src/store/store.js';

async function loadAsTheHub(
  store: PlanStore,
  planId: string,
): Promise<{ refused: unknown } | { doc: Y.Doc }> {
  const doc = new Y.Doc();
  try {
    const records = await store.load(planId, () => Y.encodeStateAsUpdate(doc), doc);
    for (const record of records) Y.applyUpdate(doc, record, 'store');
    store.verifyLoaded?.(planId, doc);
  } catch (refused) {
    return { refused };
  }
  doc.on('update', (update: Uint8Array, origin: unknown) => {
    if (origin !== 'store') store.append(planId, update);
  });
  return { doc };
}

/** `midway` runs once half the edits of `store(planId, edits)` are stored (a file store keeps a copy then). */
export function planStoreDamage(
  store: PlanStore,
  midway: (planId: string) => void = () => undefined,
): Pick<DamageHarness, 'store' | 'open' | 'write'> {
  return {
    async store(planId, edits) {
      const s = await loadAsTheHub(store, planId);
      if ('refused' in s) throw s.refused;
      for (const [i, edit] of edits.entries()) {
        edit(s.doc);
        await store.flush(planId);
        if (i === edits.length >> 1) midway(planId);
      }
      await store.release(planId);
    },
    async open(planId) {
      const s = await loadAsTheHub(store, planId);
      if ('refused' in s) return s;
      await store.release(planId);
      return { served: s.doc };
    },
    async write(planId, edit) {
      const s = await loadAsTheHub(store, planId);
      if ('refused' in s) return 'refused';
      edit(s.doc);
      await store.flush(planId);
      await store.release(planId);
      return 'written';
    },
  };
}
