// Benchmark 13: rows written per edit and PostgreSQL's CPU on a three-instance cluster, each update stored once
// (now) against every instance storing every update it relays (the behaviour before decision 030, reproduced by
// an extension that also stores what arrives from Redis). Runs interleave the two, on one redis-server and one
// PostgreSQL; the ratio's interval is a bootstrap over the runs.
import { readdirSync, readFileSync } from 'node:fs';
import { connectPlan } from '@cairn/core/websocket';
import { WebSocket } from 'ws';
import * as Y from 'yjs';
import { connectCluster } from '../packages/server/src/cluster/index.js';
import type { Extension } from '../packages/server/src/hub/extension.js';
import { createCairnServer, silentLogger } from '../packages/server/src/index.js';
import { startPostgres, startRedis } from '../packages/server/test/services.js';
import { progress } from './lib/measure.js';
import type { BenchOptions, BenchOutcome, Row } from './lib/report.js';

process.setMaxListeners(0);

const EDITS_PER_CLIENT = 1_000;
const CLIENTS = 3;
const TICKS_PER_S = 100;

/** CPU seconds (user + system) of the PostgreSQL listening on `port`: the postmaster, its exited and live backends. */
function postgresCpuSeconds(port: number): number {
  const stat = (pid: string) => {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  };
  const pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  const postmaster = pids.find((pid) => {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      return args[0]?.endsWith('/postgres') && args[args.indexOf('-p') + 1] === String(port);
    } catch {
      return false;
    }
  });
  if (!postmaster) throw new Error(`no postgres on port ${port}`);
  // Fields after the name: state ppid ... utime(12) stime(13) cutime(14) cstime(15), 0-based from the state.
  const own = stat(postmaster).map(Number);
  let ticks = own[11]! + own[12]! + own[13]! + own[14]!;
  for (const pid of pids) {
    try {
      const fields = stat(pid);
      if (fields[1] === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
    } catch {}
  }
  return ticks / TICKS_PER_S;
}

/**
 * Stores every update the relay brings in, as each instance did before: what this benchmark compares against. The
 * relay now applies the entries of one read in one transaction (decision 063), whose change an extension sees
 * once, so each update is taken where the relay hands it to the room, as the relay of that time applied them.
 * Its priority is above the relay's, so the room is wrapped before the relay hands it anything.
 */
const storeRelayed = (append: (planId: string, update: Uint8Array) => void) => (): Extension => ({
  name: 'store-relayed',
  priority: 600,
  loaded(room) {
    const applyRemote = room.applyRemote.bind(room);
    room.applyRemote = (updates, via, stored) => {
      for (const update of updates instanceof Uint8Array ? [updates] : updates) append(room.planId, update);
      applyRemote(updates, via, stored);
    };
  },
});

interface RunResult {
  edits: number;
  rows: number;
  cpuS: number;
}

async function runOnce(
  services: { redisUrl: string; postgresUrl: string; postgresPort: number },
  storeRelayedToo: boolean,
  planId: string,
  editsPerClient: number,
): Promise<RunResult> {
  const instances = await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      const cluster = await connectCluster({
        redisUrl: services.redisUrl,
        postgresUrl: services.postgresUrl,
      });
      const extensions = storeRelayedToo
        ? [...cluster.serverOptions.extensions, storeRelayed((p, u) => cluster.store.append(p, u))]
        : cluster.serverOptions.extensions;
      const server = createCairnServer({ ...cluster.serverOptions, extensions, logger: silentLogger });
      const { port } = await server.listen(0, '127.0.0.1');
      return { cluster, server, url: `ws://127.0.0.1:${port}` };
    }),
  );
  try {
    const docs = instances.map(() => new Y.Doc());
    const conns = instances.map((i, n) =>
      connectPlan(docs[n]!, { url: i.url, planId, WebSocketPolyfill: WebSocket }),
    );
    await Promise.all(conns.map((c) => c.whenSynced(30_000)));
    const cpuBefore = postgresCpuSeconds(services.postgresPort);
    // Each client edits its own tasks' fields and titles, ten edits a tick, as agents and people do.
    for (let n = 0; n < editsPerClient; n++) {
      docs.forEach((doc, c) => {
        const tasks = doc.getMap<unknown>('tasks');
        if (n % 2 === 0) tasks.set(`c${c}-${n % 50}`, n);
        else doc.getText(`title-${c}`).insert(0, 'x');
      });
      if (n % 10 === 9) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await Promise.all(conns.map((c) => c.whenAcknowledged(60_000)));
    const edits = editsPerClient * CLIENTS;
    // Converged on every instance, then every store flushed: all the rows this load will write are written.
    const typed = Math.floor(editsPerClient / 2);
    while (!docs.every((doc) => docs.every((_, c) => doc.getText(`title-${c}`).length === typed))) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await Promise.all(instances.map((i) => i.cluster.store.flush(planId)));
    const cpuS = postgresCpuSeconds(services.postgresPort) - cpuBefore;
    const rows = instances.reduce((n, i) => n + i.cluster.store.metrics().appends, 0);
    for (const c of conns) c.destroy();
    return { edits, rows, cpuS };
  } finally {
    await Promise.all(instances.map((i) => i.server.close()));
  }
}

/** A 95% bootstrap interval of mean(a) / mean(b), resampling each side's runs. */
function bootstrapRatio(a: number[], b: number[], rounds = 2_000): [number, number] {
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const pick = (xs: number[]) => Array.from(xs, () => xs[Math.floor(Math.random() * xs.length)]!);
  const ratios = Array.from({ length: rounds }, () => mean(pick(a)) / mean(pick(b))).sort((x, y) => x - y);
  return [ratios[Math.floor(rounds * 0.025)]!, ratios[Math.floor(rounds * 0.975)]!];
}

export async function run({ quick }: BenchOptions): Promise<BenchOutcome> {
  const runs = quick ? 1 : 3;
  const editsPerClient = quick ? 200 : EDITS_PER_CLIENT;
  const [redis, postgres] = await Promise.all([startRedis(), startPostgres()]);
  const services = { redisUrl: redis.url, postgresUrl: postgres.url, postgresPort: postgres.port };
  const before: RunResult[] = [];
  const after: RunResult[] = [];
  try {
    for (let r = 0; r < runs; r++) {
      progress(`run ${r + 1} of ${runs}: every instance stores every update (before)`);
      before.push(await runOnce(services, true, `bench:before:${r}`, editsPerClient));
      progress(`run ${r + 1} of ${runs}: each update stored once (now)`);
      after.push(await runOnce(services, false, `bench:after:${r}`, editsPerClient));
    }
  } finally {
    await Promise.all([redis.destroy(), postgres.destroy()]);
  }
  const perEdit = (xs: RunResult[]) =>
    xs.reduce((n, x) => n + x.rows, 0) / xs.reduce((n, x) => n + x.edits, 0);
  const cpu = (xs: RunResult[]) => xs.map((x) => x.cpuS);
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const [low, high] = bootstrapRatio(cpu(before), cpu(after));
  const base = 'every instance stores every update (before)';
  const rows: Row[] = [
    {
      measure: 'rows written per edit (three instances)',
      cairn: perEdit(after).toFixed(2),
      baselineName: base,
      baseline: perEdit(before).toFixed(2),
      ratio: `${(perEdit(before) / perEdit(after)).toFixed(2)}x fewer`,
      target: 'at most 1 per edit',
      met: perEdit(after) <= 1,
    },
    {
      measure: `PostgreSQL CPU for ${(editsPerClient * CLIENTS).toLocaleString('en-US')} edits, mean of ${runs} (s)`,
      cairn: mean(cpu(after)).toFixed(2),
      baselineName: base,
      baseline: mean(cpu(before)).toFixed(2),
      ratio: `${(mean(cpu(before)) / mean(cpu(after))).toFixed(2)}x less (95% bootstrap ${low.toFixed(2)}-${high.toFixed(2)})`,
      target: '',
      met: null,
    },
  ];
  return {
    id: 'cluster-storage',
    number: 13,
    title: 'Rows and PostgreSQL CPU per edit on three cluster instances',
    method:
      `Three in-process instances on one redis-server and one PostgreSQL, one Cairn client on each making ${editsPerClient.toLocaleString('en-US')} edits ` +
      '(fields and title text, ten a tick), acknowledged and converged, every store flushed. Rows are the inserts of all instances; ' +
      'CPU is user + system time of the postmaster and its backends over the edits. "Before" adds an extension that stores what ' +
      `the relay brings in, as every instance did before decision 030. ${runs} runs, before and after interleaved.`,
    rows,
    notes: [
      `Per run (before / after), rows: ${before.map((x) => x.rows).join(', ')} / ${after.map((x) => x.rows).join(', ')}; PostgreSQL CPU s: ${cpu(
        before,
      )
        .map((x) => x.toFixed(2))
        .join(', ')} / ${cpu(after)
        .map((x) => x.toFixed(2))
        .join(', ')}.`,
      'Compaction is the new one (a worker thread, one instance at a time) in both: only where updates are stored differs.',
      'Since decision 063 an instance applies the entries of one read from Redis in one transaction. "Before" takes each ' +
        'update where the relay hands it to the room; it had taken the transaction, one row per batch (1.09 rows per ' +
        'edit in the one run made that way), which is not what instances stored before decision 030.',
    ],
  };
}
