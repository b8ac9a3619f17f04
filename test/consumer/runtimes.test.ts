// The root entry beyond Node: one fetch handler (fixtures/app/edge.mjs) makes a plan, dispatches a tool call and
// answers with the rendered plan, in Cloudflare's workerd (bundled for it, as wrangler would), in Deno and in Bun
// (both loading the installed packages from node_modules, unbundled); and `cairn serve` from the installed
// package under Bun and Deno. Each runtime is the binary its npm package ships.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { bin, bundleForWorkerd, freePort, run, type Served, startProcess, userEnv } from './lib.js';
import { expectSyncedToolCall } from './synced-tool-call.js';

const { app, base } = inject('consumer');
const running: Served[] = [];
afterEach(async () => {
  for (const served of running.splice(0)) await served.stop();
});

/** Starts a server process and returns what it answers at `/` once it answers. */
async function answer(command: string, args: string[], port: number, env = userEnv()): Promise<string> {
  const served = await startProcess(command, args, { cwd: app, env });
  running.push(served);
  let text = '';
  await vi.waitFor(
    async () => {
      if (served.child.exitCode !== null) throw new Error(`${command} exited ${served.child.exitCode}`);
      const res = await fetch(`http://127.0.0.1:${port}/`);
      text = await res.text();
      expect(res.status, text).toBe(200);
    },
    { timeout: 60_000, interval: 250 },
  );
  return text;
}

function expectRenderedPlan(text: string): void {
  expect(text).toContain('Deploy to the edge');
  expect(text).toContain('Watch the error rate');
  expect(text).toContain('ready: Watch the error rate\n');
}

async function version(command: string, args: string[]): Promise<string> {
  return (await run(command, args, { cwd: app })).stdout.trim().split('\n')[0] ?? '';
}

/** Bundles `fixture` as wrangler would, serves it with workerd, and returns what it answers at `/`. */
async function inWorkerd(fixture: string): Promise<string> {
  const name = fixture.replace(/\.mjs$/, '');
  await bundleForWorkerd(join(app, fixture), join(base, `${name}-worker.js`));
  const port = await freePort();
  const config = join(base, `${name}.capnp`);
  writeFileSync(
    config,
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .edge) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const edge :Workerd.Worker = (
  modules = [ (name = "edge.js", esModule = embed "${name}-worker.js") ],
  compatibilityDate = "2025-09-01",
);
`,
  );
  return answer(bin('workerd'), ['serve', config], port);
}

describe('the root entry in other runtimes', () => {
  it('runs as a Cloudflare Worker in workerd', async () => {
    console.log(`workerd ${await version(bin('workerd'), ['--version'])}`);
    expectRenderedPlan(await inWorkerd('edge.mjs'));
  });

  it('says to create plans inside a handler when a Worker creates one at its top level', async () => {
    const answered = JSON.parse(await inWorkerd('edge-top-level.mjs'));
    expect(answered).toMatchObject({ name: 'CairnError', code: 'invalid_argument' });
    expect(answered.message).toContain("Worker's top level");
    expect(answered.message).toContain('inside a handler');
  });

  it('runs under Deno (deno serve)', async () => {
    console.log(await version(bin('deno'), ['--version']));
    const port = await freePort();
    const env = userEnv({ DENO_NO_UPDATE_CHECK: '1', DENO_DIR: join(base, 'deno-dir') });
    const args = ['serve', '--allow-env', '--host', '127.0.0.1', '--port', String(port), 'edge.mjs'];
    expectRenderedPlan(await answer(bin('deno'), args, port, env));
  });

  it('persists a plan with @cairn/core/fs under Deno with the permissions the README lists', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-deno-fs-'));
    try {
      const env = userEnv({ DENO_NO_UPDATE_CHECK: '1', DENO_DIR: join(base, 'deno-dir') });
      // The README's Deno row: --allow-env (lib0), read and write the data folder, --allow-sys=hostname (the lock).
      const permissions = [
        '--allow-env',
        `--allow-read=${app},${dir}`,
        `--allow-write=${dir}`,
        '--allow-sys=hostname',
      ];
      const written = await run(bin('deno'), ['run', ...permissions, 'persist-write.mjs', dir], {
        cwd: app,
        env,
      });
      expect(written.stdout.trim()).toBe('stored');
      const read = await run(process.execPath, ['persist-read.mjs', dir], { cwd: app });
      expect(JSON.parse(read.stdout).tasks).toHaveLength(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs under Bun (its default-export server)', async () => {
    console.log(`bun ${await version(bin('bun'), ['--version'])}`);
    const port = await freePort();
    const env = userEnv({ BUN_PORT: String(port), NODE_ENV: 'production' });
    expectRenderedPlan(await answer(bin('bun'), ['edge.mjs'], port, env));
  });
});

describe('`cairn serve` from the installed package in other runtimes', () => {
  const runtimes: Array<[name: string, command: string, args: string[], env: NodeJS.ProcessEnv]> = [
    ['Bun', bin('bun'), [], userEnv()],
    [
      'Deno',
      bin('deno'),
      ['run', '-A'],
      userEnv({ DENO_NO_UPDATE_CHECK: '1', DENO_DIR: join(base, 'deno-dir') }),
    ],
  ];
  it.each(runtimes)(
    'serves the bundled demo and syncs a WebSocket client under %s',
    async (_, command, args, env) => {
      const data = mkdtempSync(join(tmpdir(), 'cairn-consumer-data-'));
      try {
        const served = await startProcess(
          command,
          [...args, 'node_modules/@cairn/server/bin/cairn.js', 'serve', '--port', '0', '--data', data],
          { cwd: app, env, ready: /listening on (http:\/\/\S+)/ },
        );
        running.push(served);
        const page = await fetch(`${served.url}/`);
        expect(page.status).toBe(200);
        expect(await page.text()).toMatch(/<script type="module"[^>]+src="\/assets\/[^"]+\.js"/);
        running.push(await expectSyncedToolCall(app, served.url));
      } finally {
        for (const served of running.splice(0).reverse()) await served.stop();
        rmSync(data, { recursive: true, force: true });
      }
    },
  );
});
