// Benchmark 11: the fan-out load of benchmark 5 (20 rooms × 10 clients, 5 edits a second each) spread over a
// three-instance cluster (each room's clients on all three instances, one client process per instance), against
// the same load on one single `cairn serve`. redis-server and PostgreSQL run locally.
import { startPostgres, startRedis } from '../packages/server/test/services.js';
import { FANOUT_LOAD, type FanoutResult, measure } from './fanout.js';
import { progress } from './lib/measure.js';
import { type BenchResult, count, ms, type Row, speedup, throughputRatio } from './lib/report.js';

process.setMaxListeners(0);

export async function run({
  quick,
}: {
  quick: boolean;
}): Promise<Omit<BenchResult, 'machine' | 'at' | 'seconds' | 'quick'>> {
  const { ROOMS, PER_ROOM, RATE } = FANOUT_LOAD;
  const durationMs = FANOUT_LOAD.durationMs(quick);
  progress('one server, disk store');
  const single: FanoutResult = await measure('cairn', ROOMS, PER_ROOM, durationMs, RATE);
  const [redis, postgres] = await Promise.all([startRedis(), startPostgres()]);
  let cluster: FanoutResult;
  try {
    progress('three instances');
    cluster = await measure('cairn', ROOMS, PER_ROOM, durationMs, RATE, undefined, {
      redis: redis.url,
      postgres: postgres.url,
    });
  } finally {
    await Promise.all([redis.destroy(), postgres.destroy()]);
  }
  const base = 'one single server';
  const row = (
    measure: string,
    cairn: string,
    baseline: string,
    ratio = '',
    target = '',
    met: boolean | null = null,
  ): Row => ({
    measure,
    cairn,
    baselineName: base,
    baseline,
    ratio,
    target,
    met,
  });
  const c = cluster;
  const s = single;
  const rows: Row[] = [
    row(
      'updates delivered to replicas per second',
      count(c.deliveredPerS, '/s'),
      count(s.deliveredPerS, '/s'),
      throughputRatio(c.deliveredPerS, s.deliveredPerS),
    ),
    row(
      'edit → replica latency, p50 / p99',
      `${ms(c.latency.median)} / ${ms(c.latency.p99)}`,
      `${ms(s.latency.median)} / ${ms(s.latency.p99)}`,
      speedup(c.latency.p99, s.latency.p99),
    ),
    row(
      'server CPU during the run (% of one core), per instance',
      c.cpuPerServer.map((x) => `${x.toFixed(0)}%`).join(' · '),
      `${s.cpuPercent.toFixed(0)}%`,
    ),
    row(
      `no update lost: every writer's last edit in every replica (${c.checkedReplicas} replicas)`,
      c.lost === 0 ? 'none lost' : `${c.lost} missing`,
      s.lost === 0 ? 'none lost' : `${s.lost} missing`,
      '',
      'none lost',
      c.lost === 0,
    ),
  ];
  return {
    id: 'cluster-fanout',
    number: 11,
    title: 'Fan-out over three cluster instances',
    method:
      `Benchmark 5's load (${ROOMS} rooms of ${PER_ROOM} y-websocket clients, each editing its own task ${RATE} times a second for ` +
      `${durationMs / 1000} s): on one \`cairn serve\` (disk store; two client processes), then on three \`cairn serve --redis --postgres\` ` +
      'instances with each room spread over all three (client i on instance i mod 3; one client process per instance), so most ' +
      'deliveries cross instances through Redis. CPU is user + system time of each server process over the run.',
    rows,
    notes: [
      `Deliveries: cluster ${c.delivered.toLocaleString('en-US')} of ${c.expectedDeliveries.toLocaleString('en-US')}, single ${s.delivered.toLocaleString('en-US')} of ${s.expectedDeliveries.toLocaleString('en-US')}; replicas converged ${c.drainS.toFixed(1)} s (cluster) and ${s.drainS.toFixed(1)} s (single) after the last edit.`,
      'redis-server, PostgreSQL, three instances and three client processes share the same 2 cores, so the cluster cannot be faster here: this shows its cost, not its scale-out.',
      'Hocuspocus with its Redis extension is not run as a peer: its wire protocol names the document in every ' +
        "message, so it needs HocuspocusProvider clients in the benchmark's client processes, which it does not have yet.",
    ],
  };
}
