// `pnpm bench [--quick] [--only graph,storage]`: runs each benchmark in its own Node process (so one's heap and
// JIT state do not colour the next), then writes docs/BENCHMARKS.md from the results. --quick runs shorter
// versions of the same work and writes bench/.results/BENCHMARKS-quick.md instead, leaving the doc alone.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SOURCE_NODE_ARGS } from '../test/source-cli.js';
import { loadAverage, machine } from './lib/machine.js';
import type { BenchOptions, BenchOutcome, BenchResult } from './lib/report.js';
import { writeReport } from './lib/write-report.js';

/** In the order the issue numbers them; each module exports `run({ quick })`. */
export const BENCHMARKS = [
  'tools',
  'graph',
  'render',
  'sync-latency',
  'fanout',
  'storage',
  'bundle',
  'context-tokens',
  'tool-definitions',
  'cluster-latency',
  'cluster-fanout',
  'agent-context',
  'agent-adapters',
  'cluster-storage',
  'many-plans',
  'edge-host',
  'procedure-fidelity',
] as const;

/** Seconds a benchmark may take (quick, full) where the default (60, 420) is too short. */
const TIME_LIMITS_S: Record<string, { quick: number; full: number }> = {
  // Three systems, each on its own services, three interleaved runs.
  'cluster-fanout': { quick: 300, full: 1500 },
  // Two servers under load for 60 s each, a profiled run, then memory per open plan at 600 plans on each.
  fanout: { quick: 120, full: 900 },
  // Up to 10,000 plans written, each size for Cairn and the reference, each with an idle minute.
  'many-plans': { quick: 120, full: 2400 },
  // Two hosts with 50 clients each for three rounds, then 1,000 idle sockets per host and a hibernation wait.
  'edge-host': { quick: 180, full: 900 },
};

/** Those that start Cairn's server, which they run built (bench/lib/servers.ts): the packages are built first. */
const SERVER_BENCHMARKS: readonly string[] = [
  'sync-latency',
  'fanout',
  'cluster-latency',
  'cluster-fanout',
  'edge-host',
];

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');

function parseArgs(argv: string[]) {
  const quick = argv.includes('--quick');
  const childAt = argv.indexOf('--child');
  const onlyArg = argv.find((a) => a.startsWith('--only'));
  let only: string[] | null = null;
  if (onlyArg) {
    const value = onlyArg.includes('=') ? onlyArg.split('=')[1]! : argv[argv.indexOf(onlyArg) + 1]!;
    only = value.split(',').map((s) => s.trim());
    for (const id of only)
      if (!(BENCHMARKS as readonly string[]).includes(id))
        throw new Error(`unknown benchmark "${id}"; benchmarks: ${BENCHMARKS.join(', ')}`);
  }
  return {
    quick,
    child: childAt >= 0 ? argv[childAt + 1]! : null,
    out: argv[argv.indexOf('--out') + 1],
    only,
  };
}

async function runChild(id: string, quick: boolean, out: string): Promise<void> {
  const started = new Date();
  const m = machine();
  const mod = (await import(`./${id}.ts`)) as {
    run: (o: BenchOptions) => Promise<BenchOutcome>;
  };
  const t0 = performance.now();
  const result = await mod.run({ quick });
  const full: BenchResult = {
    ...result,
    quick,
    at: started.toISOString(),
    seconds: (performance.now() - t0) / 1000,
    machine: { ...m, loadEnd: loadAverage() },
  };
  fs.writeFileSync(out, JSON.stringify(full, null, 2));
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.child) {
    await runChild(args.child, args.quick, args.out!);
    process.exit(0); // a benchmark may leave sockets or timers behind; its result is written
  }
  const mode = args.quick ? 'quick' : 'full';
  const resultsDir = join(here, '.results', mode);
  fs.mkdirSync(resultsDir, { recursive: true });
  const ids = args.only ?? [...BENCHMARKS];
  const t0 = performance.now();
  if (ids.some((id) => SERVER_BENCHMARKS.includes(id))) {
    console.log('== building the packages (the server benchmarks run the built `cairn serve`)');
    const build = spawnSync(process.execPath, [join(root, 'scripts/build.mjs')], {
      cwd: root,
      stdio: 'inherit',
    });
    if (build.status !== 0)
      throw new Error('pnpm build failed: the server benchmarks need the built packages.');
  }
  let failed = 0;
  for (const id of ids) {
    const out = join(resultsDir, `${id}.json`);
    const tmp = `${out}.tmp`;
    console.log(`\n== ${id}${args.quick ? ' (quick)' : ''}: load ${loadAverage().toFixed(2)}`);
    const t = performance.now();
    const child = spawnSync(
      process.execPath,
      [
        '--expose-gc',
        ...SOURCE_NODE_ARGS,
        join(here, 'run.ts'),
        '--child',
        id,
        '--out',
        tmp,
        ...(args.quick ? ['--quick'] : []),
      ],
      {
        cwd: root,
        stdio: 'inherit',
        timeout: (TIME_LIMITS_S[id]?.[args.quick ? 'quick' : 'full'] ?? (args.quick ? 60 : 420)) * 1000,
      },
    );
    if (child.status !== 0 || !fs.existsSync(tmp)) {
      failed++;
      console.error(`${id}: failed (${child.error?.message ?? `exit ${child.status ?? child.signal}`})`);
      continue;
    }
    fs.renameSync(tmp, out);
    const result = JSON.parse(fs.readFileSync(out, 'utf8')) as BenchResult;
    console.log(`${id}: ${((performance.now() - t) / 1000).toFixed(1)} s`);
    for (const row of result.rows)
      console.log(
        `  ${row.met === null ? ' ' : row.met ? '+' : '!'} ${row.measure}: ${row.cairn}` +
          (row.baseline ? ` vs ${row.baseline} (${row.baselineName}) ${row.ratio}` : ''),
      );
  }
  const results: BenchResult[] = [];
  for (const id of BENCHMARKS) {
    const file = join(resultsDir, `${id}.json`);
    if (fs.existsSync(file)) results.push(JSON.parse(fs.readFileSync(file, 'utf8')) as BenchResult);
  }
  const target = args.quick ? join(resultsDir, 'BENCHMARKS-quick.md') : join(root, 'docs', 'BENCHMARKS.md');
  writeReport(target, results, {
    quick: args.quick,
    missing: BENCHMARKS.map((id, i) => ({ id, number: i + 1 })).filter(
      ({ id }) => !results.some((r) => r.id === id),
    ),
  });
  console.log(`\nwrote ${target} in ${((performance.now() - t0) / 1000).toFixed(0)} s total`);
  if (failed > 0) process.exit(1);
}

await main();
