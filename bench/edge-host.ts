// Benchmark 16: the Durable Object host (apps/cloudflare in the npm workerd) beside `cairn serve` under Node.
// Edit → seen with 50 clients in one plan; what 1,000 idle plans (one idle socket each) cost each host in memory
// and CPU; and how long a hibernated object takes to answer the first message that wakes it.
import * as fs from 'node:fs';
import { WebSocket } from 'ws';
import { type RunningWorkerd, startWorkerd } from '../apps/cloudflare/test/workerd.js';
import { crowdedPair, flipInTurns, type LatencyPair } from './lib/latency.js';
import { loadAverage } from './lib/machine.js';
import { bootstrapRatio, collectGarbage, now, progress, rng, summarize } from './lib/measure.js';
import { type BenchResult, bytes, cairnOnly, ms, type Row, speedup } from './lib/report.js';
import { type RunningServer, startServer } from './lib/servers.js';

type Host = 'node' | 'workerd';
const HOSTS: Host[] = ['node', 'workerd'];
const NAMES: Record<Host, string> = {
  node: '`cairn serve` under Node (disk store)',
  workerd: 'Durable Object host in workerd (SQLite)',
};
const CLIENTS = 50;
/** workerd evicts an object whose sockets have been idle for about 10 s. */
const HIBERNATE_MS = 13_000;

const sleep = (msDelay: number) => new Promise((r) => setTimeout(r, msDelay));

/** The example worker in workerd, open for local development, as a RunningServer of the shared helpers. */
async function startEdge(): Promise<RunningServer & { workerd: RunningWorkerd }> {
  const workerd = await startWorkerd({ vars: { CAIRN_DEV_OPEN: '1' } });
  const ticks = 100;
  return {
    kind: 'cairn', // the same wire: the shared clients treat it as Cairn's server
    pid: workerd.pid,
    wsBase: `ws://127.0.0.1:${workerd.port}/sync`,
    cpuSeconds() {
      const fields = readStat(workerd.pid);
      return (Number(fields[11]) + Number(fields[12])) / ticks;
    },
    rss: () => rssOf(workerd.pid),
    stop: () => workerd.dispose(),
    workerd,
  };
}

function readStat(pid: number): string[] {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

function rssOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  return m ? Number(m[1]) * 1024 : 0;
}

const start = (host: Host) => (host === 'node' ? startServer('cairn') : startEdge());

/** An idle socket on its own plan: connected and greeted, then silent. */
interface IdleSocket {
  ws: WebSocket;
  /** Sends an awareness query and resolves with the ms until the first message back. */
  poke(): Promise<number>;
}

async function openIdle(wsBase: string, plan: string): Promise<IdleSocket> {
  const ws = new WebSocket(`${wsBase}/${encodeURIComponent(plan)}`);
  let waiter: (() => void) | null = null;
  ws.on('message', () => {
    const w = waiter;
    waiter = null;
    w?.();
  });
  ws.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    waiter = resolve;
    ws.once('error', reject);
  });
  return {
    ws,
    poke() {
      const t0 = now();
      return new Promise<number>((resolve) => {
        waiter = () => resolve(now() - t0);
        ws.send(Uint8Array.of(3)); // QueryAwareness: every host answers it
      });
    },
  };
}

export async function run({
  quick,
}: {
  quick: boolean;
}): Promise<Omit<BenchResult, 'machine' | 'at' | 'seconds' | 'quick'>> {
  const rounds = quick ? 1 : 3;
  const edits = quick ? 40 : 150; // per host per round: a loaded machine makes each edit slow
  const warmup = quick ? 10 : 30;
  const idlePlans = quick ? 100 : 1_000;
  const wakeSamples = quick ? 10 : 50;
  const loadStart = loadAverage();

  // 1. Edit → seen, both hosts side by side, taking turns edit by edit.
  const pooled: Record<Host, number[]> = { node: [], workerd: [] };
  const random = rng(16);
  for (let round = 0; round < rounds; round++) {
    progress(`edit → seen, round ${round + 1} of ${rounds}`);
    const setups: LatencyPair<Host>[] = [];
    try {
      for (const host of HOSTS)
        setups.push(await crowdedPair(host, await start(host), 'cairn', 'edge-latency', CLIENTS));
      collectGarbage();
      await flipInTurns(setups, { warmup, edits, random, into: pooled });
    } finally {
      for (const setup of setups) await setup.stop();
    }
  }

  // 2 and 3. Idle plans, then the first message after the idle period (a wake on workerd).
  const idle: Record<Host, { rssBefore: number; rssConnected: number; rssIdle: number; cpuIdleS: number }> = {
    node: { rssBefore: 0, rssConnected: 0, rssIdle: 0, cpuIdleS: 0 },
    workerd: { rssBefore: 0, rssConnected: 0, rssIdle: 0, cpuIdleS: 0 },
  };
  const firstMessage: Record<Host, { afterIdle: number[]; warm: number[] }> = {
    node: { afterIdle: [], warm: [] },
    workerd: { afterIdle: [], warm: [] },
  };
  const servers: Record<string, RunningServer> = {};
  const sockets: Record<Host, IdleSocket[]> = { node: [], workerd: [] };
  try {
    for (const host of HOSTS) {
      servers[host] = await start(host);
      idle[host].rssBefore = servers[host]!.rss();
    }
    progress(`${idlePlans} idle plans on each host`);
    for (let i = 0; i < idlePlans; i++) {
      for (const host of HOSTS) sockets[host].push(await openIdle(servers[host]!.wsBase, `idle:${i}`));
    }
    const cpuAt: Record<string, number> = {};
    for (const host of HOSTS) {
      idle[host].rssConnected = servers[host]!.rss();
      cpuAt[host] = servers[host]!.cpuSeconds();
    }
    await sleep(HIBERNATE_MS); // deliberately idle: the time workerd takes to evict the objects
    for (const host of HOSTS) {
      idle[host].rssIdle = servers[host]!.rss();
      idle[host].cpuIdleS = servers[host]!.cpuSeconds() - cpuAt[host]!;
    }
    progress('first message after the idle period, then on a warm plan');
    for (let i = 0; i < wakeSamples; i++) {
      for (const host of HOSTS) {
        const socket = sockets[host][i]!;
        firstMessage[host].afterIdle.push(await socket.poke());
        firstMessage[host].warm.push(await socket.poke());
      }
    }
  } finally {
    for (const host of HOSTS) for (const s of sockets[host]) s.ws.terminate();
    for (const server of Object.values(servers)) await server.stop();
  }

  const n = summarize(pooled.node);
  const e = summarize(pooled.workerd);
  const p99Ratio = bootstrapRatio(pooled.workerd, pooled.node, 0.99);
  const medianRatio = bootstrapRatio(pooled.workerd, pooled.node, 0.5);
  const wake = summarize(firstMessage.workerd.afterIdle);
  const nodeAfterIdle = summarize(firstMessage.node.afterIdle);
  const warmEdge = summarize(firstMessage.workerd.warm);
  const perPlan = (host: Host) => (idle[host].rssIdle - idle[host].rssBefore) / idlePlans;
  const rows: Row[] = [
    {
      measure: `edit → seen by another agent, ${CLIENTS} clients in one plan: p50`,
      cairn: ms(e.median),
      baselineName: NAMES.node,
      baseline: ms(n.median),
      ratio: speedup(e.median, n.median),
      target: '',
      met: null,
    },
    {
      measure: `edit → seen by another agent, ${CLIENTS} clients in one plan: p99`,
      cairn: ms(e.p99),
      baselineName: NAMES.node,
      baseline: ms(n.p99),
      ratio: speedup(e.p99, n.p99),
      target: '',
      met: null,
    },
    {
      measure: `memory of ${idlePlans} idle plans (one idle socket each), after ${HIBERNATE_MS / 1000} s idle: RSS growth per plan`,
      cairn: bytes(Math.round(perPlan('workerd'))),
      baselineName: NAMES.node,
      baseline: bytes(Math.round(perPlan('node'))),
      ratio: '',
      target: '',
      met: null,
    },
    {
      measure: `CPU over ${HIBERNATE_MS / 1000} s with ${idlePlans} idle plans`,
      cairn: `${(idle.workerd.cpuIdleS * 1000).toFixed(0)} ms`,
      baselineName: NAMES.node,
      baseline: `${(idle.node.cpuIdleS * 1000).toFixed(0)} ms`,
      ratio: '',
      target: '',
      met: null,
    },
    {
      measure: `first message after ${HIBERNATE_MS / 1000} s idle (a wake on workerd): p50 / p99 of ${wakeSamples}`,
      cairn: `${ms(wake.median)} / ${ms(wake.p99)}`,
      baselineName: NAMES.node,
      baseline: `${ms(nodeAfterIdle.median)} / ${ms(nodeAfterIdle.p99)}`,
      ratio: speedup(wake.median, nodeAfterIdle.median),
      target: '',
      met: null,
    },
    cairnOnly('first message on a warm object (right after the wake): p50', ms(warmEdge.median)),
  ];
  return {
    id: 'edge-host',
    number: 16,
    title: 'The Durable Object host in workerd beside the Node host',
    method:
      `Both hosts on 127.0.0.1, each in its own process: \`cairn serve\` (built) and the example worker (apps/cloudflare, bundled ` +
      `from the sources) in the npm workerd with a persisted SQLite directory. Edit → seen: one plan, ${CLIENTS} y-websocket clients ` +
      `(${CLIENTS - 2} in a child process), a sender flips a task's status and the time runs until the observer sees it; the two hosts take ` +
      `turns edit by edit, ${edits} edits each per round after ${warmup} warm-up edits, ${rounds} rounds on fresh hosts, pooled. Idle: ` +
      `${idlePlans} plans per host, each with one raw socket that is greeted and then silent; RSS and CPU time of the host process ` +
      `(/proc) before, when connected and after ${HIBERNATE_MS / 1000} s idle (workerd evicts idle objects after about 10 s); then ` +
      `${wakeSamples} sockets per host each send an awareness query and the time to the first message back is taken, then again at once.`,
    rows,
    notes: [
      `The machine was shared and loaded: load average ${loadStart.toFixed(2)} at the start and ${loadAverage().toFixed(2)} at the end ` +
        '(2 cores). The figures compare the two hosts measured in the same minutes, not either host against a quiet machine.',
      `How sure the latency comparison is: the DO host's p99 over the Node host's, resampled 1,000 times from the pooled edits ` +
        `(bootstrap), lies between ${p99Ratio.low.toFixed(2)} and ${p99Ratio.high.toFixed(2)} in 90% of the resamples (median ratio: ` +
        `${medianRatio.low.toFixed(2)} to ${medianRatio.high.toFixed(2)}); below 1 is the DO host faster.`,
      `RSS (MiB) before / connected / after idle: Node ${mib(idle.node.rssBefore)} / ${mib(idle.node.rssConnected)} / ${mib(idle.node.rssIdle)}, ` +
        `workerd ${mib(idle.workerd.rssBefore)} / ${mib(idle.workerd.rssConnected)} / ${mib(idle.workerd.rssIdle)}. Local workerd runs every ` +
        'object in one process, so its RSS is the whole runtime, and it did not fall after the eviction (the wake times show the objects were ' +
        'evicted): the runtime keeps what its isolate once used. This row does not measure what a hibernated object costs on Cloudflare.',
      'The DO host acknowledges a write after `ctx.storage.sync()`; the Node host after an fsync. y-partyserver was not measured: it needs wrangler or miniflare, which need Node 22.',
    ],
  };
}

function mib(x: number): string {
  return (x / 2 ** 20).toFixed(0);
}
