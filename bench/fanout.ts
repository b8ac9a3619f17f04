// Benchmark 5: server fan-out. 200 clients across 20 rooms, each writing 5 plan edits a second for 60 s, held by
// two child processes; the server in its own process. Sustained updates in and out per second, edit-to-replica
// latency (p50, p99), server memory per room and CPU, for Cairn's server and the reference y-websocket server.
// At the end every replica must hold every writer's last edit: no update lost.
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import * as Y from 'yjs';
import type { FromChild } from './lib/client-process.js';
import { wallMs } from './lib/clients.js';
import { writeFresh, writeHistory } from './lib/history.js';
import { progress, summarize } from './lib/measure.js';
import { memoryPerPlan } from './lib/plan-memory.js';
import { shares, summarizeProfileFile, topSelf } from './lib/profile.js';
import {
  type BenchResult,
  bytes,
  count,
  ms,
  type Row,
  sizeRatio,
  speedup,
  throughputRatio,
} from './lib/report.js';
import { type ClientProcess, makeRoom, type Room, seedRooms, spawnClients } from './lib/rooms.js';
import {
  type RunningServer,
  SERVER_NAMES,
  type ServerKind,
  startServer,
  treeCpuSeconds,
} from './lib/servers.js';

process.setMaxListeners(0);

export interface FanoutResult {
  sentPerS: number;
  deliveredPerS: number;
  expectedDeliveries: number;
  delivered: number;
  latency: ReturnType<typeof summarize>;
  /** Every edit → replica latency measured (ms), for intervals across runs. */
  samples: number[];
  /**
   * The same latencies split where each client process was half-way through its deliveries (each receives them in
   * time order at a steady rate): the measured part's first half and second half, to see whether it was steady.
   */
  halves: [number[], number[]];
  /** The latencies of the edits sent during the warm-up (ms; none without one). */
  warmupSamples: number[];
  cpuPercent: number;
  /** CPU of each server process (one entry unless the load was spread over a cluster's instances). */
  cpuPerServer: number[];
  /** CPU of the cluster's services over the same window (`cluster.services`), each with its child processes. */
  cpuPerService: Record<string, number>;
  rssPerRoom: number;
  rssPeak: number;
  lost: number;
  checkedReplicas: number;
  drainS: number;
  /** A Cairn cluster's two halves of the way between instances, from the instances' /metrics at the end. */
  stages?: Record<ClusterStage, StageFigures>;
}

type ClusterStage = 'publish' | 'relay';

/** From a histogram summed over the instances: its mean, and the bucket bound its 99th percentile is under. */
export interface StageFigures {
  count: number;
  meanMs: number;
  p99AtMostMs: number;
}

/** `cairn_cluster_<stage>_seconds` summed over the instances' /metrics texts. */
/** A histogram summed over the instances' /metrics texts: cumulative bucket counts by bound, sum and count. */
function histogramOf(texts: string[], name: string) {
  const buckets = new Map<number, number>();
  let sum = 0;
  let count = 0;
  for (const text of texts)
    for (const line of text.split('\n')) {
      const [key, value] = line.split(' ');
      const n = Number(value);
      const le = new RegExp(`^${name}_bucket\\{le="([^"]+)"\\}$`).exec(key ?? '')?.[1];
      if (le !== undefined) {
        const bound = le === '+Inf' ? Infinity : Number(le);
        buckets.set(bound, (buckets.get(bound) ?? 0) + n);
      } else if (key === `${name}_sum`) sum += n;
      else if (key === `${name}_count`) count += n;
    }
  return { buckets, sum, count };
}

/** A stage's figures between two scrapes of every instance (`before` empty: since they started). */
function stageFigures(before: string[], after: string[], stage: ClusterStage): StageFigures {
  const name = `cairn_cluster_${stage}_seconds`;
  const from = histogramOf(before, name);
  const to = histogramOf(after, name);
  const count = to.count - from.count;
  const sum = to.sum - from.sum;
  const bound = [...to.buckets]
    .map(([le, below]) => [le, below - (from.buckets.get(le) ?? 0)] as const)
    .sort((x, y) => x[0] - y[0])
    .find(([, below]) => below >= count * 0.99)?.[0];
  return { count, meanMs: count > 0 ? (sum / count) * 1000 : 0, p99AtMostMs: (bound ?? Number.NaN) * 1000 };
}

const sleep = (msDelay: number) => new Promise((r) => setTimeout(r, msDelay));

/**
 * `cluster`: three Cairn instances on these services instead of one server, each room's clients spread over them
 * (one client process per instance); memory is then the first instance's.
 */
export async function measure(
  kind: ServerKind,
  rooms: number,
  perRoom: number,
  durationMs: number,
  rate: number,
  options: {
    /** Run the servers under --cpu-prof, writing the profiles there. */
    cpuProfileDir?: string;
    /** Three instances on these services instead of one server. */
    cluster?: { redis: string; postgres: string; services?: Record<string, number> };
    /** The same load this long before the measured part; its latencies are reported apart (`warmup`). */
    warmupMs?: number;
    /**
     * Three client processes holding every room's clients i with i % 3 == their index, as a cluster's are, also for
     * one server (whose clients otherwise sit in two processes, half the rooms each).
     */
    clientsAsCluster?: boolean;
  } = {},
): Promise<FanoutResult> {
  const { cpuProfileDir, cluster, warmupMs = 0, clientsAsCluster = false } = options;
  const profiled = cpuProfileDir ? { cpuProfileDir } : {};
  const servers: RunningServer[] = cluster
    ? await Promise.all([0, 1, 2].map(() => startServer(kind, { cluster, ...profiled })))
    : [await startServer(kind, profiled)];
  const server = servers[0]!;
  const procs: ClientProcess[] = [];
  let releaseSeeders: () => void = () => undefined;
  try {
    await sleep(500);
    const rssBase = server.rss();
    const all: Room[] = Array.from({ length: rooms }, (_, i) => makeRoom(`room${i}`, perRoom));
    releaseSeeders = await seedRooms(server, all);
    if (cluster || clientsAsCluster) {
      // Three client processes (in a cluster, one per instance), each holding every room's clients i with
      // i % 3 == its index.
      for (const k of [0, 1, 2])
        procs.push(
          await spawnClients(servers[k] ?? server, all, (r) => r.clients.filter((_, i) => i % 3 === k)),
        );
    } else {
      // Two client processes, half the rooms each.
      for (const part of [all.slice(0, rooms / 2), all.slice(rooms / 2)])
        procs.push(await spawnClients(server, part));
    }
    await Promise.all(procs.map((p) => p.next('ready')));
    const services = Object.entries(cluster?.services ?? {});
    let rssPeak = server.rss();
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, server.rss());
    }, 500);
    const scrapeAll = () =>
      Promise.all(
        servers.map(async (s) =>
          (await fetch(`${s.wsBase.replace(/^ws/, 'http').replace(/\/sync$/, '')}/metrics`)).text(),
        ),
      );
    const clusterStages = cluster && kind === 'cairn';
    // The first scrape of an instance sets up Node's process metrics (some 25 ms of work): done before the load.
    if (clusterStages) await scrapeAll();
    const done = procs.map((p) => p.next('done', warmupMs + durationMs + 120_000));
    // One start of the measured part for every process: an edit is measured or warm-up alike for all its replicas.
    const measuredFrom = wallMs() + warmupMs;
    for (const p of procs) p.send({ type: 'start', durationMs, ratePerClient: rate, warmupMs, measuredFrom });
    // CPU and the cluster's stage times are counted over the measured part only.
    if (warmupMs > 0) await sleep(warmupMs);
    const metricsBefore = clusterStages && warmupMs > 0 ? await scrapeAll() : [];
    const cpu0 = servers.map((s) => s.cpuSeconds());
    const serviceCpu0 = services.map(([, pid]) => treeCpuSeconds(pid));
    const t0 = performance.now();
    const reports = await Promise.all(done);
    const elapsedS = (performance.now() - t0) / 1000;
    const cpuPerServer = servers.map((s, i) => ((s.cpuSeconds() - cpu0[i]!) / elapsedS) * 100);
    const cpuPercent = cpuPerServer.reduce((a, b) => a + b, 0);
    const cpuPerService = Object.fromEntries(
      services.map(([name, pid], i) => [name, ((treeCpuSeconds(pid) - serviceCpu0[i]!) / elapsedS) * 100]),
    );
    // Drain: ask every replica what it holds until each has every writer's last edit (or 30 s pass).
    const sent: Record<string, number> = Object.assign({}, ...reports.map((r) => r.sent));
    const d0 = performance.now();
    let lost = 0;
    let checked = 0;
    // The last digests carry the latencies: every delivery that arrived by the end of the drain is in them.
    let digests: Extract<FromChild, { type: 'digest' }>[] = [];
    for (;;) {
      digests = await Promise.all(
        procs.map((p) => {
          const next = p.next('digest');
          p.send({ type: 'check' });
          return next;
        }),
      );
      lost = 0;
      checked = 0;
      for (const d of digests)
        for (const view of d.views) {
          checked++;
          for (const [taskId, seq] of Object.entries(sent)) {
            if (!taskId || !(taskId in view.seqs)) continue; // another room's writer
            if (view.seqs[taskId] !== seq) lost++;
          }
        }
      if (lost === 0 || performance.now() - d0 > 30_000) break;
      await sleep(200);
    }
    clearInterval(sampler);
    rssPeak = Math.max(rssPeak, server.rss());
    let stages: FanoutResult['stages'];
    if (clusterStages) {
      const metricsAfter = await scrapeAll();
      stages = {
        publish: stageFigures(metricsBefore, metricsAfter, 'publish'),
        relay: stageFigures(metricsBefore, metricsAfter, 'relay'),
      };
    }
    const float64s = (base64: string) => {
      const buf = Buffer.from(base64, 'base64');
      return [...new Float64Array(buf.buffer, buf.byteOffset, buf.byteLength / 8)];
    };
    const perProcess = digests.map((r) => float64s(r.latencies));
    const latencies = perProcess.flat();
    const halves: [number[], number[]] = [
      perProcess.flatMap((xs) => xs.slice(0, xs.length >> 1)),
      perProcess.flatMap((xs) => xs.slice(xs.length >> 1)),
    ];
    const warmupSamples = digests.flatMap((r) => float64s(r.warmup));
    const delivered = digests.reduce((n, r) => n + r.received, 0);
    const totalSent = reports.reduce((n, r) => n + r.measuredEdits, 0);
    return {
      sentPerS: totalSent / (durationMs / 1000),
      deliveredPerS: delivered / (durationMs / 1000),
      expectedDeliveries: totalSent * (perRoom - 1),
      delivered,
      latency: summarize(latencies),
      samples: latencies,
      halves,
      warmupSamples,
      cpuPercent,
      cpuPerServer,
      cpuPerService,
      rssPerRoom: (rssPeak - rssBase) / rooms,
      rssPeak,
      lost,
      checkedReplicas: checked,
      drainS: (performance.now() - d0) / 1000,
      ...(stages ? { stages } : {}),
    };
  } finally {
    for (const p of procs) await p.stop();
    releaseSeeders();
    await Promise.all(servers.map((s) => s.stop()));
  }
}

/** The fan-out load: rooms × clients per room, each client editing this many times a second, for this long. */
export const FANOUT_LOAD = {
  ROOMS: 20,
  PER_ROOM: 10,
  RATE: 5,
  durationMs: (quick: boolean) => (quick ? 6_000 : 60_000),
} as const;

export async function run({
  quick,
}: {
  quick: boolean;
}): Promise<Omit<BenchResult, 'machine' | 'at' | 'seconds' | 'quick'>> {
  const { ROOMS, PER_ROOM, RATE } = FANOUT_LOAD;
  const durationMs = FANOUT_LOAD.durationMs(quick);
  const res = {} as Record<'cairn' | 'reference', FanoutResult>;
  for (const kind of ['reference', 'cairn'] as const) {
    progress(SERVER_NAMES[kind]);
    res[kind] = await measure(kind, ROOMS, PER_ROOM, durationMs, RATE);
  }
  // Where Cairn's server spends its CPU: a separate, shorter run under --cpu-prof (so the profiler's own cost is
  // not in the figures above).
  let serverProfile = '';
  if (!quick) {
    progress('Cairn server, profiled');
    const dir = fs.mkdtempSync(join(os.tmpdir(), 'cairn-bench-prof-'));
    try {
      await measure('cairn', ROOMS, PER_ROOM, 10_000, RATE, { cpuProfileDir: dir });
      // The main thread's profile is the largest (tsx's loader thread writes a small one too).
      const file = fs
        .readdirSync(dir)
        .filter((f) => f.endsWith('.cpuprofile'))
        .sort((a, b) => fs.statSync(join(dir, b)).size - fs.statSync(join(dir, a)).size)[0];
      if (file) {
        const summary = summarizeProfileFile(join(dir, file));
        serverProfile =
          `Profile of Cairn's server over a 10 s run of the same load: ${shares(summary, ['handleMessage', 'applyUpdate', 'onUpdate', 'append', 'writePending', 'send', 'writeSync', 'fsync', 'inc'])}; ` +
          `top by self time: ${topSelf(summary, 8)}.`;
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  // Memory per open plan: a small plan, a plan with a long history, and the same content written fresh.
  const HISTORY = quick ? 5_000 : 100_000;
  const small = planState((doc) => writeFresh(doc, 30, 0));
  const fresh = planState((doc) => writeFresh(doc, 100, HISTORY));
  const history = planState((doc) => writeHistory(doc, { tasks: 100, updates: HISTORY }));
  // At scale: with 20 plans the row measured when garbage was collected more than the plans themselves.
  const SMALL_PLANS = quick ? 5 : 600;
  const readings = quick ? 2 : 10;
  const HISTORY_PLANS = quick ? 2 : 4;
  const memory = {} as Record<'cairn' | 'reference', { small: number; fresh: number; history: number }>;
  for (const kind of ['reference', 'cairn'] as const) {
    progress(`${SERVER_NAMES[kind]}: memory per open plan`);
    memory[kind] = {
      small: await memoryPerPlan(kind, await small, 30, SMALL_PLANS, readings),
      fresh: await memoryPerPlan(kind, await fresh, 100, SMALL_PLANS, readings),
      history: await memoryPerPlan(kind, await history, 100, HISTORY_PLANS, readings),
    };
  }
  const historyShare = (m: { fresh: number; history: number }) =>
    `${(((m.history - m.fresh) / m.history) * 100).toFixed(0)}%`;
  const c = res.cairn;
  const r = res.reference;
  const offered = ROOMS * PER_ROOM * RATE;
  const rows: Row[] = [
    {
      measure: `updates in per second (offered: ${offered.toLocaleString('en-US')}/s)`,
      cairn: count(c.sentPerS, '/s'),
      baselineName: SERVER_NAMES.reference,
      baseline: count(r.sentPerS, '/s'),
      ratio: throughputRatio(c.sentPerS, r.sentPerS),
      target: '',
      met: null,
    },
    {
      measure: `updates delivered to replicas per second (each edit to the 9 others in its room)`,
      cairn: count(c.deliveredPerS, '/s'),
      baselineName: SERVER_NAMES.reference,
      baseline: count(r.deliveredPerS, '/s'),
      ratio: throughputRatio(c.deliveredPerS, r.deliveredPerS),
      target: '',
      met: null,
    },
    {
      measure: 'edit → replica latency, p50 / p99',
      cairn: `${ms(c.latency.median)} / ${ms(c.latency.p99)}`,
      baselineName: SERVER_NAMES.reference,
      baseline: `${ms(r.latency.median)} / ${ms(r.latency.p99)}`,
      ratio: speedup(c.latency.p99, r.latency.p99),
      target: 'p99 no worse than the reference',
      met: c.latency.p99 <= r.latency.p99,
    },
    {
      measure: 'server memory per room (peak RSS growth / rooms)',
      cairn: bytes(c.rssPerRoom),
      baselineName: SERVER_NAMES.reference,
      baseline: bytes(r.rssPerRoom),
      ratio: '',
      target: '',
      met: null,
    },
    {
      measure: 'server CPU during the run (% of one core)',
      cairn: `${c.cpuPercent.toFixed(1)}%`,
      baselineName: SERVER_NAMES.reference,
      baseline: `${r.cpuPercent.toFixed(1)}%`,
      ratio: `${(c.cpuPercent / r.cpuPercent).toFixed(2)}x the reference`,
      target: 'within 1.25x of the reference',
      met: c.cpuPercent <= 1.25 * r.cpuPercent,
    },
    {
      measure: `memory per open plan: 30 tasks, no history (${SMALL_PLANS} plans open, RSS growth / plans)`,
      cairn: bytes(memory.cairn.small),
      baselineName: SERVER_NAMES.reference,
      baseline: bytes(memory.reference.small),
      ratio: sizeRatio(memory.cairn.small, memory.reference.small),
      target: '',
      met: null,
    },
    {
      measure: `memory per open plan: 100 tasks after ${HISTORY.toLocaleString('en-US')} status changes (${HISTORY_PLANS} plans open)`,
      cairn: bytes(memory.cairn.history),
      baselineName: SERVER_NAMES.reference,
      baseline: bytes(memory.reference.history),
      ratio: sizeRatio(memory.cairn.history, memory.reference.history),
      target: '',
      met: null,
    },
    {
      measure: `memory per open plan: the same 100 tasks written fresh, no history (${SMALL_PLANS} plans open)`,
      cairn: bytes(memory.cairn.fresh),
      baselineName: SERVER_NAMES.reference,
      baseline: bytes(memory.reference.fresh),
      ratio: sizeRatio(memory.cairn.fresh, memory.reference.fresh),
      target: '',
      met: null,
    },
    {
      measure: `no update lost: every writer's last edit in every replica (${c.checkedReplicas} replicas)`,
      cairn: c.lost === 0 ? 'none lost' : `${c.lost} missing`,
      baselineName: SERVER_NAMES.reference,
      baseline: r.lost === 0 ? 'none lost' : `${r.lost} missing`,
      ratio: '',
      target: 'none lost',
      met: c.lost === 0,
    },
  ];
  return {
    id: 'fanout',
    number: 5,
    title: 'Server fan-out',
    method:
      `${ROOMS} rooms of ${PER_ROOM} clients (y-websocket 3.1 clients in two child processes), each client editing its own task ` +
      `${RATE} times a second (status, updatedBy, updatedAt and a context counter in one transaction, as Plan.update writes them) for ` +
      `${durationMs / 1000} s, at a random phase. Latency is from the edit (its updatedAt, wall clock) to each replica's observer. ` +
      'Memory is the server process RSS at its peak during the run minus before any room was opened, per room. CPU is user + system time of the server process over the run.',
    rows,
    notes: [
      `Deliveries: Cairn ${c.delivered.toLocaleString('en-US')} of ${c.expectedDeliveries.toLocaleString('en-US')} edits×replicas counted during the run ` +
        `(reference ${r.delivered.toLocaleString('en-US')} of ${r.expectedDeliveries.toLocaleString('en-US')}); replicas converged ${c.drainS.toFixed(1)} s (Cairn) and ${r.drainS.toFixed(1)} s (reference) after the last edit.`,
      `Peak server RSS: Cairn ${bytes(c.rssPeak)}, reference ${bytes(r.rssPeak)}. Cairn's server writes every update to its disk log (the updates of one event-loop turn together, after they were relayed; fsynced within 1 s, and before every acknowledgement); the reference keeps documents in memory.`,
      "Clients, server and the measuring process share the same 2 cores, so the clients' own work is in every latency.",
      `Memory per open plan: each plan written by a y-websocket client that stays connected (so both servers keep it loaded), on a fresh server ` +
        `process, the lowest of ten RSS readings 300 ms apart after the last plan minus the same before the first, divided by the plans. ` +
        `History dominates the long-lived plan: of its memory, ${historyShare(memory.cairn)} (Cairn) and ${historyShare(memory.reference)} (reference) ` +
        `is what the ${HISTORY.toLocaleString('en-US')} changes add to the same content written fresh (${(memory.cairn.history / memory.cairn.fresh).toFixed(0)}x and ` +
        `${(memory.reference.history / memory.reference.fresh).toFixed(0)}x the fresh plan): Yjs keeps one struct per value ever written (decisions/010). ` +
        "Cairn's server unloads a plan nobody has used for 30 s (its updates flushed first), which the reference server without persistence never does.",
      ...(serverProfile ? [serverProfile] : []),
    ],
  };
}

/** The encoded state of a plan written by `write` into a fresh doc. */
async function planState(write: (doc: Y.Doc) => unknown): Promise<Uint8Array> {
  const doc = new Y.Doc();
  await write(doc);
  const state = Y.encodeStateAsUpdate(doc);
  doc.destroy();
  return state;
}
