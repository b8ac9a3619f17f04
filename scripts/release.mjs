// `pnpm release [--dry-run]`: builds the three packages, packs each once, runs the consumer suite on exactly those
// tarballs, then publishes them in dependency order (`npm publish --dry-run` with --dry-run). What is tested is what
// is published: the same files, not a second pack. Versions come from changesets (`pnpm changeset version` first).
// In CI (GitHub Actions with `id-token: write`) the packages are published with npm provenance.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');
const PACKAGES = ['core', 'mcp', 'server']; // dependency order: server needs mcp and core on the registry first
const args = process.argv.slice(2);
const unknown = args.filter((arg) => arg !== '--dry-run');
if (unknown.length > 0) {
  console.error(`release: unknown argument ${unknown.join(' ')}. Usage: pnpm release [--dry-run]`);
  process.exit(2);
}
const dryRun = args.includes('--dry-run');

function run(what, command, commandArgs, options = {}) {
  console.log(`\n=== release: ${what}`);
  const result = spawnSync(command, commandArgs, { stdio: 'inherit', cwd: ROOT, ...options });
  // Thrown, not exited: the finally blocks below restore the manifests and remove the packs.
  if (result.status !== 0) throw new Error(`${what} failed (exit ${result.status ?? result.signal})`);
}

const versions = PACKAGES.map(
  (name) => JSON.parse(readFileSync(join(ROOT, 'packages', name, 'package.json'), 'utf8')).version,
);
if (new Set(versions).size !== 1) {
  console.error(
    `release: the packages must share one version (changesets' fixed group), not ${versions.join(', ')}.`,
  );
  process.exit(1);
}

/**
 * The repository the packages are built from, in CI: the manifests carry no address of their own (a placeholder
 * would be a link users cannot trust), and npm provenance checks `repository` against the workflow's repository.
 */
function sourceRepository() {
  const repository = process.env.GITHUB_REPOSITORY;
  if (!repository) return null;
  return `${process.env.GITHUB_SERVER_URL ?? 'https://github.com'}/${repository}`;
}

/** Packs `name` into `packs`, with the source repository written into the packed manifest when known. */
function pack(name, packs) {
  const manifestPath = join(ROOT, 'packages', name, 'package.json');
  const original = readFileSync(manifestPath, 'utf8');
  const source = sourceRepository();
  if (source) {
    const manifest = JSON.parse(original);
    manifest.repository = { type: 'git', url: `git+${source}.git`, directory: `packages/${name}` };
    manifest.homepage = `${source}/tree/main/packages/${name}#readme`;
    manifest.bugs = `${source}/issues`;
    writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  }
  try {
    const pnpm = process.env.npm_execpath ?? 'pnpm';
    const viaNode = /\.[cm]?js$/.test(pnpm);
    run(
      `pack @cairn/${name}`,
      viaNode ? process.execPath : pnpm,
      [...(viaNode ? [pnpm] : []), 'pack', '--pack-destination', packs],
      { cwd: join(ROOT, 'packages', name) },
    );
  } finally {
    writeFileSync(manifestPath, original);
  }
}

const packs = mkdtempSync(join(tmpdir(), 'cairn-release-'));
try {
  run('build', process.execPath, [join(ROOT, 'scripts/build.mjs')]);
  for (const name of PACKAGES) pack(name, packs);
  const tarball = (name) =>
    join(
      packs,
      readdirSync(packs).find((file) => file.startsWith(`cairn-${name}-`)),
    );
  run(
    'consumer suite on these tarballs',
    join(ROOT, 'node_modules/.bin/vitest'),
    ['run', '--config', 'vitest.consumer.config.ts'],
    { env: { ...process.env, CAIRN_CONSUMER_PACKS: packs } },
  );
  const provenance = process.env.GITHUB_ACTIONS === 'true' ? ['--provenance'] : [];
  for (const name of PACKAGES) {
    run(`publish @cairn/${name}@${versions[0]}${dryRun ? ' (dry run)' : ''}`, 'npm', [
      'publish',
      tarball(name),
      '--access',
      'public',
      ...provenance,
      ...(dryRun ? ['--dry-run'] : []),
    ]);
  }
  console.log(
    `\nrelease: ${dryRun ? 'would publish' : 'published'} ${PACKAGES.map((n) => `@cairn/${n}`).join(', ')} ${versions[0]}`,
  );
} catch (error) {
  console.error(
    `release: ${error.message}; stopped there (packages published before this step stay published).`,
  );
  process.exitCode = 1;
} finally {
  rmSync(packs, { recursive: true, force: true });
}
