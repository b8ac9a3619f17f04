// Vite config of the demo: the app (index.html), the benchmark page in `--mode bench`, a service worker that
// precaches the built shell so a reload works while the server is down, and a dev proxy to a running server.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultClientConditions, defineConfig, type Plugin } from 'vite';

const here = dirname(fileURLToPath(import.meta.url));

/** Emits sw.js with the list of built files to precache, named by a hash of that list. */
function serviceWorker(): Plugin {
  return {
    name: 'cairn-service-worker',
    apply: 'build',
    generateBundle(_options, bundle) {
      const assets = Object.keys(bundle)
        .filter((file) => !file.endsWith('.map') && file.endsWith('.html') === false)
        .map((file) => `/${file}`);
      const version = hash(assets.join('\n'));
      const template = readFileSync(join(here, 'src/service-worker.js'), 'utf8');
      this.emitFile({
        type: 'asset',
        fileName: 'sw.js',
        source: template
          .replace('self.__CAIRN_ASSETS__', JSON.stringify(['/', ...assets]))
          .replace('self.__CAIRN_VERSION__', JSON.stringify(version)),
      });
    },
  };
}

function hash(text: string): string {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return (h >>> 0).toString(36);
}

const server = process.env.CAIRN_SERVER ?? 'http://127.0.0.1:1234';

export default defineConfig(({ command, mode }) => ({
  root: here,
  // The demo runs on the workspace's TypeScript sources, not on the packages' builds.
  resolve: { conditions: ['@cairn/source', ...defaultClientConditions] },
  // The service worker only exists in a build (the dev server serves sources), whatever NODE_ENV says.
  define: { __OFFLINE_SHELL__: JSON.stringify(command === 'build' && mode !== 'bench') },
  build: {
    // The benchmark's page is a build artifact like test results (git and the linter ignore .test-results/).
    outDir: mode === 'bench' ? join(here, '../../.test-results/demo-bench') : 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
    rolldownOptions: {
      input: mode === 'bench' ? { bench: join(here, 'bench.html') } : { main: join(here, 'index.html') },
    },
  },
  plugins: mode === 'bench' ? [] : [serviceWorker()],
  server: {
    proxy: {
      '/sync': { target: server, ws: true },
      '/api': { target: server },
    },
  },
}));
