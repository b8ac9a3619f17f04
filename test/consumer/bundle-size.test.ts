// What the README's example costs a browser page: Vite builds it from the installed packages (yjs included, as a
// page ships it) and its JavaScript, minified and gzipped, must stay within the budget README.md states.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, inject, it } from 'vitest';
import { ROOT, run } from './lib.js';

/**
 * The budget in KiB, min+gzip, with yjs: 56.5 measured plus a small margin. The example imports one tool family
 * from @cairn/core/tools and one render format from @cairn/core/render, validates with zod/mini and ships the
 * family's JSON Schemas generated ahead (docs/decisions/048); issue 27's aim is 45.
 */
const README_EXAMPLE_BUDGET_KIB = 57.5;

const { app } = inject('consumer');

describe("the README's example in a Vite build", () => {
  it(`is at most ${README_EXAMPLE_BUDGET_KIB} KiB min+gzip with yjs`, async () => {
    const outDir = join(app, 'web-readme/dist');
    await run(
      process.execPath,
      [
        join(ROOT, 'node_modules/vite/bin/vite.js'),
        'build',
        'web-readme',
        '--outDir',
        outDir,
        '--emptyOutDir',
      ],
      { cwd: app, timeoutMs: 180_000 },
    );
    const assets = join(outDir, 'assets');
    const js = readdirSync(assets).filter((file) => file.endsWith('.js'));
    const code = Buffer.concat(js.map((file) => readFileSync(join(assets, file))));
    // The example's own strings, so the figure is of this example and not of an empty build.
    expect(code.toString('utf8')).toContain('Write post');
    const kib = gzipSync(code, { level: 9 }).byteLength / 1024;
    console.log(
      `README example: ${(code.byteLength / 1024).toFixed(1)} KiB min, ${kib.toFixed(1)} KiB min+gzip`,
    );
    expect(kib).toBeLessThanOrEqual(README_EXAMPLE_BUDGET_KIB);
  });
});
