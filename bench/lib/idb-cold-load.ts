// The IndexedDB half of the storage benchmark, platform-neutral so it runs on fake-indexeddb in Node and on real
// IndexedDB in Chromium: write the history through @cairn/core/indexeddb, compact, then time cold loads (open
// the database, apply what is stored, first read of the plan). In Node `idbColdLoad` does both in one process;
// lib/chromium-idb.ts bundles this module into a page, writes once, and times each load in a freshly loaded
// page (`idbWriteHistory`, then `idbLoadOnce` after each reload).
import { createPlan } from '@cairn/core';
import { openIndexedDBPersistence, openIndexedDBPlan } from '@cairn/core/indexeddb';
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
  /** The same load taken apart, in its own fresh page: IndexedDB alone (open + getAll), then Y.applyUpdate. */
  parts?: { read: Summary; apply: Summary };
  /** openIndexedDBPlan, in its own fresh page: open → first ready() from the snapshot, and open → hydrated. */
  firstReads?: { firstRead: Summary; hydrated: Summary };
  at: string;
}

export interface IdbWritten {
  usPerUpdate: number;
  storedBytes: number;
  storedRecords: number;
}

/** One cold load: ms to open and load (whenLoaded), then to create the Plan and read it once (ready()). */
export interface IdbLoad {
  load: number;
  firstRead: number;
}

/** Writes `updates` status flips on `tasks` tasks through the IndexedDB adapter into database `name`, compacted. */
export async function idbWriteHistory(options: {
  indexedDB: IDBFactory;
  name: string;
  tasks: number;
  updates: number;
}): Promise<IdbWritten> {
  const open = openIndexedDBPersistence({ indexedDB: options.indexedDB });
  const doc = new Y.Doc();
  const stored = open(options.name, doc);
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
  return { usPerUpdate, storedBytes: stats.bytes, storedRecords: stats.records };
}

/** Opens database `name` into a fresh doc and reads the plan once, as an app starting up would. */
export async function idbLoadOnce(options: { indexedDB: IDBFactory; name: string }): Promise<IdbLoad> {
  const open = openIndexedDBPersistence({ indexedDB: options.indexedDB });
  const t0 = performance.now();
  const fresh = new Y.Doc();
  const reopened = open(options.name, fresh);
  await reopened.whenLoaded;
  const t1 = performance.now();
  const p = createPlan({ doc: fresh });
  const ready = p.ready().length;
  const t2 = performance.now();
  if (ready === 0 && p.list().length === 0) throw new Error('the plan did not load');
  await reopened.close();
  p.destroy();
  fresh.destroy();
  return { load: t1 - t0, firstRead: t2 - t1 };
}

/** ms from open to a first ready() answered by openIndexedDBPlan (from its snapshot), and to the loaded doc. */
export async function idbFirstReadOnce(options: {
  indexedDB: IDBFactory;
  name: string;
}): Promise<IdbFirstRead> {
  const t0 = performance.now();
  const stored = openIndexedDBPlan(options.name, { indexedDB: options.indexedDB });
  const { plan, fromSnapshot } = await stored.firstRead;
  const ready = plan.ready().length;
  const t1 = performance.now();
  await stored.whenHydrated;
  const t2 = performance.now();
  if (!fromSnapshot) throw new Error('the first read did not come from the snapshot');
  if (ready === 0 && plan.list().length === 0) throw new Error('the plan did not load');
  await stored.close();
  return { firstRead: t1 - t0, hydrated: t2 - t0 };
}

export interface IdbFirstRead {
  firstRead: number;
  hydrated: number;
}

/**
 * The same load without the adapter, taken apart: ms to open the database and read every record (IndexedDB
 * alone), then ms for Y.applyUpdate of them into a fresh doc (Yjs alone).
 */
export async function idbLoadParts(options: {
  indexedDB: IDBFactory;
  name: string;
}): Promise<{ read: number; apply: number }> {
  const t0 = performance.now();
  const records = await new Promise<Uint8Array[]>((resolve, reject) => {
    const req = options.indexedDB.open(options.name);
    req.onerror = () => reject(req.error);
    req.onsuccess = () => {
      const db = req.result;
      const get = db.transaction(['updates'], 'readonly').objectStore('updates').getAll();
      get.onerror = () => reject(get.error);
      get.onsuccess = () => {
        db.close();
        resolve(get.result as Uint8Array[]);
      };
    };
  });
  const t1 = performance.now();
  const doc = new Y.Doc();
  Y.transact(doc, () => {
    for (const r of records) Y.applyUpdate(doc, r);
  });
  const t2 = performance.now();
  doc.destroy();
  return { read: t1 - t0, apply: t2 - t1 };
}

export function deleteDatabase(indexedDB: IDBFactory, name: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const req = indexedDB.deleteDatabase(name);
    req.onsuccess = () => resolve();
    req.onerror = () => reject(req.error);
  });
}

/** Summarises timed loads (the caller leaves out its warm-up). */
export function idbResult(
  where: string,
  shape: { tasks: number; updates: number },
  written: IdbWritten,
  loads: IdbLoad[],
  parts?: Array<{ read: number; apply: number }>,
  firstReads?: IdbFirstRead[],
): IdbColdLoadResult {
  return {
    where,
    ...shape,
    ...written,
    load: summarize(loads.map((l) => l.load)),
    firstRead: summarize(loads.map((l) => l.firstRead)),
    total: summarize(loads.map((l) => l.load + l.firstRead)),
    ...(parts?.length
      ? {
          parts: {
            read: summarize(parts.map((p) => p.read)),
            apply: summarize(parts.map((p) => p.apply)),
          },
        }
      : {}),
    ...(firstReads?.length
      ? {
          firstReads: {
            firstRead: summarize(firstReads.map((f) => f.firstRead)),
            hydrated: summarize(firstReads.map((f) => f.hydrated)),
          },
        }
      : {}),
    at: new Date().toISOString(),
  };
}

/** Write, then `loads` cold loads after a warm-up, in this process. */
export async function idbColdLoad(options: {
  indexedDB: IDBFactory;
  where: string;
  tasks: number;
  updates: number;
  loads: number;
  name?: string;
}): Promise<IdbColdLoadResult> {
  const name = options.name ?? `bench-cold-${Date.now()}`;
  const written = await idbWriteHistory({ ...options, name });
  const loads: IdbLoad[] = [];
  const parts: Array<{ read: number; apply: number }> = [];
  const firstReads: IdbFirstRead[] = [];
  for (let i = 0; i < options.loads + 1; i++) {
    const load = await idbLoadOnce({ indexedDB: options.indexedDB, name });
    const part = await idbLoadParts({ indexedDB: options.indexedDB, name });
    const firstRead = await idbFirstReadOnce({ indexedDB: options.indexedDB, name });
    if (i === 0) continue; // the first is a warm-up
    loads.push(load);
    parts.push(part);
    firstReads.push(firstRead);
  }
  await deleteDatabase(options.indexedDB, name);
  return idbResult(options.where, options, written, loads, parts, firstReads);
}
