// Benchmark 15: many plans on one server. Plans of 30 tasks are written one after another through the hub (the
// path of the HTTP API and the sweepers: open, write, flush, release); then the server's RSS and heap while
// they are loaded, and again once every plan has unloaded after its idle minute and a collection ran. Beside
// it the reference: the same documents held as Y.Docs in a Map, as a server that never unloads holds them.
// Each measurement runs in a process of its own; the full run goes to 10,000 plans (a few minutes of writing).
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SOURCE_NODE_ARGS } from '../test/source-cli.js';
import { progress } from './lib/measure.js';
import { type BenchOptions, type BenchOutcome, cairnOnly, type Row } from './lib/report.js';

interface Memory {
  rss: number;
  heap: number;
}

interface Measured {
  kind: 'cairn' | 'reference';
  plans: number;
  base: Memory;
  loaded: Memory;
  idle: Memory;
  createS: number;
  rooms: number;
  unloadedAfterS?: number;
  reloadMedianMs?: number;
  reloadP99Ms?: number;
}

const here = dirname(fileURLToPath(import.meta.url));

function measure(kind: 'cairn' | 'reference', plans: number, idleMs: number): Measured {
  const child = spawnSync(
    process.execPath,
    ['--expose-gc', ...SOURCE_NODE_ARGS, join(here, 'lib', 'many-plans-child.ts'), kind, String(plans)],
    { env: { ...process.env, IDLE_MS: String(idleMs) }, encoding: 'utf8', maxBuffer: 1 << 24 },
  );
  if (child.status !== 0) throw new Error(`many-plans ${kind} ${plans} failed: ${child.stderr}`);
  return JSON.parse(child.stdout.trim().split('\n').pop()!) as Measured;
}

const mb = (x: number) => `${x.toFixed(0)} MiB`;
const kib = (x: number) => `${(x * 1024).toFixed(0)} KiB`;

/** A row of RSS / heap, Cairn's against the baseline's, compared by RSS. */
function memoryRow(measure: string, cairn: Memory, baselineName: string, baseline: Memory): Row {
  return {
    measure,
    cairn: `${mb(cairn.rss)} / ${mb(cairn.heap)}`,
    baselineName,
    baseline: `${mb(baseline.rss)} / ${mb(baseline.heap)}`,
    ratio: `${(cairn.rss / baseline.rss).toFixed(2)}x RSS`,
    target: '',
    met: null,
  };
}

export async function run({ quick }: BenchOptions): Promise<BenchOutcome> {
  const sizes = quick ? [200] : [1_000, 3_000, 10_000];
  const idleMs = quick ? 2_000 : 60_000;
  const rows: Row[] = [];
  const notes: string[] = [];
  for (const plans of sizes) {
    progress(`${plans} plans: Cairn`);
    const c = measure('cairn', plans, idleMs);
    progress(`${plans} plans: reference`);
    const r = measure('reference', plans, idleMs);
    const n = plans.toLocaleString('en-US');
    // Per plan loaded when measured: plans idle past the idle time unload while later ones are written.
    const perPlan = (m: Measured) => (m.loaded.heap - m.base.heap) / m.rooms;
    rows.push(
      memoryRow(
        `${n} plans written (${c.rooms.toLocaleString('en-US')} of them still loaded): RSS / heap after a collection`,
        c.loaded,
        'reference: the same documents held in memory',
        r.loaded,
      ),
      {
        measure: `${n} plans, heap per loaded plan (slope over the empty server)`,
        cairn: kib(perPlan(c)),
        baselineName: 'reference',
        baseline: kib(perPlan(r)),
        ratio: `${(perPlan(c) / perPlan(r)).toFixed(2)}x`,
        target: '',
        met: null,
      },
      memoryRow(
        `${n} plans after an idle ${idleMs / 1000} s and a collection: RSS / heap (rooms 0)`,
        c.idle,
        'reference (never unloads)',
        r.idle,
      ),
      cairnOnly(
        `${n} plans: reload of an unloaded plan from disk (median / p99 of 50)`,
        `${c.reloadMedianMs!.toFixed(1)} ms / ${c.reloadP99Ms!.toFixed(1)} ms`,
      ),
    );
    notes.push(
      `${n} plans: written in ${c.createS.toFixed(0)} s (${c.rooms} still loaded when measured; those idle past ` +
        `${idleMs / 1000} s unload while the rest are written); the last unloaded ${c.unloadedAfterS!.toFixed(0)} s ` +
        `after the writes ended. The empty server: RSS ${mb(c.base.rss)}, heap ${mb(c.base.heap)}. After unloading, ` +
        `the heap returns to within ${mb(c.idle.heap - c.base.heap)} of the empty server's; RSS stays ` +
        `${mb(c.idle.rss - c.base.rss)} above it: V8 keeps pages it has grown into, and the server does nothing ` +
        'more about it (the pages are reused by the next plans loaded).',
    );
  }
  return {
    id: 'many-plans',
    number: 15,
    title: 'Many plans on one server',
    method:
      'Plans of 30 tasks (a third done) written one after another through the hub with the disk store (open, write, ' +
      `flush, release), the idle unload at ${idleMs / 1000} s. RSS and heap (process.memoryUsage after two forced ` +
      'collections) of the empty server, with the plans loaded, and after every plan has unloaded. The reference ' +
      'holds the same documents as Y.Docs in a Map. Each figure from a process of its own.',
    rows,
    notes,
  };
}
