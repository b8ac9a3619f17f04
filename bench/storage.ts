// Benchmark 6: storage. Cold load of a plan after 100,000 small updates, from disk (@cairn/core/fs) and from
// IndexedDB (@cairn/core/indexeddb on fake-indexeddb; real Chromium through the hook in lib/idb-cold-load.ts),
// after compaction; and the history overhead: bytes on disk after 100,000 status flips on 100 tasks against the
// same content written fresh. Baselines: Automerge (same model, same edits, A.save / A.load), y-indexeddb, and
// seed 000's tasks.json (the content alone, no history) as the floor.
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import * as A from '@automerge/automerge';
import { createPlan } from '@cairn/core';
import { openFilePersistence, UpdateLog } from '@cairn/core/fs';
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb';
import { IndexeddbPersistence } from 'y-indexeddb';
import * as Y from 'yjs';
import { type AmPlan, addTasks, amReady, emptyPlan, setStatus } from './baselines/automerge-plan.js';
import { writeFresh, writeHistory } from './lib/history.js';
import { type IdbColdLoadResult, idbColdLoad } from './lib/idb-cold-load.js';
import { collectGarbage, now, progress, type Summary, summarize } from './lib/measure.js';
import { type BenchResult, bytes, fmtRatio, ms, type Row, speedup } from './lib/report.js';

const TARGET_MS = 100;

type Result = Omit<BenchResult, 'machine' | 'at' | 'seconds' | 'quick'>;

/** Times `fn` `runs` times after one warm-up run. */
async function repeat(runs: number, fn: () => Promise<number[]> | number[]): Promise<Summary[]> {
  const out: number[][] = [];
  for (let i = 0; i <= runs; i++) {
    collectGarbage();
    const parts = await fn();
    if (i > 0) out.push(parts);
  }
  return out[0]!.map((_, k) => summarize(out.map((p) => p[k]!)));
}

async function fsHistory(dir: string, name: string, tasks: number, updates: number) {
  const doc = new Y.Doc();
  const stored = openFilePersistence(dir)(name, doc);
  await stored.whenLoaded;
  const { plan, usPerUpdate } = await writeHistory(doc, { tasks, updates });
  await stored.compact();
  const stats = stored.stats()!;
  await stored.close();
  return { doc, plan, usPerUpdate, stats, bytes: fs.statSync(join(dir, `${name}.log`)).size };
}

async function fsFresh(dir: string, name: string, tasks: number, updates: number): Promise<number> {
  const doc = new Y.Doc();
  const stored = openFilePersistence(dir)(name, doc);
  await stored.whenLoaded;
  const plan = writeFresh(doc, tasks, updates);
  await stored.compact();
  await stored.close();
  plan.destroy();
  return fs.statSync(join(dir, `${name}.log`)).size;
}

function amHistory(tasks: number, updates: number): { doc: A.Doc<AmPlan>; usPerUpdate: number } {
  let doc = emptyPlan();
  const ids = Array.from({ length: tasks }, (_, i) => `t${i}`);
  for (let s = 0; s < tasks; s += 500)
    doc = addTasks(
      doc,
      ids
        .slice(s, s + 500)
        .map((id, i) => ({ id, num: s + i + 1, title: `Task ${s + i}`, status: 'pending' })),
    );
  const t0 = now();
  for (let i = 0; i < updates; i++) {
    const id = ids[i % tasks]!;
    doc = setStatus(doc, id, doc.tasks[id]!.status === 'done' ? 'pending' : 'done');
  }
  return { doc, usPerUpdate: ((now() - t0) * 1000) / updates };
}

function amFresh(tasks: number, updates: number): Uint8Array {
  const flips = (k: number) => (updates > k ? Math.ceil((updates - k) / tasks) : 0);
  let doc = emptyPlan();
  for (let s = 0; s < tasks; s += 500)
    doc = addTasks(
      doc,
      Array.from({ length: Math.min(500, tasks - s) }, (_, i) => ({
        id: `t${s + i}`,
        num: s + i + 1,
        title: `Task ${s + i}`,
        status: flips(s + i) % 2 ? 'done' : 'pending',
      })),
    );
  return A.save(doc);
}

/** Seed 000's file for the same content: `{ tasks: [{ id, text, status, created_at, updated_at }], next_id }`. */
function seed000File(tasks: number, updates: number): string {
  const flips = (k: number) => (updates > k ? Math.ceil((updates - k) / tasks) : 0);
  const t = Math.floor(Date.now() / 1000);
  return JSON.stringify({
    tasks: Array.from({ length: tasks }, (_, k) => ({
      id: k + 1,
      text: `Task ${k}`,
      status: flips(k) % 2 ? 'done' : 'pending',
      created_at: t,
      updated_at: t,
    })),
    next_id: tasks + 1,
  });
}

/** Loads a stored y-indexeddb copy of `state` (y-indexeddb stores the whole state after its first sync). */
async function yIndexeddbColdLoad(factory: IDBFactory, state: Uint8Array, runs: number): Promise<Summary> {
  const g = globalThis as { indexedDB?: IDBFactory; IDBKeyRange?: unknown };
  const previous = [g.indexedDB, g.IDBKeyRange] as const;
  // y-indexeddb (through lib0) uses the globals.
  g.indexedDB = factory;
  g.IDBKeyRange = IDBKeyRange;
  try {
    const name = `y-indexeddb-${Date.now()}`;
    const seedDoc = new Y.Doc();
    Y.applyUpdate(seedDoc, state);
    const writer = new IndexeddbPersistence(name, seedDoc);
    await writer.whenSynced;
    await writer.destroy();
    const [total] = await repeat(runs, async () => {
      const t0 = now();
      const doc = new Y.Doc();
      const p = new IndexeddbPersistence(name, doc);
      await p.whenSynced;
      createPlan({ doc }).ready();
      const dt = now() - t0;
      await p.destroy();
      return [dt];
    });
    await new IndexeddbPersistence(name, new Y.Doc()).clearData();
    return total!;
  } finally {
    [g.indexedDB, g.IDBKeyRange] = previous;
  }
}

/** Plain Yjs, no Cairn: a map per task, `writesPerUpdate` map sets per update, no undo history kept. */
function yjsFloorState(tasks: number, updates: number, writesPerUpdate: 1 | 3): Uint8Array {
  const doc = new Y.Doc();
  const map = doc.getMap<Y.Map<unknown>>('tasks');
  const maps: Y.Map<unknown>[] = [];
  doc.transact(() => {
    for (let i = 0; i < tasks; i++) {
      const m = new Y.Map<unknown>();
      map.set(`t${i}`, m);
      m.set('status', 'pending');
      maps.push(m);
    }
  });
  for (let i = 0; i < updates; i++) {
    const m = maps[i % tasks]!;
    doc.transact(() => {
      m.set('status', m.get('status') === 'done' ? 'pending' : 'done');
      if (writesPerUpdate === 3) {
        m.set('updatedBy', 'agent:writer');
        m.set('updatedAt', Date.now());
      }
    });
  }
  return Y.encodeStateAsUpdate(doc);
}

function timeApply(state: Uint8Array): number {
  const t0 = now();
  Y.applyUpdate(new Y.Doc(), state);
  return now() - t0;
}

function readChromiumResult(): IdbColdLoadResult | null {
  const path =
    process.env['CAIRN_CHROMIUM_IDB_RESULT'] ?? join(import.meta.dirname, '.results', 'chromium-idb.json');
  try {
    return JSON.parse(fs.readFileSync(path, 'utf8')) as IdbColdLoadResult;
  } catch {
    return null;
  }
}

export async function run({ quick }: { quick: boolean }): Promise<Result> {
  const TASKS = 1_000;
  const UPDATES = quick ? 10_000 : 100_000;
  const FLIP_TASKS = 100;
  const runs = quick ? 3 : 7;
  const n = (x: number) => x.toLocaleString('en-US');
  const rows: Row[] = [];
  const notes: string[] = [];
  const dir = fs.mkdtempSync(join(os.tmpdir(), 'cairn-bench-storage-'));
  try {
    // ---- disk: write the history through the fs adapter, compact, then cold-load it
    progress(`fs: writing ${n(UPDATES)} updates`);
    const written = await fsHistory(dir, 'plan', TASKS, UPDATES);
    progress('fs: cold loads');
    const state = Y.encodeStateAsUpdate(written.doc);
    written.plan.destroy();
    written.doc.destroy();
    const logPath = join(dir, 'plan.log');
    const [fsTotal, fsLoad, fsRead] = await repeat(runs, async () => {
      const t0 = now();
      const doc = new Y.Doc();
      const stored = openFilePersistence(dir)('plan', doc);
      await stored.whenLoaded;
      const t1 = now();
      const plan = createPlan({ doc });
      plan.ready();
      const t2 = now();
      await stored.close();
      plan.destroy();
      return [t2 - t0, t1 - t0, t2 - t1];
    });
    // The same load taken apart: the file and its checksums, Yjs applying it, the Plan's first read.
    const [parse, apply, first] = await repeat(runs, () => {
      const t0 = now();
      const records = UpdateLog.read(logPath)!;
      const t1 = now();
      const doc = new Y.Doc();
      Y.transact(doc, () => {
        for (const r of records) Y.applyUpdate(doc, r);
      });
      const t2 = now();
      createPlan({ doc }).ready();
      const t3 = now();
      return [t1 - t0, t2 - t1, t3 - t2];
    });
    // What bounds it: plain Yjs loading the same number of overwrites, without Cairn.
    progress('plain Yjs floor');
    const floor3 = yjsFloorState(TASKS, UPDATES, 3);
    const floor1 = yjsFloorState(TASKS, UPDATES, 1);
    const [apply3, apply1] = await repeat(runs, () => [timeApply(floor3), timeApply(floor1)]);

    // Baselines: Automerge with the same edits, saved compacted; seed 000's file of the same content.
    progress(`Automerge: ${n(UPDATES)} changes`);
    const am = amHistory(TASKS, UPDATES);
    const amPath = join(dir, 'plan.automerge');
    fs.writeFileSync(amPath, A.save(am.doc));
    const [amLoad] = await repeat(runs, () => {
      const t0 = now();
      const doc = A.load<AmPlan>(fs.readFileSync(amPath));
      amReady(doc);
      return [now() - t0];
    });
    const jsonPath = join(dir, 'tasks.json');
    fs.writeFileSync(jsonPath, seed000File(TASKS, UPDATES));
    const [jsonLoad] = await repeat(runs, () => {
      const t0 = now();
      const file = JSON.parse(fs.readFileSync(jsonPath, 'utf8')) as { tasks: Array<{ status: string }> };
      file.tasks.filter((t) => t.status !== 'done');
      return [now() - t0];
    });

    const what = `${n(TASKS)} tasks after ${n(UPDATES)} updates, compacted`;
    rows.push(
      {
        measure: `cold load from disk (fs adapter), ${what}: open → first ready() (median)`,
        cairn: ms(fsTotal!.median),
        baselineName: `Automerge: read file + A.load + ready (${bytes(fs.statSync(amPath).size)})`,
        baseline: ms(amLoad!.median),
        ratio: speedup(fsTotal!.median, amLoad!.median),
        target: `< ${TARGET_MS} ms`,
        met: fsTotal!.median < TARGET_MS,
      },
      {
        measure: `the same, against the content alone`,
        cairn: ms(fsTotal!.median),
        baselineName: `seed 000 tasks.json, no history (${bytes(fs.statSync(jsonPath).size)})`,
        baseline: ms(jsonLoad!.median),
        ratio: speedup(fsTotal!.median, jsonLoad!.median),
        target: '',
        met: null,
      },
      {
        measure: `of which: open, read and checksum the log (${bytes(written.bytes)}, ${written.stats.records} record${written.stats.records > 1 ? 's' : ''})`,
        cairn: ms(parse!.median),
        baselineName: '',
        baseline: '',
        ratio: '',
        target: '',
        met: null,
      },
      {
        measure: 'of which: Y.applyUpdate of the snapshot',
        cairn: ms(apply!.median),
        baselineName: 'plain Yjs, same overwrites (3 map sets per update), no undo history',
        baseline: ms(apply3!.median),
        ratio: speedup(apply!.median, apply3!.median),
        target: '',
        met: null,
      },
      {
        measure: 'of which: createPlan + first ready()',
        cairn: ms(first!.median),
        baselineName: 'plain Yjs, one map set per update (what bounds a Y.Map history)',
        baseline: ms(apply1!.median),
        ratio: '',
        target: '',
        met: null,
      },
      {
        measure: `write: one status change through Plan.update with the fs adapter on (mean)`,
        cairn: ms(written.usPerUpdate / 1000),
        baselineName: 'Automerge: one A.change, in memory',
        baseline: ms(am.usPerUpdate / 1000),
        ratio: speedup(written.usPerUpdate, am.usPerUpdate),
        target: '',
        met: null,
      },
    );
    notes.push(
      `The compacted log holds ${bytes(written.bytes)} for ${n(TASKS)} tasks: ${(state.byteLength / UPDATES).toFixed(1)} bytes per update; ` +
        `plain Yjs with the same three map sets per update and no undo history: ${(floor3.byteLength / UPDATES).toFixed(1)}; ` +
        `with one set per update: ${(floor1.byteLength / UPDATES).toFixed(1)}. Breakdown of the cold load: fs open ${ms(fsLoad!.median)} (read, checksum, Y.applyUpdate), Plan's first read ${ms(fsRead!.median)}.`,
    );

    // ---- IndexedDB (fake-indexeddb in Node)
    progress('IndexedDB: write and cold loads');
    const factory = new IDBFactory();
    const idb = await idbColdLoad({
      indexedDB: factory,
      where: 'fake-indexeddb 6.2.8 in Node',
      tasks: TASKS,
      updates: UPDATES,
      loads: runs,
    });
    progress('y-indexeddb');
    const yidb = await yIndexeddbColdLoad(factory, state, runs);
    rows.push({
      measure: `cold load from IndexedDB (fake-indexeddb), ${what}: open → first ready() (median)`,
      cairn: ms(idb.total.median),
      baselineName: 'y-indexeddb 9 (same state, stored as one record) + the same first read',
      baseline: ms(yidb.median),
      ratio: speedup(idb.total.median, yidb.median),
      target: `< ${TARGET_MS} ms`,
      met: idb.total.median < TARGET_MS,
    });
    const chromium = readChromiumResult();
    if (chromium) {
      rows.push({
        measure: `cold load from IndexedDB in real Chromium (${chromium.where}), ${n(chromium.tasks)} tasks after ${n(chromium.updates)} updates, measured ${chromium.at.slice(0, 16)}`,
        cairn: ms(chromium.total.median),
        baselineName: '',
        baseline: '',
        ratio: '',
        target: `< ${TARGET_MS} ms`,
        met: chromium.total.median < TARGET_MS,
      });
    } else {
      notes.push(
        'Real Chromium: not in this run. The browser test run measures it with the same code ' +
          '(`bench/lib/idb-cold-load.ts`, `idbColdLoad({ indexedDB, ... })`) and writes `bench/.results/chromium-idb.json` ' +
          '(or `$CAIRN_CHROMIUM_IDB_RESULT`); the next `pnpm bench` adds it here.',
      );
    }

    // ---- history overhead: 100k flips on 100 tasks against the same content written fresh
    progress('history overhead');
    const flipped = await fsHistory(dir, 'flips', FLIP_TASKS, UPDATES);
    flipped.plan.destroy();
    const fresh = await fsFresh(dir, 'fresh', FLIP_TASKS, UPDATES);
    progress('Automerge history overhead');
    const amFlipped = A.save(amHistory(FLIP_TASKS, UPDATES).doc).byteLength;
    const amFreshBytes = amFresh(FLIP_TASKS, UPDATES).byteLength;
    const cairnOverhead = flipped.bytes / fresh;
    const amOverhead = amFlipped / amFreshBytes;
    rows.push({
      measure: `on disk after ${n(UPDATES)} status flips on ${FLIP_TASKS} tasks, compacted, vs the same content written fresh`,
      cairn: `${bytes(flipped.bytes)} vs ${bytes(fresh)}: ${fmtRatio(cairnOverhead)}`,
      baselineName: 'Automerge A.save, same edits vs fresh',
      baseline: `${bytes(amFlipped)} vs ${bytes(amFreshBytes)}: ${fmtRatio(amOverhead)}`,
      ratio: `${fmtRatio(flipped.bytes / amFlipped)} Automerge's bytes`,
      target: '',
      met: null,
    });
    rows.push({
      measure: `the same ${FLIP_TASKS} tasks as seed 000's tasks.json (content only)`,
      cairn: bytes(fresh),
      baselineName: 'seed 000 tasks.json',
      baseline: bytes(Buffer.byteLength(seed000File(FLIP_TASKS, UPDATES))),
      ratio: '',
      target: '',
      met: null,
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return {
    id: 'storage',
    number: 6,
    title: 'Storage: cold load and history overhead',
    method:
      `A plan of ${n(TASKS)} tasks gets ${n(UPDATES)} status flips, each its own transaction through \`Plan.update\` ` +
      '(each stamps status, updatedBy and updatedAt), with the fs adapter on (default compaction), then ' +
      `\`compact()\`. A cold load is a fresh Y.Doc opened on the files, then \`createPlan\` and a first \`ready()\`; medians of ${runs} after a warm-up. ` +
      'For IndexedDB the same history is written through the IndexedDB adapter (waiting for the store every 10 updates) and compacted. ' +
      'Automerge gets the same edits on the same model (one doc, a map of tasks) and is loaded from `A.save()`.',
    rows,
    notes,
  };
}
