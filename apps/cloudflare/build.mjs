// Bundles the example worker the way wrangler does with `nodejs_compat` (Node built-ins left to the runtime), for
// the tests and benchmarks that run it in the npm workerd without wrangler. `node apps/cloudflare/build.mjs [out]`.
import { builtinModules } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));

// prom-client (the server's metrics) requires bare built-ins from CommonJS. wrangler maps those for you; here
// util becomes node:util and the rest, which only its Node-only parts call (push gateway, process metrics), empty.
const bareBuiltins = {
  name: 'bare-node-builtins',
  setup(b) {
    const bare = new RegExp(`^(${builtinModules.filter((m) => !m.includes('/')).join('|')})$`);
    b.onResolve({ filter: bare }, (args) => ({ path: args.path, namespace: 'builtin' }));
    b.onLoad({ filter: /.*/, namespace: 'builtin' }, (args) => ({
      contents:
        args.path === 'util' ? "import * as m from 'node:util'; module.exports = m;" : 'module.exports = {};',
      loader: 'js',
    }));
  },
};

/** Bundles `src/index.ts` to `outfile`; `source`: read @cairn/* from their TypeScript sources (the tests). */
export async function bundleWorker(outfile, { source = true } = {}) {
  await build({
    entryPoints: [join(here, 'src/index.ts')],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    conditions: [...(source ? ['@cairn/source'] : []), 'workerd', 'worker', 'browser'],
    mainFields: ['browser', 'module', 'main'],
    external: ['node:*', 'cloudflare:*'],
    plugins: [bareBuiltins],
    logLevel: 'warning',
  });
  return outfile;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = resolve(process.argv[2] ?? join(here, 'dist/worker.js'));
  await bundleWorker(out);
  console.log(out);
}
