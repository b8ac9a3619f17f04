// The packed `@cairn/server/cloudflare` as a user deploys it: a worker that re-exports Cairn's Durable Object and
// fetch handler (fixtures/app/cloudflare-worker.mjs), bundled from the installed packages as wrangler would and
// run in workerd with the object's SQLite on disk; a Node client of the installed packages syncs a plan, and its
// acknowledged edit is there after the runtime, and so the object, restarts.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { bin, bundleForWorkerd, freePort, run, type Served, startProcess, userEnv } from './lib.js';

const { app, base } = inject('consumer');
const SECRET = 'consumer-edge-secret-consumer-edge-secret-0123';
let workerd: Served | null = null;
afterAll(() => workerd?.stop());

/** Bundles the user's worker as wrangler does and writes a workerd config binding its object to SQLite on disk. */
async function prepareWorker(port: number): Promise<string> {
  const dir = join(base, 'cloudflare');
  mkdirSync(join(dir, 'storage'), { recursive: true });
  await bundleForWorkerd(join(app, 'cloudflare-worker.mjs'), join(dir, 'worker.js'));
  const config = join(dir, 'config.capnp');
  writeFileSync(
    config,
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .cairn), (name = "storage", disk = (writable = true)) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const cairn :Workerd.Worker = (
  modules = [ (name = "worker.js", esModule = embed "worker.js") ],
  compatibilityDate = "2026-11-01",
  durableObjectNamespaces = [ (className = "CairnPlanObject", uniqueKey = "cairn-plan-v1", enableSql = true) ],
  durableObjectStorage = (localDisk = "storage"),
  bindings = [
    (name = "CAIRN_PLANS", durableObjectNamespace = "CairnPlanObject"),
    (name = "CAIRN_SECRET", text = ${JSON.stringify(SECRET)}),
  ],
);
`,
  );
  return config;
}

/** Starts workerd on `port` with the storage directory beside the config, ready once /healthz answers. */
async function startWorkerd(config: string, port: number): Promise<Served> {
  const storage = join(base, 'cloudflare', 'storage');
  const served = await startProcess(bin('workerd'), ['serve', config, '-d', `storage=${storage}`], {
    cwd: app,
  });
  await vi.waitFor(
    async () => {
      if (served.child.exitCode !== null) throw new Error(`workerd exited ${served.child.exitCode}`);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    },
    { timeout: 60_000, interval: 100 },
  );
  return served;
}

function client(mode: 'write' | 'read', url: string, plan: string, title = '') {
  return run(process.execPath, ['cloudflare-client.mjs', mode, url, plan, title], {
    cwd: app,
    env: userEnv({ CAIRN_SECRET: SECRET }),
    timeoutMs: 60_000,
  });
}

describe('@cairn/server/cloudflare from the packed package', () => {
  it('hosts a plan in a Durable Object in workerd: a client syncs it, and an acknowledged edit survives a restart', async () => {
    const port = await freePort();
    const config = await prepareWorker(port);
    const url = `ws://127.0.0.1:${port}`;
    workerd = await startWorkerd(config, port);
    const title = 'Stored in the object';
    expect((await client('write', url, 'consumer:edge', title)).stdout.trim()).toBe('acknowledged');

    await workerd.stop();
    workerd = await startWorkerd(config, port);
    const read = await client('read', url, 'consumer:edge');
    expect(JSON.parse(read.stdout.trim())).toEqual([title]);
  });
});
