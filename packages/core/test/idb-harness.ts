// The storage suite's harness for the IndexedDB adapter, on any IDBFactory: fake-indexeddb in Node, the real
// one in Chromium. Platform-neutral, so the browser run imports it too.
import { openIndexedDBPersistence } from '../src/adapters/indexeddb.js';
import type { StorageHarness } from '../src/testing/index.js';

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
export function idbHarness(factory: IDBFactory, prefix = ''): StorageHarness {
  const open = openIndexedDBPersistence({ indexedDB: factory, prefix });
  const read = (name: string) => readRecords(factory, `${prefix}${name}`);
  return {
    open,
    secondInstance: 'shared',
    readStored: read,
    storedBytes: async (name) => (await read(name)).reduce((sum, r) => sum + r.byteLength, 0),
    openFailing(name, doc) {
      const p = open(name, doc);
      // Another tab deletes the database: this connection must close (or the delete would hang) and say so.
      const whenLoaded = p.whenLoaded.then(() => deleteDatabase(factory, `${prefix}${name}`));
      return {
        whenLoaded,
        flush: () => p.flush(),
        close: () => p.close(),
        onError: (listener) => p.onError(listener),
      };
    },
  };
}
