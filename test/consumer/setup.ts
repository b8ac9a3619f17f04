// Global setup of the consumer suite: builds the three packages, packs them as they would be published, and
// installs the tarballs with npm (not workspace links) into fresh projects outside the repository: `app`, as a
// user following the README would, `nopeer`, with peer dependencies left out (a user's mistake), and `vitest2`, an
// adapter author's project on vitest 2 with only @cairn/core.
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { type ConsumerContext, FIXTURES, npm, PACKAGES, ROOT, run } from './lib.js';

export default async function setup(project: TestProject): Promise<() => void> {
  const started = Date.now();
  const step = (what: string) =>
    console.log(`consumer setup: ${what} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  const base = mkdtempSync(join(tmpdir(), 'cairn-consumer-'));
  // `pnpm release` packs once and hands its tarballs here, so what is tested is byte for byte what is published.
  const packs = process.env.CAIRN_CONSUMER_PACKS ?? (await buildAndPack(join(base, 'packs')));
  const tarballs = Object.fromEntries(
    PACKAGES.map((name) => [
      name,
      join(packs, readdirSync(packs).find((f) => f.startsWith(`cairn-${name}-`))!),
    ]),
  ) as ConsumerContext['tarballs'];
  step('packed');

  const app = join(base, 'app');
  cpSync(join(FIXTURES, 'app'), app, { recursive: true });
  // The README's own example, as JavaScript, as TypeScript and as a browser app's script, so the tests prove what
  // the README shows (and what it costs a page).
  const example = readmeExample();
  writeFileSync(join(app, 'readme.mjs'), example);
  writeFileSync(join(app, 'ts/readme.ts'), example);
  writeFileSync(join(app, 'web-readme/main.js'), example);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'consumer-app', private: true, type: 'module' }),
  );
  const nopeer = join(base, 'nopeer');
  mkdirSync(nopeer);
  writeFileSync(
    join(nopeer, 'package.json'),
    JSON.stringify({ name: 'consumer-nopeer', private: true, type: 'module' }),
  );
  const vitest2 = join(base, 'vitest2');
  cpSync(join(FIXTURES, 'vitest2'), vitest2, { recursive: true });
  writeFileSync(
    join(vitest2, 'package.json'),
    JSON.stringify({ name: 'consumer-vitest2', private: true, type: 'module' }),
  );
  await Promise.all([
    // As the README says (npm install @cairn/core yjs), plus ws for Node 20's missing WebSocket, Node's types,
    // gpt-tokenizer (the optional peer of @cairn/core/tokenizer) and the AI SDK (that of the @cairn/core/ai adapter).
    npm(app, [
      'install',
      ...Object.values(tarballs),
      'yjs@^13.6.0',
      'ws@^8',
      '@types/node@^20',
      'gpt-tokenizer@^4',
      'ai@7.0.173',
    ]),
    npm(nopeer, ['install', '--legacy-peer-deps', ...Object.values(tarballs)]),
    // An adapter author's project on vitest 2: a strict install (a peer conflict fails it), core alone.
    npm(vitest2, ['install', tarballs.core, 'yjs@^13.6.0', 'vitest@^2']),
  ]);
  step('installed');

  const context: ConsumerContext = { base, app, nopeer, vitest2, tarballs };
  project.provide('consumer', context);
  return () => rmSync(base, { recursive: true, force: true });
}

/** Builds the three packages and packs them into `packs` as they would be published. */
async function buildAndPack(packs: string): Promise<string> {
  await run(process.execPath, [join(ROOT, 'scripts/build.mjs')], { cwd: ROOT, timeoutMs: 300_000 });
  mkdirSync(packs);
  const [pnpm, ...pnpmArgs] = pnpmCommand();
  for (const name of PACKAGES) {
    // pnpm pack turns `workspace:^` into the version a registry would see.
    await run(pnpm, [...pnpmArgs, 'pack', '--pack-destination', packs], {
      cwd: join(ROOT, 'packages', name),
      timeoutMs: 120_000,
    });
  }
  return packs;
}

/** The first JavaScript block of the README's "Install" section. */
function readmeExample(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const install = readme.slice(readme.indexOf('\n## Install\n'));
  const block = /```js\n([\s\S]*?)```/.exec(install);
  if (!block?.[1]) throw new Error('README.md has no ```js block in its "Install" section');
  return block[1];
}

/** pnpm as this test run was started with it (`npx pnpm@… test` on a fresh machine), or from PATH. */
function pnpmCommand(): [string, ...string[]] {
  const execPath = process.env.npm_execpath;
  if (execPath && /pnpm/.test(execPath))
    return /\.[cm]?js$/.test(execPath) ? [process.execPath, execPath] : [execPath];
  return ['pnpm'];
}

declare module 'vitest' {
  export interface ProvidedContext {
    consumer: ConsumerContext;
  }
}
