// Benchmark 10: edit → seen across the instances of a cluster. A sender and an observer (y-websocket clients with a
// Plan) on two different `cairn serve --redis --postgres` processes, against the same two clients on one single
// `cairn serve` (disk store) and on one instance of the cluster; redis-server and PostgreSQL run locally.
import { startPostgres, startRedis } from '../packages/server/test/services.js';
import { flipInTurns, twoServerPair } from './lib/latency.js';
import { collectGarbage, progress, rng, type Summary, summarize } from './lib/measure.js';
import { type BenchOptions, type BenchOutcome, ms, type Row, speedup } from './lib/report.js';
import { type RunningServer, startServer } from './lib/servers.js';

process.setMaxListeners(0);

/** Edit → seen samples between a sender on `from` and an observer on `to` (servers may be the same). */
async function measure(
  from: RunningServer,
  to: RunningServer,
  room: string,
  samples: number,
  warmup: number,
): Promise<number[]> {
  const pair = await twoServerPair('edits', from, to, room);
  const into = { edits: [] as number[] };
  collectGarbage();
  try {
    await flipInTurns([pair], { warmup, edits: samples, random: rng(9), into });
  } finally {
    await pair.stop();
  }
  return into.edits;
}

export async function run({ quick }: BenchOptions): Promise<BenchOutcome> {
  const samples = quick ? 100 : 600;
  const warmup = quick ? 20 : 50;
  const [redis, postgres] = await Promise.all([startRedis(), startPostgres()]);
  const results: Record<'single' | 'same' | 'across', Summary> = {} as never;
  try {
    progress('one server, disk store');
    const single = await startServer('cairn');
    try {
      results.single = summarize(await measure(single, single, 'single', samples, warmup));
    } finally {
      await single.stop();
    }
    const cluster = { redis: redis.url, postgres: postgres.url };
    const instances = await Promise.all([0, 1, 2].map(() => startServer('cairn', { cluster })));
    try {
      progress('cluster, one instance');
      results.same = summarize(await measure(instances[0]!, instances[0]!, 'same', samples, warmup));
      progress('cluster, across instances');
      results.across = summarize(await measure(instances[0]!, instances[1]!, 'across', samples, warmup));
    } finally {
      await Promise.all(instances.map((i) => i.stop()));
    }
  } finally {
    await Promise.all([redis.destroy(), postgres.destroy()]);
  }
  const { single, same, across } = results;
  const row = (measure: string, cairn: number, base: number, baseName: string, target = ''): Row => ({
    measure,
    cairn: ms(cairn),
    baselineName: baseName,
    baseline: ms(base),
    ratio: speedup(cairn, base),
    target,
    met: null,
  });
  return {
    id: 'cluster-latency',
    number: 10,
    title: 'Edit → seen across cluster instances',
    method:
      'A sender and an observer (y-websocket 3.1 clients with a Plan on their docs) in this process; each server a ' +
      '`cairn serve` process on 127.0.0.1. The sender flips a task status; the time runs until the observer sees it. ' +
      `${samples} edits one at a time, 5 to 15 ms apart, after ${warmup} warm-up edits, in turn: both clients on one ` +
      'single server (disk store), both on one instance of a three-instance cluster (Redis, PostgreSQL), and on two ' +
      'different instances of it (the edit goes through the plan’s Redis stream).',
    rows: [
      row(
        'edit → seen, clients on two cluster instances: p50',
        across.median,
        single.median,
        'one single server',
      ),
      row('edit → seen, clients on two cluster instances: p99', across.p99, single.p99, 'one single server'),
      row(
        'edit → seen, both clients on one cluster instance: p50',
        same.median,
        single.median,
        'one single server',
      ),
      row(
        'edit → seen, both clients on one cluster instance: p99',
        same.p99,
        single.p99,
        'one single server',
      ),
    ],
    notes: [
      'Across instances an edit takes one more hop: the sender’s instance adds it to the plan’s Redis stream and ' +
        'publishes it in one script, and Redis pushes it to the observer’s instance. The write to PostgreSQL is not on ' +
        'this path (only on the acknowledgement’s).',
      'redis-server, PostgreSQL, three instances and the clients share the same 2 cores.',
    ],
  };
}
