// The acceptance suite every storage adapter runs (fs in a temp dir, IndexedDB under fake-indexeddb and in real
// Chromium). Raw Y.Doc edits only, and no Node imports, so it runs in a browser too.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import { CairnError } from '../errors.js';
import type { DocPersistence, OpenPersistence } from '../storage.js';
import { type FirstReadHarness, firstReadTests } from './first-read-suite.js';

/**
 * One isolated store (a fresh temp dir, a fresh database prefix), made for each test. The first-read members
 * (`openPlan`, `appendRaw`, `damageSnapshot`) are needed only by an adapter that offers a fast first read; one
 * without it runs the suite with `{ firstRead: false }`.
 */
export interface StorageHarness extends Partial<FirstReadHarness> {
  open: OpenPersistence;
  /**
   * Everything stored under `name` right now, read around any open instance (the files or databases directly),
   * as Yjs updates; [] when nothing is stored. This is how the suite checks that flush() means stored.
   */
  readStored(name: string): Promise<Uint8Array[]>;
  /** Bytes stored for `name` (file size, sum of record sizes). */
  storedBytes(name: string): Promise<number>;
  /**
   * Opens `name` so that its writes fail (a full disk, a database deleted under it); the returned whenLoaded
   * resolves once the failure is armed.
   */
  openFailing(name: string, doc: Y.Doc): DocPersistence;
  /**
   * What a second open of a plan that is already open does in this adapter: `locked` (refused with
   * CairnError('locked'), as a file lock does) or `shared` (both instances work and keep each other's writes, as
   * two browser tabs do). Fixed per adapter, so a change of behaviour fails the suite instead of switching branch.
   */
  secondInstance: 'locked' | 'shared';
  teardown?(): Promise<void> | void;
}

export type StorageSetup = () => Promise<StorageHarness> | StorageHarness;

const ORIGIN = 'agent:suite';

export interface StorageSuiteOptions {
  /** Run the first-read tests (the adapter stores a snapshot beside its updates). Default true. */
  firstRead?: boolean;
}

/** Registers the storage acceptance tests for one adapter. */
export function runStorageAdapterTests(
  adapterName: string,
  setup: StorageSetup,
  options: StorageSuiteOptions = {},
): void {
  describe(`storage adapter: ${adapterName}`, () => {
    let h: StorageHarness;
    const opened: DocPersistence[] = [];

    const open = (name: string, doc = new Y.Doc()): { doc: Y.Doc; p: DocPersistence } => {
      const p = h.open(name, doc);
      opened.push(p);
      return { doc, p };
    };
    const track = <T extends { persistence: DocPersistence }>(stored: T): T => {
      opened.push(stored.persistence);
      return stored;
    };
    const load = async (name: string): Promise<Y.Doc> => {
      const { doc, p } = open(name);
      await p.whenLoaded;
      await p.close();
      return doc;
    };
    const storedDoc = async (name: string): Promise<Y.Doc> => {
      const doc = new Y.Doc();
      for (const update of await h.readStored(name)) Y.applyUpdate(doc, update);
      return doc;
    };

    beforeEach(async () => {
      h = await setup();
    });
    afterEach(async () => {
      await Promise.allSettled(opened.splice(0).map((p) => p.close()));
      await h.teardown?.();
    });

    if (options.firstRead !== false) {
      firstReadTests(() => {
        const { openPlan, appendRaw, damageSnapshot } = h;
        if (!openPlan || !appendRaw || !damageSnapshot) {
          throw new Error(
            `The first-read tests need openPlan, appendRaw and damageSnapshot in the ${adapterName} harness; ` +
              'an adapter without a fast first read passes { firstRead: false } to runStorageAdapterTests.',
          );
        }
        return {
          openPlan: (name, plan) => track(openPlan(name, plan)),
          appendRaw,
          damageSnapshot,
          open: (name, doc) => open(name, doc).p,
        };
      });
    }

    it('loads what was saved (maps, nested maps, text, arrays)', async () => {
      const { doc, p } = open('plan-1');
      await p.whenLoaded;
      writeTasks(doc, 0, 20);
      doc.transact(() => doc.getArray<string>('log').push(['a', 'b']), ORIGIN);
      await p.flush();
      await p.close();

      const again = await load('plan-1');
      expect(json(again)).toEqual(json(doc));
      expect(tasks(again).size).toBe(20);
    });

    it('stores what an observer writes in reaction to the load itself', async () => {
      const first = open('plan-react');
      await first.p.whenLoaded;
      writeTasks(first.doc, 0, 3);
      await first.p.flush();
      await first.p.close();

      // A doc whose observer answers remote changes (as a Plan repairs aliases after a merge) is opened on it.
      const doc = new Y.Doc();
      tasks(doc).observe((event) => {
        if (!event.transaction.local)
          doc.transact(() => doc.getMap('meta').set('seen', tasks(doc).size), ORIGIN);
      });
      const second = open('plan-react', doc);
      await second.p.whenLoaded;
      expect(doc.getMap('meta').get('seen')).toBe(3);
      await second.p.flush();
      await second.p.close();

      const again = await load('plan-react');
      expect(again.getMap('meta').get('seen')).toBe(3);
    });

    it('starts empty for an unknown plan and keeps plans apart (no prefix or case mix-ups)', async () => {
      const names = ['p', 'p2', 'p:2', 'P', 'p/../p', '../p', 'p.log', 'ünïcode ✓'];
      for (const name of names) {
        const { doc, p } = open(name);
        await p.whenLoaded;
        expect(tasks(doc).size).toBe(0);
        doc.transact(() => doc.getMap('meta').set('name', name), ORIGIN);
        await p.close();
      }
      for (const name of names) expect((await load(name)).getMap('meta').get('name')).toBe(name);
    });

    it('refuses an empty plan name with invalid_argument', () => {
      const error = catchSync(() => h.open('', new Y.Doc()));
      expect(error).toBeInstanceOf(CairnError);
      expect((error as CairnError).code).toBe('invalid_argument');
    });

    it('reopens after close, again and again, keeping every session', async () => {
      for (let session = 0; session < 3; session++) {
        const { doc, p } = open('plan-r');
        await p.whenLoaded;
        expect(tasks(doc).size).toBe(session * 5);
        writeTasks(doc, session * 5, 5);
        await p.close();
        // After close the doc stays usable but is no longer stored.
        doc.transact(() => doc.getMap('meta').set('afterClose', session), ORIGIN);
      }
      const doc = await load('plan-r');
      expect(tasks(doc).size).toBe(15);
      expect(doc.getMap('meta').has('afterClose')).toBe(false);
    });

    it('stores edits made before whenLoaded resolves, and content the doc had before open', async () => {
      {
        const { doc, p } = open('plan-early');
        await p.whenLoaded;
        writeTasks(doc, 0, 3);
        await p.close();
      }
      const doc = new Y.Doc();
      writeTasks(doc, 100, 2); // content before open
      const { p } = open('plan-early', doc);
      writeTasks(doc, 200, 2); // an edit before the load finished
      await p.whenLoaded;
      expect(tasks(doc).size).toBe(7);
      await p.close();
      const again = await load('plan-early');
      expect(json(again)).toEqual(json(doc));
    });

    it('loads a large plan (2,000 tasks with several fields) identical', async () => {
      const { doc, p } = open('plan-large');
      await p.whenLoaded;
      writeTasks(doc, 0, 2_000);
      await p.close();
      const again = await load('plan-large');
      expect(tasks(again).size).toBe(2_000);
      expect(json(again)).toEqual(json(doc));
      expect(Y.encodeStateVector(again)).toEqual(Y.encodeStateVector(doc));
    });

    it('loads 5,000 small updates identical, with storage bounded (compacted)', async () => {
      const { doc, p } = open('plan-many');
      await p.whenLoaded;
      writeTasks(doc, 0, 50);
      let written = 0;
      doc.on('update', (update: Uint8Array) => {
        written += update.byteLength;
      });
      for (let round = 0; round < 50; round++) {
        for (let i = 0; i < 100; i++) {
          const n = round * 100 + i;
          const task = tasks(doc).get(`t${n % 50}`)!;
          doc.transact(() => {
            task.set('updatedAt', n);
            task.set('status', n % 3 === 0 ? 'in_progress' : 'pending');
          }, ORIGIN);
        }
        await p.flush(); // separate batches, as edits over time would be
      }
      const fresh = Y.encodeStateAsUpdate(doc).byteLength;
      const stored = await h.storedBytes('plan-many');
      // An uncompacted store holds at least every update written; a compacted one a fraction of it.
      expect(stored).toBeLessThan(written / 2);
      expect(stored).toBeLessThan(fresh * 2 + 64 * 1024);
      await p.close();
      const again = await load('plan-many');
      expect(json(again)).toEqual(json(doc));
    });

    it('two instances of one plan: the second is refused as locked, or both keep their writes, as the adapter says', async () => {
      const a = open('plan-two');
      await a.p.whenLoaded;
      writeTasks(a.doc, 0, 2);
      await a.p.flush();
      const b = open('plan-two');
      const outcome = await b.p.whenLoaded.then(
        () => 'opened' as const,
        (error: unknown) => error,
      );
      expect(outcome === 'opened' ? 'shared' : 'locked').toBe(h.secondInstance);
      if (outcome !== 'opened') {
        expect(outcome).toBeInstanceOf(CairnError);
        expect((outcome as CairnError).code).toBe('locked');
        // The refused instance stores nothing and the first one carries on.
        writeTasks(b.doc, 50, 1);
        await b.p.close();
        writeTasks(a.doc, 2, 1);
        await a.p.close();
        const doc = await load('plan-two');
        expect([...tasks(doc).keys()].sort()).toEqual(['t0', 't1', 't2']);
        return;
      }
      // Both open: each writes, and a compaction in one (many updates) must keep the other's records.
      expect(tasks(b.doc).size).toBe(2);
      writeTasks(b.doc, 10, 2);
      await b.p.flush();
      for (let round = 0; round < 10; round++) {
        for (let i = 0; i < 100; i++)
          a.doc.transact(
            () =>
              tasks(a.doc)
                .get('t0')!
                .set('n', round * 100 + i),
            ORIGIN,
          );
        await a.p.flush();
      }
      writeTasks(b.doc, 20, 1);
      await Promise.all([a.p.close(), b.p.close()]);
      const doc = await load('plan-two');
      expect([...tasks(doc).keys()].sort()).toEqual(['t0', 't1', 't10', 't11', 't20']);
      expect(tasks(doc).get('t0')!.get('n')).toBe(999);
    });

    it('flush() resolves only once the edits are stored (read around the open instance)', async () => {
      const { doc, p } = open('plan-flush');
      await p.whenLoaded;
      for (let i = 0; i < 5; i++) {
        writeTasks(doc, i, 1);
        await p.flush();
        const stored = await storedDoc('plan-flush');
        expect(tasks(stored).size).toBe(i + 1);
        expect(json(stored)).toEqual(json(doc));
      }
    });

    it('reports a failed write through onError and rejects the next flush()', async () => {
      const doc = new Y.Doc();
      const p = h.openFailing('plan-fail', doc);
      opened.push(p);
      const errors: CairnError[] = [];
      const off = p.onError((error) => errors.push(error));
      await p.whenLoaded;
      writeTasks(doc, 0, 3);
      const flushed = await p.flush().then(
        () => null,
        (error: unknown) => error,
      );
      expect(flushed).toBeInstanceOf(CairnError);
      expect((flushed as CairnError).code).toBe('storage');
      await vi.waitFor(() => expect(errors.length).toBeGreaterThan(0));
      expect(errors.every((error) => error instanceof CairnError && error.code === 'storage')).toBe(true);
      await p.close().catch(() => undefined); // may fail again: the storage is still broken
      off();
    });
  });
}

/** The doc's content as plain data (a loaded doc's toJSON() omits top-level types it has not asked for yet). */
function json(doc: Y.Doc): unknown {
  return { tasks: tasks(doc).toJSON(), meta: doc.getMap('meta').toJSON(), log: doc.getArray('log').toJSON() };
}

function tasks(doc: Y.Doc): Y.Map<Y.Map<unknown>> {
  return doc.getMap<Y.Map<unknown>>('tasks');
}

/** Tasks t{from}..t{from+count-1} with plan-like fields, written field by field in one transaction. */
function writeTasks(doc: Y.Doc, from: number, count: number): void {
  doc.transact(() => {
    for (let n = from; n < from + count; n++) {
      const task = new Y.Map<unknown>();
      tasks(doc).set(`t${n}`, task);
      const title = new Y.Text();
      task.set('title', title);
      title.insert(0, `Task number ${n}: do the thing`);
      task.set('status', 'pending');
      task.set('rank', `a${n.toString(36)}`);
      task.set('createdBy', ORIGIN);
      task.set('createdAt', 1_700_000_000_000 + n);
      const blockedBy = new Y.Map<boolean>();
      task.set('blockedBy', blockedBy);
      if (n > from) blockedBy.set(`t${n - 1}`, true);
      const context = new Y.Map<unknown>();
      task.set('context', context);
      context.set('ticket', n);
    }
  }, ORIGIN);
}

function catchSync(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return null;
}
