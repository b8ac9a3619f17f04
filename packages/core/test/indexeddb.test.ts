// @cairn/core/indexeddb under fake-indexeddb: the first-read and damage suites, interchange with plain y-indexeddb,
// and the failures y-indexeddb swallows (a quota error, the database deleted by another tab).
import 'fake-indexeddb/auto'; // globals for y-indexeddb (lib0 opens `indexedDB` directly)
import { IDBFactory } from 'fake-indexeddb';
import { describe, expect, it } from 'vitest';
import { IndexeddbPersistence } from 'y-indexeddb';
import * as Y from 'yjs';
import { openIndexedDBPersistence } from '../src/adapters/indexeddb.js';
import { CairnError } from '../src/errors.js';
import { runStorageDamageTests } from '../src/testing/index.js';
import { runFirstReadTests } from './first-read-suite.js';
import { deleteDatabase, IDB_DAMAGE, idbDamageHarness, idbHarness, readRecords } from './idb-harness.js';

/** A factory whose connections throw QuotaExceededError from transaction() while `armed`: the browser's edge. */
function quotaFactory(): { factory: IDBFactory; arm(on: boolean): void } {
  const real = new IDBFactory();
  let armed = false;
  const factory = Object.create(real) as IDBFactory;
  factory.open = (name: string, version?: number) => {
    const request = real.open(name, version);
    request.addEventListener('success', () => {
      const db = request.result;
      const transaction = db.transaction.bind(db);
      db.transaction = ((...args: Parameters<IDBDatabase['transaction']>) => {
        if (armed) throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
        return transaction(...args);
      }) as IDBDatabase['transaction'];
    });
    return request;
  };
  return {
    factory,
    arm(on) {
      armed = on;
    },
  };
}

runFirstReadTests('indexeddb', () => idbHarness(new IDBFactory()));
runStorageDamageTests('indexeddb', IDB_DAMAGE, () => idbDamageHarness(new IDBFactory()));

function json(doc: Y.Doc): unknown {
  return doc.getMap('m').toJSON();
}

function edit(doc: Y.Doc, key: string, value: unknown): void {
  doc.transact(() => doc.getMap('m').set(key, value), 'agent:test');
}

/** A new document bound to plan `name` in `factory`'s IndexedDB, once its stored state is loaded. */
async function loaded(
  factory: IDBFactory,
  name: string,
  options: Omit<NonNullable<Parameters<typeof openIndexedDBPersistence>[0]>, 'indexedDB'> = {},
) {
  const doc = new Y.Doc();
  const stored = openIndexedDBPersistence({ ...options, indexedDB: factory })(name, doc);
  await stored.whenLoaded;
  return { doc, stored };
}

describe('indexeddb: beyond the suites', () => {
  it('refuses an empty plan name with invalid_argument, at once', () => {
    const open = openIndexedDBPersistence({ indexedDB: new IDBFactory() });
    expect(() => open('', new Y.Doc())).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
  });

  it('reads what plain y-indexeddb wrote, and y-indexeddb reads what it wrote', async () => {
    const a = new Y.Doc();
    const plain = new IndexeddbPersistence('interop', a);
    await plain.whenSynced;
    edit(a, 'fromPlain', 1);
    await plain.destroy(); // y-indexeddb gives no way to wait for its write: destroy waits for the db to close

    const b = new Y.Doc();
    const ours = openIndexedDBPersistence()('interop', b); // the global factory, as y-indexeddb uses
    await ours.whenLoaded;
    expect(json(b)).toEqual({ fromPlain: 1 });
    edit(b, 'fromOurs', 2);
    await ours.close();

    const c = new Y.Doc();
    const plainAgain = new IndexeddbPersistence('interop', c);
    await plainAgain.whenSynced;
    expect(json(c)).toEqual({ fromPlain: 1, fromOurs: 2 });
    await plainAgain.destroy();
  });

  it('bounds the record count while many batches are written', async () => {
    const factory = new IDBFactory();
    const { doc, stored: p } = await loaded(factory, 'bounded', { compaction: { records: 50 } });
    let maxRecords = 0;
    for (let i = 0; i < 400; i++) {
      edit(doc, `k${i % 20}`, i);
      await p.flush(); // one record per flush
      maxRecords = Math.max(maxRecords, (await readRecords(factory, 'bounded')).length);
    }
    expect(p.stats().compactions).toBeGreaterThanOrEqual(7);
    expect(maxRecords).toBeLessThanOrEqual(51);
    await p.close();
  });

  it('merges a burst of edits into one record', async () => {
    const factory = new IDBFactory();
    const { doc, stored: p } = await loaded(factory, 'burst');
    for (let i = 0; i < 300; i++) edit(doc, `k${i}`, i);
    await p.flush();
    expect(await readRecords(factory, 'burst')).toHaveLength(1);
    await p.close();
  });

  it('after a quota error, flush() reports it, then the next write stores the whole state', async () => {
    const quota = quotaFactory();
    const { doc, stored: p } = await loaded(quota.factory, 'quota');
    edit(doc, 'before', 1);
    await p.flush();
    const errors: CairnError[] = [];
    p.onError((error) => errors.push(error));
    quota.arm(true);
    edit(doc, 'during', 1);
    const error = (await p.flush().catch((e: unknown) => e)) as CairnError;
    expect(error).toBeInstanceOf(CairnError);
    expect(error.code).toBe('storage');
    expect(error.message).toContain('QuotaExceededError');
    // The failed batch, then flush()'s own retry of the whole state: both reported, both still in memory.
    expect(errors.length).toBeGreaterThanOrEqual(1);
    expect(errors.every((e) => e.message.includes('QuotaExceededError'))).toBe(true);
    quota.arm(false);
    edit(doc, 'after', 1);
    await p.flush();
    await p.close();
    const { doc: again, stored: reopened } = await loaded(quota.factory, 'quota');
    expect(json(again)).toEqual({ before: 1, during: 1, after: 1 });
    await reopened.close();
  });

  it('when another tab deletes the database: closes, reports once, and every later flush() rejects', async () => {
    const factory = new IDBFactory();
    const { doc, stored: p } = await loaded(factory, 'deleted');
    const errors: CairnError[] = [];
    p.onError((error) => errors.push(error));
    await deleteDatabase(factory, 'deleted'); // would hang if the connection stayed open
    await expect.poll(() => errors.length).toBe(1);
    expect(errors[0]!.message).toContain('deleted or upgraded by another connection');
    edit(doc, 'lost', 1);
    await expect(p.flush()).rejects.toThrow(/no longer stored/);
    await expect(p.flush()).rejects.toThrow(/no longer stored/);
    expect(errors).toHaveLength(1);
    await expect(p.close()).rejects.toThrow(CairnError);
  });

  it('rejects whenLoaded clearly where there is no IndexedDB, and for a database that is not a plan', async () => {
    const none = openIndexedDBPersistence({ indexedDB: undefined })('x', new Y.Doc());
    const saved = globalThis.indexedDB;
    // `indexedDB: undefined` falls back to the global; without one the open must say what to do.
    Object.defineProperty(globalThis, 'indexedDB', { value: undefined, configurable: true, writable: true });
    const missing = openIndexedDBPersistence()('x', new Y.Doc());
    Object.defineProperty(globalThis, 'indexedDB', { value: saved, configurable: true, writable: true });
    await expect(missing.whenLoaded).rejects.toThrow(/IndexedDB is not available here/);
    await none.close();

    const factory = new IDBFactory();
    await new Promise<void>((resolve) => {
      const request = factory.open('foreign', 3);
      request.onupgradeneeded = () => request.result.createObjectStore('other');
      request.onsuccess = () => {
        request.result.close();
        resolve();
      };
    });
    const foreign = openIndexedDBPersistence({ indexedDB: factory })('foreign', new Y.Doc());
    const error = (await foreign.whenLoaded.catch((e: unknown) => e)) as CairnError;
    expect(error.code).toBe('storage');
    expect(error.message).toContain('is not a plan');
    await expect(foreign.flush()).rejects.toThrow(error);
  });
});
