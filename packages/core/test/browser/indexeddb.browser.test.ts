// The byte, first-read and damage suites on real IndexedDB, in Debian's Chromium (vitest's browser mode): the same
// tests the fake-indexeddb run passes in Node, against the browser's own implementation and its on-disk store.
import { describe, expect, it } from 'vitest';
import { IndexedDBByteAdapter } from '../../src/adapters/indexeddb.js';
import { runByteAdapterTests, runStorageDamageTests } from '../../src/testing/index.js';
import { runFirstReadTests } from '../first-read-suite.js';
import { IDB_DAMAGE, idbDamageHarness, idbHarness } from '../idb-harness.js';

let run = 0;
runFirstReadTests('indexeddb (Chromium)', () => idbHarness(indexedDB, `suite-${Date.now()}-${run++}:`));
runStorageDamageTests('indexeddb (Chromium)', IDB_DAMAGE, () =>
  idbDamageHarness(indexedDB, `damage-${Date.now()}-${run++}:`),
);

runByteAdapterTests('indexeddb (Chromium)', () => {
  const prefix = `bytes-${Date.now()}-${run++}:`;
  return {
    adapter: new IndexedDBByteAdapter({ indexedDB, prefix }),
    reopen: () => new IndexedDBByteAdapter({ indexedDB, prefix }),
    secondLock: 'shared',
  };
});

describe('where this runs', () => {
  it('is Chromium with its own IndexedDB, not Node with a stand-in', () => {
    expect(navigator.userAgent).toMatch(/Chrome\//);
    expect(typeof (globalThis as { process?: unknown }).process).toBe('undefined');
    expect(Object.prototype.toString.call(indexedDB)).toBe('[object IDBFactory]');
  });
});
