// The one test command: lint, type check, architecture checks, then every test (unit, integration, browser).
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

// Browser tests run in Debian's Chromium; install it when missing (root on a fresh machine or in CI).
if (!existsSync('/usr/bin/chromium')) {
  step('install chromium', 'bash', [
    '-c',
    'apt-get update -qq && apt-get install -y -qq chromium >/dev/null',
  ]);
}

const bin = (name) => `node_modules/.bin/${name}`;
step('lint', bin('biome'), ['check', '.']);
step('typecheck', bin('tsc'), ['-p', 'tsconfig.json']);
step('single yjs', 'node', ['scripts/check-single-yjs.mjs']);
step('browser bundle', 'node', ['scripts/check-browser-bundle.mjs']);

mkdirSync('.test-results', { recursive: true });
const report = '.test-results/vitest.json';
rmSync(report, { force: true }); // a run that dies before writing must not be counted from the last one's report
const vitestOk = step('tests', bin('vitest'), [
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${report}`,
  ...process.argv.slice(2),
]);

let passed = results.filter((r) => r.ok && r.name !== 'tests').length;
let failed = results.filter((r) => !r.ok && r.name !== 'tests').length;
if (existsSync(report)) {
  const json = JSON.parse(readFileSync(report, 'utf8'));
  passed += json.numPassedTests;
  failed += json.numFailedTests;
  console.log(`\n${json.numPendingTests} skipped, ${json.numTodoTests} todo`);
  if (!vitestOk && json.numFailedTests === 0) failed += 1; // a suite that failed to load has no failed test
} else {
  failed += 1;
}
const broken = results.filter((r) => !r.ok).map((r) => r.name);
if (broken.length > 0) console.log(`\nfailed steps: ${broken.join(', ')}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
