// The one test command: lint, type check, architecture checks, every test (unit, integration, browser), then the
// consumer suite on the packed packages.
// Ends with `N passed, M failed`, counting each check as one and each vitest test as one.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';

const env = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' };
const results = [];

function step(name, command, args) {
  console.log(`\n=== ${name}: ${command} ${args.join(' ')}`);
  const started = Date.now();
  const run = spawnSync(command, args, { stdio: 'inherit', env });
  const ok = run.status === 0;
  console.log(`=== ${name}: ${ok ? 'passed' : 'FAILED'} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  results.push({ name, ok });
  return ok;
}

// Browser tests run in Debian's Chromium, and the cluster tests start their own redis-server and PostgreSQL
// (Debian's packages): install whichever is missing, in one apt run (root on a fresh machine or in CI).
const missing = [
  ['/usr/bin/chromium', 'chromium'],
  ['/usr/bin/redis-server', 'redis-server'],
  ['/usr/lib/postgresql', 'postgresql'],
].filter(([path]) => !existsSync(path));
if (missing.length > 0) {
  const packages = missing.map(([, name]) => name).join(' ');
  step(`install ${packages}`, 'bash', [
    '-c',
    `export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq ${packages} >/dev/null`,
  ]);
}

const bin = (name) => `node_modules/.bin/${name}`;
step('lint', bin('biome'), ['check', '.']);
step('typecheck', bin('tsc'), ['-p', 'tsconfig.json']);
step('single yjs', 'node', ['scripts/check-single-yjs.mjs']);
step('browser bundle', 'node', ['scripts/check-browser-bundle.mjs']);
step('import cycles', 'node', ['scripts/check-import-cycles.mjs']);
step('api report', 'node', ['scripts/api-report.mjs', '--check']);

mkdirSync('.test-results', { recursive: true });
const vitestRuns = [];
function vitestStep(name, args) {
  const report = `.test-results/${name}.json`;
  rmSync(report, { force: true }); // a report left by an earlier run must not be counted as this one's
  const ok = step(name, bin('vitest'), [
    'run',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${report}`,
    ...args,
  ]);
  vitestRuns.push({ name, ok, report });
}
vitestStep('tests', process.argv.slice(2));
// The packages as users get them: packed, installed with npm outside the repository, run in each runtime.
vitestStep('consumer', ['--config', 'vitest.consumer.config.ts']);

const isVitest = (r) => vitestRuns.some((v) => v.name === r.name);
let passed = results.filter((r) => r.ok && !isVitest(r)).length;
let failed = results.filter((r) => !r.ok && !isVitest(r)).length;
let skipped = 0;
let todo = 0;
for (const { ok, report } of vitestRuns) {
  if (existsSync(report)) {
    const json = JSON.parse(readFileSync(report, 'utf8'));
    passed += json.numPassedTests;
    failed += json.numFailedTests;
    skipped += json.numPendingTests;
    todo += json.numTodoTests;
    if (!ok && json.numFailedTests === 0) failed += 1; // a suite that failed to load has no failed test
  } else {
    failed += 1;
  }
}
console.log(`\n${skipped} skipped, ${todo} todo`);
const broken = results.filter((r) => !r.ok).map((r) => r.name);
if (broken.length > 0) console.log(`\nfailed steps: ${broken.join(', ')}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
