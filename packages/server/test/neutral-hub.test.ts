// The hub entry (@cairn/server/hub) is runtime-neutral: bundled by esbuild for `--platform=neutral` with the
// conditions a Worker build uses, it imports no Node built-in, so a Durable Object, Deno or Bun can host it. The
// check itself is shown to fail on an entry a Node import crept into.
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const NODE_BUILTINS = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));

/** Every Node built-in the bundle of `entry` imports, with the module that imports it. */
async function nodeImportsOf(entry: string): Promise<string[]> {
  const found: string[] = [];
  await build({
    entryPoints: [fileURLToPath(new URL(entry, import.meta.url))],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['@cairn/source', 'workerd', 'worker'],
    logLevel: 'silent',
    plugins: [
      {
        name: 'node-builtins',
        setup(bundle) {
          bundle.onResolve({ filter: /.*/ }, (args) => {
            if (!NODE_BUILTINS.has(args.path) && !args.path.startsWith('node:')) return undefined;
            found.push(`${args.path} (imported by ${args.importer.split('/node_modules/').at(-1)})`);
            return { path: args.path, external: true };
          });
        },
      },
    ],
  });
  return found;
}

describe('@cairn/server/hub', () => {
  it('bundles for a neutral platform without any Node built-in', async () => {
    expect(await nodeImportsOf('../src/hub/index.ts')).toEqual([]);
  }, 60_000);

  it('the check refuses an entry that imports one', async () => {
    const found = await nodeImportsOf('./fixtures/hub-with-node-import.ts');
    expect(found).toEqual([expect.stringMatching(/^node:fs \(imported by .*hub-with-node-import\.ts\)$/)]);
  }, 60_000);
});
