// The storage stats name the compacted state `stateBytes` (docs/STORAGE.md, "Compaction"): after a compaction it is
// the size of the document's whole state; the deprecated `snapshotBytes` still gives the same number.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IDBFactory } from 'fake-indexeddb';
import { afterEach, describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { openFilePersistence } from '../src/adapters/fs.js';
import { openIndexedDBPersistence } from '../src/adapters/indexeddb.js';
import { createPlan } from '../src/plan.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A plan with some history, written into `doc`. */
function write(doc: Y.Doc): void {
  const plan = createPlan({ doc, actor: 'agent:test' });
  const id = plan.add({ title: 'Compact me' }).id;
  for (let i = 0; i < 20; i++) plan.update(id, { note: `edit ${i}` });
  plan.destroy();
}

describe('stateBytes', () => {
  it('fs: the first record after a compaction, the whole state', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cairn-state-bytes-'));
    dirs.push(dir);
    const doc = new Y.Doc();
    const stored = openFilePersistence(dir)('p', doc);
    await stored.whenLoaded;
    write(doc);
    await stored.compact();
    const stats = stored.stats()!;
    expect(stats.stateBytes).toBe(Y.encodeStateAsUpdate(doc).byteLength);
    expect(stats.snapshotBytes).toBe(stats.stateBytes);
    await stored.close();
  });

  it('IndexedDB: the first record after a compaction, the whole state', async () => {
    const doc = new Y.Doc();
    const stored = openIndexedDBPersistence({ indexedDB: new IDBFactory() })('p', doc);
    await stored.whenLoaded;
    write(doc);
    await stored.compact();
    const stats = stored.stats();
    expect(stats.stateBytes).toBe(Y.encodeStateAsUpdate(doc).byteLength);
    expect(stats.snapshotBytes).toBe(stats.stateBytes);
    await stored.close();
  });
});
