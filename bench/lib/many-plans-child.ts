// One measurement of bench/many-plans.ts in a process of its own (so one size's heap does not colour the next):
// `plans` plans of 30 tasks written through the hub, RSS and heap while loaded, then after the idle unload and a
// collection; or the reference, the same documents held as Y.Docs in a Map (as a server without unloading holds
// them). Prints one line of JSON.
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { createPlan, type TaskInput } from '@cairn/core';
import { createCairnServer, silentLogger } from '@cairn/server';
import * as Y from 'yjs';
import { collectGarbage, summarize } from './measure.js';

const [kind, countArg] = process.argv.slice(2);
const plans = Number(countArg);
const IDLE_MS = Number(process.env.IDLE_MS ?? 60_000);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const mib = (bytes: number) => bytes / 1024 / 1024;

function memory() {
  collectGarbage();
  collectGarbage();
  const { rss, heapUsed } = process.memoryUsage();
  return { rss: mib(rss), heap: mib(heapUsed) };
}

const inputs: TaskInput[] = Array.from({ length: 30 }, (_, i) => ({
  title: `Task ${i}: review the account and write down what changed`,
  status: i < 10 ? 'done' : 'pending',
}));

async function main() {
  const base = memory();
  if (kind === 'reference') {
    const docs = new Map<string, Y.Doc>();
    const t0 = performance.now();
    for (let i = 0; i < plans; i++) {
      const doc = new Y.Doc();
      createPlan({ doc, actor: 'agent:bench' }).addMany(inputs);
      docs.set(`bench:${i}`, doc);
    }
    const createS = (performance.now() - t0) / 1000;
    // It never unloads, so after an idle minute it holds what it held: measured once.
    const loaded = memory();
    console.log(JSON.stringify({ kind, plans, base, loaded, idle: loaded, createS, rooms: docs.size }));
    return;
  }
  const dir = fs.mkdtempSync(join(os.tmpdir(), 'cairn-bench-many-'));
  const server = createCairnServer({
    dataDir: dir,
    idleUnloadMs: IDLE_MS,
    logger: silentLogger,
    httpRateLimits: false,
  });
  try {
    const t0 = performance.now();
    for (let i = 0; i < plans; i++) {
      const handle = await server.hub.openPlan(`bench:${i}`);
      createPlan({ doc: handle.doc, actor: 'agent:bench' }).addMany(inputs);
      await handle.flush();
      handle.release();
    }
    const createS = (performance.now() - t0) / 1000;
    const loaded = memory();
    const loadedRooms = server.hub.roomCount;
    const unloadStart = performance.now();
    while (server.hub.roomCount > 0) await sleep(200);
    const unloadedAfterS = (performance.now() - unloadStart) / 1000;
    const idle = memory();
    // Reloading an unloaded plan: time to open it (loaded from disk) and release it, 50 plans.
    const reload: number[] = [];
    for (let i = 0; i < Math.min(50, plans); i++) {
      const r0 = performance.now();
      const handle = await server.hub.openPlan(`bench:${i}`);
      reload.push(performance.now() - r0);
      handle.release();
    }
    const reloadMs = summarize(reload);
    console.log(
      JSON.stringify({
        kind,
        plans,
        base,
        loaded,
        idle,
        createS,
        rooms: loadedRooms,
        unloadedAfterS,
        reloadMedianMs: reloadMs.median,
        reloadP99Ms: reloadMs.p99,
      }),
    );
  } finally {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
