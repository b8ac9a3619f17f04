// The IndexedDB half of the storage benchmark, platform-neutral so it runs on fake-indexeddb in Node and on real
// IndexedDB in Chromium: write the history through @cairn/core/indexeddb, compact, then time cold loads (open
// the database, apply what is stored, first read of the plan).
//
// Hook for the browser test run: bundle this module into a page, call `idbColdLoad({ indexedDB, ... })` and
// write the JSON result to bench/.results/chromium-idb.json (or the path in CAIRN_CHROMIUM_IDB_RESULT);
// `pnpm bench` then puts it in docs/BENCHMARKS.md beside the Node figures, with the time it was measured.
import { createPlan } from '@cairn/core';
import { openIndexedDBPersistence } from '@cairn/core/indexeddb';
import * as Y from 'yjs';
import { writeHistory } from './history.js';
import { type Summary, summarize } from './measure.js';

export interface IdbColdLoadResult {
  /** Where it ran, e.g. "fake-indexeddb 6.2.8 in Node" or navigator.userAgent. */
  where: string;
  tasks: number;
  updates: number;
  usPerUpdate: number;
  storedBytes: number;
  storedRecords: number;
  /** Open + load into a fresh doc (whenLoaded), ms. */
  load: Summary;
  /** Plan creation and its first read (ready()) after the load, ms. */
  firstRead: Summary;
  /** Both together: what an app waits for. */
  total: Summary;
  at: string;
}

export async function idbColdLoad(options: {
  indexedDB: IDBFactory;
  where: string;
  tasks: number;
  updates: number;
  loads: number;
  name?: string;
}): Promise<IdbColdLoadResult> {
  const name = options.name ?? `bench-cold-${Date.now()}`;
  const open = openIndexedDBPersistence({ indexedDB: options.indexedDB });
  const doc = new Y.Doc();
  const stored = open(name, doc);
  await stored.whenLoaded;
  // Spaced-out edits: every 100 updates wait for the store, which writes what arrived together as one record.
  const { plan, usPerUpdate } = await writeHistory(doc, {
    tasks: options.tasks,
    updates: options.updates,
    yieldEvery: 100,
    onProgress: () => stored.flush(),
  });
  await stored.flush();
  await stored.compact();
  const stats = stored.stats();
  await stored.close();
  plan.destroy();
  doc.destroy();

  const load: number[] = [];
  const firstRead: number[] = [];
  const total: number[] = [];
  for (let i = 0; i < options.loads + 1; i++) {
    const t0 = performance.now();
    const fresh = new Y.Doc();
    const reopened = open(name, fresh);
    await reopened.whenLoaded;
    const t1 = performance.now();
    const p = createPlan({ doc: fresh });
    const ready = p.ready().length;
    const t2 = performance.now();
    if (ready === 0 && p.list().length === 0) throw new Error('the plan did not load');
    await reopened.close();
    p.destroy();
    fresh.destroy();
    if (i === 0) continue; // warm-up
    load.push(t1 - t0);
    firstRead.push(t2 - t1);
    total.push(t2 - t0);
  }
  await new Promise<void>((resolve, reject) => {
    const req = options.indexedDB.deleteDatabase(name);
    req.onsuccess = () => resolve();
    req.onerror = () => reject(req.error);
  });
  return {
    where: options.where,
    tasks: options.tasks,
    updates: options.updates,
    usPerUpdate,
    storedBytes: stats.bytes,
    storedRecords: stats.records,
    load: summarize(load),
    firstRead: summarize(firstRead),
    total: summarize(total),
    at: new Date().toISOString(),
  };
}
