// The root entry beyond Node: one fetch handler (fixtures/app/edge.mjs) makes a plan, dispatches a tool call and
// answers with the rendered plan, in Cloudflare's workerd (bundled for it, as wrangler would), in Deno and in Bun
// (both loading the installed packages from node_modules, unbundled). Each runtime is the binary its npm
// package ships.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { bin, freePort, run, type Served, startProcess, userEnv } from './lib.js';

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

describe('the root entry in other runtimes', () => {
  it('runs as a Cloudflare Worker in workerd', async () => {
    const bundle = join(base, 'edge-worker.js');
    await build({
      entryPoints: [join(app, 'edge.mjs')],
      absWorkingDir: app,
      outfile: bundle,
      bundle: true,
      format: 'esm',
      platform: 'neutral',
      target: 'es2022',
      conditions: ['workerd', 'worker', 'browser'],
      mainFields: ['browser', 'module', 'main'],
      logLevel: 'silent',
    });
    const port = await freePort();
    const config = join(base, 'workerd.capnp');
    writeFileSync(
      config,
      `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .edge) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const edge :Workerd.Worker = (
  modules = [ (name = "edge.js", esModule = embed "edge-worker.js") ],
  compatibilityDate = "2025-09-01",
);
`,
    );
    console.log(`workerd ${await version(bin('workerd'), ['--version'])}`);
    expectRenderedPlan(await answer(bin('workerd'), ['serve', config], port));
  });

  it('runs under Deno (deno serve)', async () => {
    console.log(await version(bin('deno'), ['--version']));
    const port = await freePort();
    const env = userEnv({ DENO_NO_UPDATE_CHECK: '1', DENO_DIR: join(base, 'deno-dir') });
    const args = ['serve', '--allow-env', '--host', '127.0.0.1', '--port', String(port), 'edge.mjs'];
    expectRenderedPlan(await answer(bin('deno'), args, port, env));
  });

  it('runs under Bun (its default-export server)', async () => {
    console.log(`bun ${await version(bin('bun'), ['--version'])}`);
    const port = await freePort();
    const env = userEnv({ BUN_PORT: String(port), NODE_ENV: 'production' });
    expectRenderedPlan(await answer(bin('bun'), ['edge.mjs'], port, env));
  });
});
