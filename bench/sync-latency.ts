// Benchmark 4: sync latency. With 50 clients in one room, the time from one agent's edit (Plan.update) until
// another agent's Plan reports it, through the server on loopback; p50 and p99 for Cairn's server, the
// reference y-websocket server and a bare `ws` broadcast server (the floor). The sender and the observer run
// here; the other 48 clients run in a child process, so the server fans every edit out to 49 sockets.
import { crowdedPair, flipInTurns, type LatencyPair } from './lib/latency.js';
import { bootstrapRatio, collectGarbage, progress, rng, type Summary, summarize } from './lib/measure.js';
import { type BenchOptions, type BenchOutcome, ms, type Row, speedup } from './lib/report.js';
import { type ServerKind as AnyServerKind, SERVER_NAMES, startServer } from './lib/servers.js';

/** The systems this benchmark compares (Hocuspocus is the cluster benchmark's peer). */
type ServerKind = Exclude<AnyServerKind, 'hocuspocus'>;

const CLIENTS = 50;

process.setMaxListeners(0); // each y-websocket provider adds an 'exit' listener

export async function run({ quick }: BenchOptions): Promise<BenchOutcome> {
  // A p99 of 1,200 edits is a dozen edits, and which system won it flipped from run to run; with 3,600 (36 behind
  // each p99) the bootstrap interval of the ratio was still about ±0.2 wide. 6,000 edits per system (60 behind each
  // p99). This shared machine also changes pace by minutes (the same system's p50 moved between about 0.7 and 1.6 ms
  // from one minute to the next): systems measured in turns, round by round, met different minutes. So the three
  // run side by side, each with its own server, crowd and clients, and take turns edit by edit (rotating order):
  // every system meets the same minutes. Three rounds, each on fresh servers and clients.
  const samples = quick ? 100 : 6_000;
  const warmup = quick ? 20 : 50;
  const rounds = quick ? 1 : 3;
  const kinds: ServerKind[] = ['floor', 'reference', 'cairn'];
  const pooled = { floor: [], reference: [], cairn: [] } as Record<ServerKind, number[]>;
  const connects = { floor: [], reference: [], cairn: [] } as Record<ServerKind, number[]>;
  const random = rng(11);
  for (let round = 0; round < rounds; round++) {
    progress(`round ${round + 1} of ${rounds}: starting the three systems`);
    const setups: (LatencyPair<ServerKind> & { connectS: number })[] = [];
    try {
      for (const kind of kinds)
        setups.push(await crowdedPair(kind, await startServer(kind), kind, 'latency', CLIENTS));
      for (const setup of setups) connects[setup.key].push(setup.connectS);
      collectGarbage();
      const edits = Math.ceil(samples / rounds);
      await flipInTurns(setups, {
        warmup,
        edits,
        random,
        into: pooled,
        measuring: () => progress(`round ${round + 1} of ${rounds}: ${edits} edits on each system, in turns`),
      });
    } finally {
      for (const setup of setups) await setup.stop();
    }
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const results = Object.fromEntries(
    kinds.map((kind) => [kind, { latency: summarize(pooled[kind]), connectS: mean(connects[kind]) }]),
  ) as Record<ServerKind, { latency: Summary; connectS: number }>;
  const c = results.cairn.latency;
  const f = results.floor.latency;
  const r = results.reference.latency;
  const p99Ratio = bootstrapRatio(pooled.cairn, pooled.reference, 0.99);
  const medianRatio = bootstrapRatio(pooled.cairn, pooled.reference, 0.5);
  const rows: Row[] = [
    {
      measure: `edit → seen by another agent, ${CLIENTS} clients in the room: p50`,
      cairn: ms(c.median),
      baselineName: SERVER_NAMES.floor,
      baseline: ms(f.median),
      ratio: speedup(c.median, f.median),
      target: '',
      met: null,
    },
    {
      measure: `edit → seen by another agent, ${CLIENTS} clients in the room: p99`,
      cairn: ms(c.p99),
      baselineName: SERVER_NAMES.floor,
      baseline: ms(f.p99),
      ratio: speedup(c.p99, f.p99),
      target: 'p99 within 2x of the floor',
      met: c.p99 <= 2 * f.p99,
    },
    {
      measure: `edit → seen by another agent, ${CLIENTS} clients in the room: p50`,
      cairn: ms(c.median),
      baselineName: SERVER_NAMES.reference,
      baseline: ms(r.median),
      ratio: speedup(c.median, r.median),
      target: '',
      met: null,
    },
    {
      measure: `edit → seen by another agent, ${CLIENTS} clients in the room: p99`,
      cairn: ms(c.p99),
      baselineName: SERVER_NAMES.reference,
      baseline: ms(r.p99),
      ratio: speedup(c.p99, r.p99),
      target: 'no worse than the reference',
      met: c.p99 <= r.p99,
    },
  ];
  return {
    id: 'sync-latency',
    number: 4,
    title: 'Sync latency through the server',
    method:
      `One room, ${CLIENTS} clients: a sender and an observer (each a y-websocket 3.1 client with a Plan on its doc) here, ` +
      `${CLIENTS - 2} more in a child process, the server in its own process, all on 127.0.0.1. The sender flips a task's status ` +
      `with \`Plan.update\`; the time runs until the observer's \`onChange\` reports it. The three systems run side by side (each its own ` +
      `server, clients and crowd process) and take turns edit by edit in a rotating order, one edit at a time, 5 to 15 ms apart, so ` +
      `each meets the same moments of the machine: ${samples} edits per system in ${rounds} rounds on fresh servers and clients, ` +
      `after ${warmup} warm-up edits each, pooled per system. The same client code runs against Cairn's server and the reference; for the floor, which has no ` +
      'sync protocol, clients send and apply the same Update messages themselves, from the same starting state.',
    rows,
    notes: [
      "Cairn's server relays a client's update as soon as it has integrated it, before its own observers run (decisions/029), and appends it to its " +
        "disk log at the end of the event loop's turn, together with the others of that turn (an acknowledgement waits until the log is fsynced); " +
        "the reference server relays from the document's 'update' event and keeps documents in memory only.",
      `How sure the comparison is: Cairn's p99 over the reference's, resampled 1,000 times from the pooled edits (bootstrap), lies between ` +
        `${p99Ratio.low.toFixed(2)} and ${p99Ratio.high.toFixed(2)} in 90% of the resamples (median ratio: ${medianRatio.low.toFixed(2)} to ` +
        `${medianRatio.high.toFixed(2)}); below 1 is Cairn faster. Each round's p99 ratio: ${perRound(pooled, rounds)}.`,
      `Time to connect and sync all ${CLIENTS} clients: floor ${results.floor.connectS.toFixed(1)} s, reference ${results.reference.connectS.toFixed(1)} s, Cairn ${results.cairn.connectS.toFixed(1)} s.`,
    ],
  };
}

/** Cairn's p99 over the reference's in each round (each pooled list holds the rounds in order, equal parts). */
function perRound(pooled: Record<ServerKind, number[]>, rounds: number): string {
  const part = (xs: number[], i: number) =>
    xs.slice((i * xs.length) / rounds, ((i + 1) * xs.length) / rounds);
  return Array.from({ length: rounds }, (_, i) => {
    const ratio = summarize(part(pooled.cairn, i)).p99 / summarize(part(pooled.reference, i)).p99;
    return ratio.toFixed(2);
  }).join(', ');
}
