// Bundles the example worker as wrangler does (ESM for workerd, the worker conditions), for the tests and
// benchmarks that run it in the npm workerd without wrangler. `node apps/cloudflare/build.mjs [out]`.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));

/**
 * Bundles `src/index.ts` (or `entry`, a test's own worker) to `outfile`; `source`: read @cairn/* from their
 * TypeScript sources (the tests).
 */
export async function bundleWorker(outfile, { source = true, entry = join(here, 'src/index.ts') } = {}) {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    conditions: [...(source ? ['@cairn/source'] : []), 'workerd', 'worker', 'browser'],
    mainFields: ['browser', 'module', 'main'],
    // No Node built-in is left to the runtime: the hub imports none, and one creeping in fails this build.
    external: ['cloudflare:*'],
    logLevel: 'warning',
  });
  return outfile;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = resolve(process.argv[2] ?? join(here, 'dist/worker.js'));
  await bundleWorker(out);
  console.log(out);
}
