// The first-read and damage harnesses for the IndexedDB adapter, on any IDBFactory: fake-indexeddb in Node, the real
// one in Chromium. Platform-neutral, so the browser run imports it too.

import { openIndexedDBPersistence, openIndexedDBPlan, SNAPSHOT_KEY } from '../src/adapters/indexeddb.js';
import { type DamageHarness, openOrRefused, type StorageDamage } from '../src/testing/index.js';
import type { FirstReadHarness } from './first-read-suite.js';

/** The records stored under `name`, read with a connection of our own; [] if there is no such database. */
export async function readRecords(factory: IDBFactory, name: string): Promise<Uint8Array[]> {
  const db = await new Promise<IDBDatabase | null>((resolve, reject) => {
    const request = factory.open(name);
    // No database yet: abort the upgrade so reading does not create an empty one.
    request.onupgradeneeded = () => request.transaction!.abort();
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => (request.error?.name === 'AbortError' ? resolve(null) : reject(request.error));
  });
  if (!db) return [];
  try {
    const request = db.transaction(['updates'], 'readonly').objectStore('updates').getAll();
    return await new Promise((resolve, reject) => {
      request.onsuccess = () => resolve(request.result as Uint8Array[]);
      request.onerror = () => reject(request.error);
    });
  } finally {
    db.close();
  }
}

/** Runs `fn` in a readwrite transaction over both stores of `name` (created in y-indexeddb's layout if missing). */
async function withStores(
  factory: IDBFactory,
  name: string,
  fn: (updates: IDBObjectStore, custom: IDBObjectStore) => void,
): Promise<void> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const request = factory.open(name);
    request.onupgradeneeded = () => {
      request.result.createObjectStore('updates', { autoIncrement: true });
      request.result.createObjectStore('custom');
    };
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  try {
    const tx = db.transaction(['updates', 'custom'], 'readwrite');
    fn(tx.objectStore('updates'), tx.objectStore('custom'));
    await new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
    });
  } finally {
    db.close();
  }
}

export function deleteDatabase(factory: IDBFactory, name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = factory.deleteDatabase(name);
    request.onsuccess = () => resolve();
    request.onerror = () => reject(request.error);
  });
}

/**
 * A store for one test: the adapter on `factory`, databases named under `prefix` (a real browser keeps its
 * databases between tests, so each test takes a fresh prefix there).
 */
export function idbHarness(factory: IDBFactory, prefix = ''): FirstReadHarness {
  return {
    open: openIndexedDBPersistence({ indexedDB: factory, prefix }),
    openPlan: (name, plan) => openIndexedDBPlan(name, { indexedDB: factory, prefix, plan }),
    appendRaw: (name, update) => withStores(factory, `${prefix}${name}`, (updates) => updates.add(update)),
    damageSnapshot: (name) =>
      withStores(factory, `${prefix}${name}`, (_, custom) => {
        const get = custom.get(SNAPSHOT_KEY);
        get.onsuccess = () => {
          const bytes = new Uint8Array(get.result as Uint8Array);
          bytes[bytes.byteLength >> 1]! ^= 0x20;
          custom.put(bytes, SNAPSHOT_KEY);
        };
      }),
  };
}

/** The damage an IndexedDB plan can suffer: its records (no bytes to cut or flip unnoticed: no checksums) and snapshot. */
export const IDB_DAMAGE: readonly StorageDamage[] = [
  'log-empty',
  'cut-at-boundary',
  'row-missing',
  'snapshot-newer',
  'snapshot-missing',
];

/** Reads the updates' keys of `db` inside `fn`'s transaction and lets it delete some. */
function deleteKeys(pick: (keys: IDBValidKey[]) => IDBValidKey[]) {
  return (updates: IDBObjectStore) => {
    const keys = updates.getAllKeys();
    keys.onsuccess = () => {
      for (const key of pick(keys.result)) updates.delete(key);
    };
  };
}

/** The storage damage suite's harness for the IndexedDB adapter, on any IDBFactory. */
export function idbDamageHarness(factory: IDBFactory, prefix = ''): DamageHarness {
  const open = openIndexedDBPersistence({ indexedDB: factory, prefix });
  const halfway = new Map<string, number>();
  const session = (name: string) => openOrRefused(open, name);
  const db = (name: string) => `${prefix}${name}`;
  return {
    async store(name, edits) {
      const s = await session(name);
      if ('refused' in s) throw s.refused;
      for (const [i, edit] of edits.entries()) {
        edit(s.doc);
        await s.persistence.flush();
        if (i === edits.length >> 1) halfway.set(name, (await readRecords(factory, db(name))).length);
      }
      await s.persistence.close();
    },
    async damage(name, kind) {
      const keep = halfway.get(name) ?? 0;
      const edits: Partial<Record<StorageDamage, (updates: IDBObjectStore, custom: IDBObjectStore) => void>> =
        {
          'log-empty': (updates) => updates.clear(),
          'cut-at-boundary': deleteKeys((keys) => keys.slice(-5)),
          'row-missing': deleteKeys((keys) => keys.slice(keys.length >> 1, (keys.length >> 1) + 1)),
          'snapshot-newer': deleteKeys((keys) => keys.slice(keep)),
          'snapshot-missing': (_, custom) => custom.delete(SNAPSHOT_KEY),
        };
      const edit = edits[kind];
      if (!edit) throw new Error(`IndexedDB has no ${kind} damage`);
      await withStores(factory, db(name), edit);
    },
    async open(name) {
      const s = await session(name);
      if ('refused' in s) return s;
      await s.persistence.close();
      return { served: s.doc };
    },
    async write(name, edit) {
      const s = await session(name);
      if ('refused' in s) return 'refused';
      edit(s.doc);
      await s.persistence.close();
      return 'written';
    },
    async reported(name) {
      const s = await session(name);
      if ('refused' in s) return (s.refused as { details?: { damage?: unknown } }).details?.damage ?? null;
      await s.persistence.close();
      return null;
    },
    async fingerprint(name) {
      const records = await readRecords(factory, db(name));
      let snapshot = '';
      await withStores(factory, db(name), (_, custom) => {
        const get = custom.get(SNAPSHOT_KEY);
        get.onsuccess = () => {
          snapshot = get.result instanceof Uint8Array ? get.result.join(',') : 'none';
        };
      });
      return `${records.map((r) => r.join(',')).join(';')}|${snapshot}`;
    },
  };
}
