// What the demo's end-to-end tests share: one build of the demo (shared by test files through a lock, rebuilt
// only when a source is newer), the real sync server as a child process on a free port with a temp data dir,
// Debian's Chromium through playwright-core, and helpers that wait on selectors and page state, never on time.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { SOURCE_CLI_ARGS } from '../../../test/source-cli.js';

const here = dirname(fileURLToPath(import.meta.url));
export const ROOT = resolve(here, '../../..');
const DEMO = join(ROOT, 'apps/demo');
export const DIST = join(DEMO, 'dist');
const STAMP = join(DIST, '.built');
const LOCK = join(DEMO, '.build-lock');
export const ARTIFACTS = join(ROOT, '.test-results/demo');

/** Debian's Chromium (the test command installs it when missing); nothing downloads a browser. */
export const CHROMIUM_PATH = '/usr/bin/chromium';
/** Headless, and quiet on a machine with no network beyond loopback. Shared with the browser benchmarks. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

function newest(path: string): number {
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  let max = 0;
  for (const entry of readdirSync(path)) {
    if (['node_modules', 'dist', 'test', '.build-lock'].includes(entry)) continue;
    max = Math.max(max, newest(join(path, entry)));
  }
  return max;
}

function isFresh(): boolean {
  if (!existsSync(STAMP)) return false;
  const sources = Math.max(newest(DEMO), newest(join(ROOT, 'packages/core/src')));
  return statSync(STAMP).mtimeMs >= sources;
}

function run(command: string, args: string[], cwd: string): Promise<void> {
  return new Promise((done, fail) => {
    // A production build, as `pnpm start` makes it (vitest sets NODE_ENV=test).
    const env = { ...process.env, NODE_ENV: 'production' };
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', fail);
    child.on('exit', (code) =>
      code === 0 ? done() : fail(new Error(`${command} ${args.join(' ')} exited ${code}: ${stderr}`)),
    );
  });
}

/** Builds the demo once for every test file that asks (a lock directory serialises concurrent asks). */
export async function ensureDemoBuilt(): Promise<void> {
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      // Another test file is building: wait for its lock to go, then check again.
      await new Promise<void>((done) => {
        const timer = setInterval(() => {
          if (!existsSync(LOCK)) {
            clearInterval(timer);
            done();
          }
        }, 100);
      });
    }
  }
  try {
    if (isFresh()) return;
    await run(
      process.execPath,
      [join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'],
      DEMO,
    );
    writeFileSync(STAMP, new Date().toISOString());
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

export interface RunningServer {
  url: string;
  port: number;
  dataDir: string;
  /** Stops it (SIGTERM: it flushes every plan) and resolves once the process has exited. */
  stop(): Promise<void>;
}

/** The real server (`cairn serve`) as a child process, serving the built demo. */
export async function startServer(options: { port?: number; dataDir?: string } = {}): Promise<RunningServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'cairn-demo-'));
  const child: ChildProcess = spawn(
    process.execPath,
    [...SOURCE_CLI_ARGS, 'serve', '--port', String(options.port ?? 0), '--data', dataDir, '--static', DIST],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const url = await new Promise<string>((done, fail) => {
    let out = '';
    child.stdout?.on('data', (chunk) => {
      out += chunk;
      const found = /listening on (http:\/\/\S+)/.exec(out);
      if (found) done(found[1]!);
    });
    child.on('exit', (code) => fail(new Error(`cairn serve exited ${code} before listening: ${stderr}`)));
  });
  const exited = new Promise<void>((done) => child.on('exit', () => done()));
  return {
    url,
    port: Number(new URL(url).port),
    dataDir,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
}

export interface Person {
  context: BrowserContext;
  page: Page;
  name: string;
  id: string;
  /** Messages of any alert/confirm the page opened (an XSS payload that ran would land here). */
  dialogs: string[];
}

/** A fresh browser profile (its own IndexedDB) for one person, with a fixed identity, on `/?plan=ID`. */
export async function openAs(
  browser: Browser,
  url: string,
  planId: string,
  who: { id: string; name: string; width?: number; height?: number },
  /** Runs on the fresh page before it loads the demo (to set up what must precede the first load). */
  beforeLoad?: (page: Page) => Promise<void>,
): Promise<Person> {
  const context = await browser.newContext({
    viewport: { width: who.width ?? 1280, height: who.height ?? 800 },
  });
  await context.addInitScript(
    (identity) => {
      localStorage.setItem('cairn.identity', JSON.stringify(identity));
    },
    { id: who.id, name: who.name },
  );
  context.setDefaultTimeout(8_000);
  const page = await context.newPage();
  const dialogs: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  await beforeLoad?.(page);
  await goto(page, url, planId);
  return { context, page, name: who.name, id: who.id, dialogs };
}

export async function goto(page: Page, url: string, planId: string): Promise<void> {
  await page.goto(`${url}/?plan=${encodeURIComponent(planId)}`);
  await page.getByLabel('New task').waitFor();
}

/** A task's row, found by its checkbox, whose accessible name is the task's title. */
export function row(page: Page, title: string): Locator {
  return page.locator('.task', { has: page.getByRole('checkbox', { name: title, exact: true }) });
}

/** A row by task id: stays the same row while its title changes. */
export async function stableRow(page: Page, title: string): Promise<Locator> {
  const id = await row(page, title).getAttribute('data-id');
  return page.locator(`.task[data-id="${id}"]`);
}

export async function addTask(page: Page, title: string): Promise<void> {
  await page.getByLabel('New task').fill(title);
  await page.getByLabel('New task').press('Enter');
  await row(page, title).waitFor();
}

/** Waits until the sync state shows `state` (saved, offline, syncing, connecting). */
export async function syncState(page: Page, state: string): Promise<void> {
  await page.locator(`.sync[data-state="${state}"]`).waitFor();
}

/** Waits until an element's `value` is `expected`. */
export async function valueIs(locator: Locator, expected: string): Promise<void> {
  await locator.evaluate(
    (el, want) =>
      new Promise<void>((done) => {
        const input = el as HTMLInputElement;
        const check = () => {
          if (input.value === want) {
            done();
            return true;
          }
          return false;
        };
        if (check()) return;
        // Values change by script (remote edits), not by events: check on every frame until it matches.
        const tick = () => {
          if (!check()) requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
      }),
    expected,
  );
}

/** Waits until the agent has answered with text `count` times in this page's chat. */
export async function agentReplies(page: Page, count: number): Promise<string> {
  const replies = page.locator('li.msg-assistant .msg-text, li.msg-system .msg-text');
  await replies.nth(count - 1).waitFor();
  return (await replies.nth(count - 1).textContent()) ?? '';
}

export async function say(page: Page, text: string): Promise<void> {
  await page.getByLabel('Message').fill(text);
  await page.getByLabel('Message').press('Enter');
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: false });
}

/**
 * Lets the demo page call a stand-in model endpoint from another origin (`cors: false`: as an endpoint that sends
 * no CORS headers, whose answer the browser keeps from the page). True when it answered a preflight itself.
 */
export function answerCors(req: IncomingMessage, res: ServerResponse, cors = true): boolean {
  if (cors) {
    res.setHeader('access-control-allow-origin', '*');
    res.setHeader('access-control-allow-headers', 'content-type, authorization');
  }
  if (req.method !== 'OPTIONS') return false;
  res.writeHead(204).end();
  return true;
}
