// How the repository runs the `cairn` CLI (and other TypeScript children) from its TypeScript sources (tests, benchmarks): tsx compiles on the fly
// and the "@cairn/source" export condition points every @cairn/* import at src/. Users run the built bin.
import { fileURLToPath } from 'node:url';

/** `node` arguments that run a TypeScript file of the repository on its sources; append the file. */
export const SOURCE_NODE_ARGS = ['--conditions=@cairn/source', '--import', 'tsx'];

/** `node` arguments that run `cairn` from sources; append the command and its options. */
export const SOURCE_CLI_ARGS = [
  ...SOURCE_NODE_ARGS,
  fileURLToPath(new URL('../packages/server/bin/cairn.js', import.meta.url)),
];
