// A browser app on the installed packages: Vite builds it, the installed `cairn serve` serves it, and in Debian's
// Chromium it stores a plan in IndexedDB, loads it again after a reload and syncs it with the server. A second
// build imports the Node-only disk adapter by mistake and must say so when it loads.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launchBrowser } from '../../apps/demo/test/harness.js';
import { ROOT, run, type Served, startCairn } from './lib.js';

const { app } = inject('consumer');
const vite = join(ROOT, 'node_modules/vite/bin/vite.js');
const dist = join(app, 'web/dist');
const PLAN = 'consumer:browser';

async function build(root: string, outDir: string, base: string): Promise<void> {
  await run(process.execPath, [vite, 'build', root, '--outDir', outDir, '--base', base, '--emptyOutDir'], {
    cwd: app,
    timeoutMs: 180_000,
  });
}

let server: Served;
let browser: Awaited<ReturnType<typeof launchBrowser>>;

beforeAll(async () => {
  await build(join(app, 'web'), dist, '/');
  await build(join(app, 'web-node-only'), join(dist, 'node-only'), '/node-only/');
  server = await startCairn(app, ['--static', dist]);
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

async function tasksOnServer(): Promise<string[]> {
  const res = await fetch(`${server.url}/api/plans/${encodeURIComponent(PLAN)}/tasks`);
  if (res.status === 404) return [];
  const body = (await res.json()) as { tasks: Array<{ title: string }> };
  return body.tasks.map((task) => task.title);
}

describe('a Vite app in Chromium', () => {
  it('builds with no Node module in the bundle', () => {
    const assets = join(dist, 'assets');
    const js = readdirSync(assets)
      .filter((f) => f.endsWith('.js'))
      .map((f) => readFileSync(join(assets, f), 'utf8'))
      .join('\n');
    expect(js).toContain('Written offline in the browser');
    expect(js).not.toMatch(/["']node:/);
  });

  it('persists a plan to IndexedDB, loads it after a reload, and syncs it with the server', async () => {
    const add = await fetch(`${server.url}/api/plans/${encodeURIComponent(PLAN)}/tools/add_tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tasks: [{ title: 'Added on the server' }] }),
    });
    expect(add.status).toBe(200);

    const context = await browser.newContext();
    const page = await context.newPage();
    const result = async () => {
      await page.waitForFunction(() => (window as { __result?: unknown }).__result, undefined, {
        timeout: 60_000,
      });
      return page.evaluate(() => (window as unknown as { __result: Record<string, unknown> }).__result);
    };
    await page.goto(`${server.url}/?plan=${encodeURIComponent(PLAN)}&step=write`);
    expect(await result()).toEqual({ loaded: [], titles: ['Written offline in the browser'] });
    expect(await tasksOnServer()).toEqual(['Added on the server']);

    await page.goto(`${server.url}/?plan=${encodeURIComponent(PLAN)}&step=sync`);
    const synced = await result();
    expect(synced.loaded).toEqual(['Written offline in the browser']);
    expect(synced.titles).toEqual(
      expect.arrayContaining(['Written offline in the browser', 'Added on the server']),
    );
    expect((await tasksOnServer()).sort()).toEqual(['Added on the server', 'Written offline in the browser']);
    await context.close();
  });

  it('a browser build that imports @cairn/core/fs throws at load, naming what to use instead', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const failed = new Promise<string>((resolve) => page.on('pageerror', (error) => resolve(error.message)));
    await page.goto(`${server.url}/node-only/`);
    const message = await failed;
    expect(message).toContain('@cairn/core/fs runs only in Node');
    expect(message).toContain('persist with @cairn/core/indexeddb');
    await context.close();
  });
});
