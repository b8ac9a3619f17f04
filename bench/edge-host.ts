// Benchmark 16: the Durable Object host (apps/cloudflare in the npm workerd) beside `cairn serve` under Node.
// Edit → seen with 50 clients in one plan (and y-partyserver on the same workerd); what 1,000 plans written once and
// left idle, without and with a socket, cost each host in memory and CPU; and how long a hibernated object takes to answer the first message that wakes it.
import * as fs from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { type RunningWorkerd, startWorkerd } from '../apps/cloudflare/test/workerd.js';
import { crowdedPair, flipInTurns, type LatencyPair } from './lib/latency.js';
import { loadAverage } from './lib/machine.js';
import { bootstrapRatio, collectGarbage, now, progress, rng, summarize } from './lib/measure.js';
import {
  type BenchOptions,
  type BenchOutcome,
  bytes,
  cairnOnly,
  ms,
  type Row,
  speedup,
} from './lib/report.js';
import { makeRoom } from './lib/rooms.js';
import { type RunningServer, startServer } from './lib/servers.js';

type Host = 'node' | 'workerd';
/** The hosts of the edit → seen row: Cairn's two, and y-partyserver on the same workerd. */
type LatencyHost = Host | 'partyserver';
const HOSTS: Host[] = ['node', 'workerd'];
const LATENCY_HOSTS: LatencyHost[] = ['node', 'workerd', 'partyserver'];
const NAMES: Record<LatencyHost, string> = {
  node: '`cairn serve` under Node (disk store)',
  workerd: 'Durable Object host in workerd (SQLite)',
  partyserver: 'y-partyserver 2.2 in the same workerd (in memory)',
};
const PARTYSERVER_WORKER = join(dirname(fileURLToPath(import.meta.url)), 'baselines/y-partyserver-worker.ts');
const CLIENTS = 50;
/** workerd evicts an object whose sockets have been idle for about 10 s. */
const HIBERNATE_MS = 13_000;

const sleep = (msDelay: number) => new Promise((r) => setTimeout(r, msDelay));

/** The example worker in workerd, open for local development, as a RunningServer of the shared helpers. */
async function startEdge(): Promise<RunningServer & { workerd: RunningWorkerd }> {
  return asServer(await startWorkerd({ vars: { CAIRN_DEV_OPEN: '1' } }), 'cairn', '/sync');
}

/** y-partyserver's YServer in workerd: its rooms at /parties/y-plans/:room, the y-websocket wire. */
async function startPartyserver(): Promise<RunningServer> {
  const workerd = await startWorkerd({
    vars: {},
    worker: { entry: PARTYSERVER_WORKER, binding: 'YPlans', className: 'YPlans' },
  });
  const server = asServer(workerd, 'reference', '/parties/y-plans');
  // With y-partyserver's objects loaded, workerd did not exit on SIGTERM here: it is stopped with SIGKILL.
  return { ...server, stop: () => workerd.kill9().then(() => workerd.dispose()) };
}

/**
 * `kind`: the wire the shared clients speak to it (Cairn's, or y-websocket's as the reference server speaks it).
 */
function asServer(
  workerd: RunningWorkerd,
  kind: 'cairn' | 'reference',
  path: string,
): RunningServer & { workerd: RunningWorkerd } {
  const ticks = 100;
  return {
    kind,
    pid: workerd.pid,
    wsBase: `ws://127.0.0.1:${workerd.port}${path}`,
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

const start = (host: LatencyHost): Promise<RunningServer> =>
  host === 'node' ? startServer('cairn') : host === 'workerd' ? startEdge() : startPartyserver();

/** A y-websocket sync message carrying `update` (messageSync, then messageYjsUpdate, then the update's length). */
function updateMessage(update: Uint8Array): Uint8Array {
  const length: number[] = [];
  let n = update.length;
  while (n > 0x7f) {
    length.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  length.push(n);
  return Uint8Array.from([0, 2, ...length, ...update]);
}

/** An idle socket on its own plan: connected and greeted, then silent. */
interface IdleSocket {
  ws: WebSocket;
  /** Sends an awareness query and resolves with the ms until the first message back. */
  poke(): Promise<number>;
  /** Writes `update` into the plan; resolves when the host has answered a query sent after it. */
  write(update: Uint8Array): Promise<void>;
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
  const socket: IdleSocket = {
    ws,
    poke() {
      const t0 = now();
      return new Promise<number>((resolve) => {
        waiter = () => resolve(now() - t0);
        ws.send(Uint8Array.of(3)); // QueryAwareness: every host answers it
      });
    },
    async write(update) {
      ws.send(updateMessage(update));
      await socket.poke(); // a socket's messages are handled in order
    },
  };
  return socket;
}

export async function run({ quick }: BenchOptions): Promise<BenchOutcome> {
  const rounds = quick ? 1 : 2; // three hosts in turns: two rounds keep the run to a few minutes
  const edits = quick ? 40 : 100; // per host per round: a loaded machine makes each edit slow
  const warmup = quick ? 10 : 30;
  const idlePlans = quick ? 100 : 1_000;
  const wakeSamples = quick ? 10 : 50;
  const loadStart = loadAverage();

  // 1. Edit → seen, the three hosts side by side, taking turns edit by edit.
  const pooled: Record<LatencyHost, number[]> = { node: [], workerd: [], partyserver: [] };
  const random = rng(16);
  for (let round = 0; round < rounds; round++) {
    progress(`edit → seen, round ${round + 1} of ${rounds}`);
    const setups: LatencyPair<LatencyHost>[] = [];
    try {
      for (const host of LATENCY_HOSTS) {
        const server = await start(host);
        setups.push(await crowdedPair(host, server, server.kind, 'edge-latency', CLIENTS));
      }
      collectGarbage();
      await flipInTurns(setups, { warmup, edits, random, into: pooled });
    } finally {
      for (const setup of setups) await setup.stop();
    }
  }

  // 2 and 3. Plans written once and left idle, first without a socket, then with one; then the first message
  // after the idle period (a wake on workerd).
  type Idle = { rss: number; cpuS: number };
  const idle: Record<Host, { before: number; closed: Idle; open: Idle }> = {
    node: { before: 0, closed: { rss: 0, cpuS: 0 }, open: { rss: 0, cpuS: 0 } },
    workerd: { before: 0, closed: { rss: 0, cpuS: 0 }, open: { rss: 0, cpuS: 0 } },
  };
  const firstMessage: Record<Host, { afterIdle: number[]; warm: number[] }> = {
    node: { afterIdle: [], warm: [] },
    workerd: { afterIdle: [], warm: [] },
  };
  const plan = makeRoom('idle', 1).state; // a real plan of one task, written once into each idle plan
  const servers: Record<string, RunningServer> = {};
  const sockets: Record<Host, IdleSocket[]> = { node: [], workerd: [] };
  const idleFor = async (phase: 'closed' | 'open') => {
    const cpuAt: Record<string, number> = {};
    for (const host of HOSTS) cpuAt[host] = servers[host]!.cpuSeconds();
    await sleep(HIBERNATE_MS); // deliberately idle: the time workerd takes to evict the objects
    for (const host of HOSTS)
      idle[host][phase] = { rss: servers[host]!.rss(), cpuS: servers[host]!.cpuSeconds() - cpuAt[host]! };
  };
  try {
    for (const host of HOSTS) {
      servers[host] = await start(host);
      idle[host].before = servers[host]!.rss();
    }
    progress(`${idlePlans} plans written and closed on each host`);
    for (let i = 0; i < idlePlans; i++) {
      for (const host of HOSTS) {
        const socket = await openIdle(servers[host]!.wsBase, `closed:${i}`);
        await socket.write(plan);
        socket.ws.close();
      }
    }
    await idleFor('closed');
    progress(`${idlePlans} plans written, each with a socket left open, on each host`);
    for (let i = 0; i < idlePlans; i++) {
      for (const host of HOSTS) {
        const socket = await openIdle(servers[host]!.wsBase, `open:${i}`);
        await socket.write(plan);
        sockets[host].push(socket);
      }
    }
    await idleFor('open');
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
  const y = summarize(pooled.partyserver);
  const p99Ratio = bootstrapRatio(pooled.workerd, pooled.node, 0.99);
  const medianRatio = bootstrapRatio(pooled.workerd, pooled.node, 0.5);
  const p99RatioParty = bootstrapRatio(pooled.workerd, pooled.partyserver, 0.99);
  const wake = summarize(firstMessage.workerd.afterIdle);
  const nodeAfterIdle = summarize(firstMessage.node.afterIdle);
  const warmEdge = summarize(firstMessage.workerd.warm);
  /** RSS growth per plan: the closed plans over the fresh host, the plans with a socket over the closed ones. */
  const perPlan = (host: Host, phase: 'closed' | 'open') =>
    bytes(
      Math.round(
        (idle[host][phase].rss - (phase === 'closed' ? idle[host].before : idle[host].closed.rss)) /
          idlePlans,
      ),
    );
  const cpu = (host: Host, phase: 'closed' | 'open') => `${(idle[host][phase].cpuS * 1000).toFixed(0)} ms`;
  const latencyRows = (what: 'p50' | 'p99', pick: (x: ReturnType<typeof summarize>) => number): Row[] =>
    (['node', 'partyserver'] as const).map((baseline) => ({
      measure: `edit → seen by another agent, ${CLIENTS} clients in one plan: ${what}`,
      cairn: ms(pick(e)),
      baselineName: NAMES[baseline],
      baseline: ms(pick(baseline === 'node' ? n : y)),
      ratio: speedup(pick(e), pick(baseline === 'node' ? n : y)),
      target: '',
      met: null,
    }));
  const idleRow = (measure: string, value: (host: Host) => string): Row => ({
    measure,
    cairn: value('workerd'),
    baselineName: NAMES.node,
    baseline: value('node'),
    ratio: '',
    target: '',
    met: null,
  });
  const idleS = HIBERNATE_MS / 1000;
  const rows: Row[] = [
    ...latencyRows('p50', (x) => x.median),
    ...latencyRows('p99', (x) => x.p99),
    idleRow(
      `${idlePlans} plans written once, socket closed, after ${idleS} s idle: RSS growth per plan`,
      (h) => perPlan(h, 'closed'),
    ),
    idleRow(`CPU over those ${idleS} s idle (${idlePlans} plans, no socket)`, (h) => cpu(h, 'closed')),
    idleRow(
      `${idlePlans} more plans written once, each socket left open, after ${idleS} s idle: RSS growth per plan`,
      (h) => perPlan(h, 'open'),
    ),
    idleRow(`CPU over those ${idleS} s idle (${idlePlans} open sockets, ${2 * idlePlans} plans)`, (h) =>
      cpu(h, 'open'),
    ),
    {
      measure: `first message after ${idleS} s idle (a wake on workerd): p50 / p99 of ${wakeSamples}`,
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
      `(${CLIENTS - 2} in a child process), a sender flips a task's status and the time runs until the observer sees it; the three hosts take ` +
      `turns edit by edit, ${edits} edits each per round after ${warmup} warm-up edits, ${rounds} rounds on fresh hosts, pooled. ` +
      `y-partyserver (its YServer as its README deploys it, in memory, bundled like the example worker) runs in the same workerd ` +
      `binary without wrangler, a third host in the same turns; its clients are y-websocket's provider, whose wire it speaks. Idle: ` +
      `${idlePlans} plans per host, each written once (a plan of one task, as a y-websocket update over a raw socket, answered) and ` +
      `the socket closed; ${HIBERNATE_MS / 1000} s idle; then ${idlePlans} more, each socket left open and silent; ${HIBERNATE_MS / 1000} s idle. ` +
      `RSS and CPU time of the host process (/proc) after each idle period (workerd evicts idle objects after about 10 s); then ` +
      `${wakeSamples} sockets per host each send an awareness query and the time to the first message back is taken, then again at once.`,
    rows,
    notes: [
      `The machine was shared and loaded: load average ${loadStart.toFixed(2)} at the start and ${loadAverage().toFixed(2)} at the end ` +
        '(2 cores). The figures compare the two hosts measured in the same minutes, not either host against a quiet machine.',
      `How sure the latency comparison is: the DO host's p99 over the Node host's, resampled 1,000 times from the pooled edits ` +
        `(bootstrap), lies between ${p99Ratio.low.toFixed(2)} and ${p99Ratio.high.toFixed(2)} in 90% of the resamples (median ratio: ` +
        `${medianRatio.low.toFixed(2)} to ${medianRatio.high.toFixed(2)}); below 1 is the DO host faster.`,
      `The DO host's p99 over y-partyserver's: ${p99RatioParty.low.toFixed(2)} to ${p99RatioParty.high.toFixed(2)} (90% bootstrap interval). ` +
        "y-partyserver keeps the document in the object's memory and writes nothing: it does less per edit than either Cairn host.",
      `RSS (MiB) fresh / ${idlePlans} closed plans idle / and ${idlePlans} open plans idle: Node ${mib(idle.node.before)} / ` +
        `${mib(idle.node.closed.rss)} / ${mib(idle.node.open.rss)}, workerd ${mib(idle.workerd.before)} / ${mib(idle.workerd.closed.rss)} / ` +
        `${mib(idle.workerd.open.rss)}. The Node host still holds every plan it touched in these seconds (it unloads a plan after 60 s idle, ` +
        'benchmark 15). Local workerd runs every object in one process, so its RSS is the whole runtime, and it does not fall after the ' +
        'eviction (the wake times show the objects were evicted): the runtime keeps what its isolate once used. On Cloudflare a hibernated ' +
        'object holds no memory that is billed or counted against the host; these rows do not measure that, only what local workerd keeps.',
      'The DO host acknowledges a write after `ctx.storage.sync()`; the Node host after an fsync.',
      'The memory of a hibernated object cannot be measured in local workerd: its RSS does not fall after the eviction. ' +
        'What Cloudflare documents instead is what an idle object costs: hibernation removes an object that runs no handler from ' +
        'memory while its WebSockets stay connected (developers.cloudflare.com/durable-objects/api/websockets/), and duration ' +
        '(GB-s, at 128 MB per object) is billed only while an object runs or is idle in memory and unable to hibernate; one idle ' +
        'and eligible to hibernate is not billed for duration, even before it is hibernated ' +
        '(developers.cloudflare.com/durable-objects/platform/pricing/).',
    ],
  };
}

function mib(x: number): string {
  return (x / 2 ** 20).toFixed(0);
}
