// The IndexedDB cold load in real Chromium, run by the storage benchmark itself: lib/idb-cold-load.ts bundled
// for the browser (esbuild), served on 127.0.0.1 at a free port, Debian's Chromium through playwright-core with a
// new, empty profile on disk (so IndexedDB is the real, LevelDB-backed store, not an incognito in-memory one).
// The history is written once; each timed load runs in a freshly loaded page (new JS heap, nothing cached in the
// page), as an app starting up.
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { chromium, type Page } from 'playwright-core';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../apps/demo/test/harness.js';
import { BROWSER_BUILD } from './browser-build.js';
import type * as IdbModule from './idb-cold-load.js';
import type { IdbColdLoadResult, IdbFirstRead, IdbLoad, IdbWritten } from './idb-cold-load.js';

export { CHROMIUM_PATH };

const here = dirname(fileURLToPath(import.meta.url));

declare global {
  // The page's handle on the bundled module.
  var cairnIdb: typeof IdbModule | undefined;
}

async function bundle(): Promise<string> {
  const result = await build({
    ...BROWSER_BUILD,
    stdin: {
      contents: "import * as m from './idb-cold-load.ts'; globalThis.cairnIdb = m;",
      resolveDir: here,
      sourcefile: 'chromium-idb-entry.ts',
      loader: 'ts',
    },
    write: false,
  });
  return result.outputFiles[0]!.text;
}

function serve(script: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.url === '/idb.js') {
      res.writeHead(200, { 'content-type': 'text/javascript', 'cache-control': 'no-store' });
      res.end(script);
    } else if (req.url === '/') {
      res.writeHead(200, { 'content-type': 'text/html', 'cache-control': 'no-store' });
      res.end('<!doctype html><meta charset="utf-8"><script type="module" src="/idb.js"></script>');
    } else {
      res.writeHead(404).end();
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}/`,
        close: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
  });
}

async function freshPage(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.waitForFunction(() => globalThis.cairnIdb !== undefined);
}

/** Writes the history in Chromium's IndexedDB, then times `loads` cold loads (after one warm-up), each in a new page. */
export async function chromiumIdbColdLoad(options: {
  tasks: number;
  updates: number;
  loads: number;
  onProgress?: (message: string) => void;
}): Promise<IdbColdLoadResult> {
  if (!fs.existsSync(CHROMIUM_PATH))
    throw new Error(`no Chromium at ${CHROMIUM_PATH} (apt-get install chromium)`);
  const script = await bundle();
  const server = await serve(script);
  const profile = fs.mkdtempSync(join(os.tmpdir(), 'cairn-bench-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    args: CHROMIUM_ARGS,
  });
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    const shape = { name: 'bench-cold', tasks: options.tasks, updates: options.updates };
    await freshPage(page, server.url);
    options.onProgress?.(
      `Chromium ${context.browser()?.version() ?? ''}: writing ${options.updates} updates`,
    );
    const written = await page.evaluate(
      (o): Promise<IdbWritten> => globalThis.cairnIdb!.idbWriteHistory({ indexedDB, ...o }),
      shape,
    );
    options.onProgress?.('Chromium: cold loads, each in a fresh page');
    const loads: IdbLoad[] = [];
    const parts: Array<{ read: number; apply: number }> = [];
    const firstReads: IdbFirstRead[] = [];
    for (let i = 0; i < options.loads + 1; i++) {
      await freshPage(page, server.url);
      const load = await page.evaluate(
        (name): Promise<IdbLoad> => globalThis.cairnIdb!.idbLoadOnce({ indexedDB, name }),
        shape.name,
      );
      await freshPage(page, server.url);
      const part = await page.evaluate(
        (name) => globalThis.cairnIdb!.idbLoadParts({ indexedDB, name }),
        shape.name,
      );
      await freshPage(page, server.url);
      const firstRead = await page.evaluate(
        (name) => globalThis.cairnIdb!.idbFirstReadOnce({ indexedDB, name }),
        shape.name,
      );
      if (i === 0) continue; // the first is a warm-up (the browser's own first IndexedDB open)
      loads.push(load);
      parts.push(part);
      firstReads.push(firstRead);
    }
    const where = `Chromium ${context.browser()?.version() ?? (await page.evaluate(() => navigator.userAgent))}, headless, IndexedDB on disk`;
    return await page.evaluate(([w, s, wr, l, p, f]) => globalThis.cairnIdb!.idbResult(w, s, wr, l, p, f), [
      where,
      { tasks: options.tasks, updates: options.updates },
      written,
      loads,
      parts,
      firstReads,
    ] as const);
  } finally {
    await context.close().catch(() => undefined);
    await server.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}
