// The byte contract's acceptance suite over every adapter that runs in Node: memory, the file system (which the
// server's disk store uses too) and IndexedDB under fake-indexeddb. Chromium runs it in browser/.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileByteAdapter } from '@cairn/core/fs';
import { IndexedDBByteAdapter } from '@cairn/core/indexeddb';
import { memoryByteAdapter } from '@cairn/core/protocol';
import { runByteAdapterTests } from '@cairn/core/testing';
import { IDBFactory } from 'fake-indexeddb';

runByteAdapterTests('memory', () => {
  const adapter = memoryByteAdapter();
  // One Map is the storage: a "second process" is the same adapter, whose lock refuses a held document.
  return { adapter, reopen: () => adapter, secondLock: 'locked' };
});

runByteAdapterTests('fs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bytes-'));
  return {
    adapter: new FileByteAdapter(dir),
    reopen: () => new FileByteAdapter(dir),
    secondLock: 'locked',
    teardown: () => rmSync(dir, { recursive: true, force: true }),
  };
});

runByteAdapterTests('indexeddb (fake-indexeddb)', () => {
  const indexedDB = new IDBFactory();
  return {
    adapter: new IndexedDBByteAdapter({ indexedDB }),
    reopen: () => new IndexedDBByteAdapter({ indexedDB }),
    secondLock: 'shared',
  };
});
