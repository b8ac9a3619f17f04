// How the benchmarks bundle code for a browser, as an app's bundler would: one esbuild setup (minified ES2022
// modules for the browser platform), so every size and load time they report is of the same kind of build.
import type { BuildOptions } from 'esbuild';

export const BROWSER_BUILD = {
  bundle: true,
  minify: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  logLevel: 'silent',
} as const satisfies BuildOptions;
