// Proves that @cairn/core's browser entries bundle for a browser target with no Node built-ins, and prints their
// min+gzip sizes. The fs adapter is Node-only by design and is not checked here. The agent-framework adapters
// bundle with their framework left to the app (it is an optional peer), and no other entry may reach a framework.
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const entries = {
  '@cairn/core': 'packages/core/src/index.ts',
  '@cairn/core/indexeddb': 'packages/core/src/adapters/indexeddb.ts',
  '@cairn/core/websocket': 'packages/core/src/adapters/websocket.ts',
  '@cairn/core/tokenizer': 'packages/core/src/tokenizers/cl100k.ts',
  '@cairn/core/ai': 'packages/core/src/agents/ai.ts',
  '@cairn/core/openai-agents': 'packages/core/src/agents/openai-agents.ts',
  '@cairn/core/langchain': 'packages/core/src/agents/langchain.ts',
  '@cairn/core/mastra': 'packages/core/src/agents/mastra.ts',
  '@cairn/core/anthropic': 'packages/core/src/agents/anthropic.ts',
};
const FRAMEWORKS = [
  'ai',
  '@openai/agents',
  '@langchain/core',
  'langchain',
  '@mastra/core',
  '@anthropic-ai/sdk',
];
const CLASSIC_ZOD_FREE = new Set(['@cairn/core', '@cairn/core/indexeddb', '@cairn/core/websocket']);
const frameworkOf = (path) =>
  FRAMEWORKS.find((f) => path === f || path.startsWith(`${f}/`) || path.includes(`node_modules/${f}/`));
let failed = false;
for (const [name, entry] of Object.entries(entries)) {
  try {
    const result = await build({
      entryPoints: [entry],
      bundle: true,
      write: false,
      minify: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      metafile: true,
      logLevel: 'silent',
      external: FRAMEWORKS.flatMap((f) => [f, `${f}/*`]),
    });
    const nodeInputs = Object.keys(result.metafile.inputs).filter(
      (p) => p.startsWith('node:') || p.includes('(disabled)'),
    );
    if (nodeInputs.length > 0) throw new Error(`pulls in Node-only modules: ${nodeInputs.join(', ')}`);
    const imported = result.metafile.outputs[Object.keys(result.metafile.outputs)[0]].imports
      .map((i) => frameworkOf(i.path))
      .filter(Boolean);
    if (!entry.includes('/agents/') && imported.length > 0) {
      throw new Error(
        `imports an agent framework (${[...new Set(imported)].join(', ')}); only its adapter may`,
      );
    }
    // Classic zod carries every method of every schema and toJSONSchema (about 17 KiB min+gzip); the app-facing
    // entries validate with zod/mini (docs/decisions/048, 057).
    const classic = Object.entries(result.metafile.outputs[Object.keys(result.metafile.outputs)[0]].inputs)
      .filter(([path, input]) => path.includes('zod/v4/classic/') && input.bytesInOutput > 0)
      .map(([path]) => path);
    if (CLASSIC_ZOD_FREE.has(name) && classic.length > 0) {
      throw new Error(`bundles classic zod (${classic[0]}); use zod/mini`);
    }
    const code = result.outputFiles[0].contents;
    console.log(
      `${name}: ${(code.length / 1024).toFixed(1)} KiB min, ${(gzipSync(code).length / 1024).toFixed(1)} KiB min+gzip`,
    );
  } catch (error) {
    failed = true;
    const detail = error.errors ? error.errors.map((e) => e.text).join('; ') : error.message;
    console.error(`${name} does not bundle for the browser: ${detail}`);
  }
}
if (failed) process.exit(1);
console.log('browser bundle check: passed');
