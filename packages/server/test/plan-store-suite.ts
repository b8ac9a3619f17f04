// The acceptance tests every server PlanStore passes (disk, memory, PostgreSQL): what it stores comes back, flush
// means stored, compaction keeps the content, and a second store on the same data is refused or shares it.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import type { PlanStore } from '../src/index.js';
import { onCleanup } from './helpers.js';

export interface PlanStoreHarness {
  /** A store over the harness's data (a directory, a database); may throw `locked` for a second one. */
  open(): PlanStore | Promise<PlanStore>;
  /** Everything stored for a plan now, read around any open store. */
  readStored(planId: string): Promise<Uint8Array[]>;
  /** A second store on the same data: `locked` (refused) or `shared` (both keep each other's writes). */
  secondInstance: 'locked' | 'shared';
}

function loadInto(store: PlanStore, planId: string, doc: Y.Doc): Promise<void> {
  return store
    .load(planId, () => Y.encodeStateAsUpdate(doc))
    .then((updates) => {
      for (const u of updates) Y.applyUpdate(doc, u, 'store');
      doc.on('update', (u: Uint8Array, origin: unknown) => {
        if (origin !== 'store') store.append(planId, u);
      });
    });
}

/** The content the tests write (a Y.Doc's own toJSON leaves out types this doc never asked for). */
function json(doc: Y.Doc): unknown {
  return { tasks: doc.getMap('tasks').toJSON(), meta: doc.getMap('meta').toJSON() };
}

async function storedDoc(h: PlanStoreHarness, planId: string): Promise<Y.Doc> {
  const doc = new Y.Doc();
  for (const u of await h.readStored(planId)) Y.applyUpdate(doc, u);
  return doc;
}

export function runPlanStoreTests(name: string, setup: () => Promise<PlanStoreHarness>): void {
  describe(`PlanStore: ${name}`, () => {
    const open = async (h: PlanStoreHarness) => {
      const store = await h.open();
      onCleanup(() => store.close().catch(() => undefined));
      return store;
    };

    it('flush means stored, and a new store loads it all back (maps, nested maps, text)', async () => {
      const h = await setup();
      const store = await open(h);
      const doc = new Y.Doc();
      await loadInto(store, 'p', doc);
      for (let i = 0; i < 100; i++) doc.getMap('tasks').set(`t${i}`, new Y.Map([['n', i]]));
      const title = new Y.Text();
      doc.getMap('meta').set('title', title);
      title.insert(0, 'a plan');
      await store.flush('p');
      expect((await storedDoc(h, 'p')).getMap('tasks').size).toBe(100);
      await store.close();
      const again = await open(h);
      const copy = new Y.Doc();
      await loadInto(again, 'p', copy);
      expect(json(copy)).toEqual(json(doc));
      expect(again.metrics().plans).toBe(1);
    });

    it('compacts a long history to fewer records with the same content', async () => {
      const h = await setup();
      const store = await open(h);
      const doc = new Y.Doc();
      await loadInto(store, 'long', doc);
      for (let i = 0; i < 300; i++) doc.getMap('tasks').set(`t${i % 20}`, i);
      await store.flush('long');
      await store.compact('long');
      const stored = await h.readStored('long');
      expect(stored.length).toBeLessThan(10);
      expect(json(await storedDoc(h, 'long'))).toEqual(json(doc));
      expect(store.metrics()).toMatchObject({ appends: 300 });
      expect(store.metrics().compactions).toBeGreaterThan(0);
    });

    it('refuses a second load of a plan it holds, as locked', async () => {
      const h = await setup();
      const store = await open(h);
      await loadInto(store, 'twice', new Y.Doc());
      await expect(store.load('twice', () => new Uint8Array())).rejects.toMatchObject({ code: 'locked' });
    });

    it('a second store on the same data is refused, or both keep each other’s writes through a compaction', async () => {
      const h = await setup();
      const a = await open(h);
      const docA = new Y.Doc();
      await loadInto(a, 'two', docA);
      docA.getMap('tasks').set('a0', 1);
      await a.flush('two');
      const docB = new Y.Doc();
      let b: PlanStore | null = null;
      const outcome = await (async () => {
        b = await h.open();
        await loadInto(b, 'two', docB);
      })().then(
        () => 'opened',
        (error: unknown) => error,
      );
      if (h.secondInstance === 'locked') {
        expect(outcome).toMatchObject({ code: 'locked' });
        return;
      }
      expect(outcome).toBe('opened');
      onCleanup(() => b?.close().catch(() => undefined));
      expect(docB.getMap('tasks').get('a0')).toBe(1);
      docB.getMap('tasks').set('b0', 2); // not in docA: a's compaction must keep it
      await b!.flush('two');
      for (let i = 0; i < 50; i++) docA.getMap('tasks').set('a0', i);
      await a.flush('two');
      await a.compact('two');
      const stored = (await storedDoc(h, 'two')).getMap('tasks');
      expect(stored.get('b0')).toBe(2);
      expect(stored.get('a0')).toBe(49);
    });
  });
}
