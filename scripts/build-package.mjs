// Builds the package in the current directory to dist/: ESM JavaScript, declarations and source maps with the
// TypeScript compiler (docs/decisions/013), then what tsc cannot make: the browser stand-ins of Node-only entries
// and, for @cairn/server, the demo's built assets that `cairn serve` serves by default.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const pkgDir = process.cwd();
const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));

function run(command, args, cwd) {
  const result = spawnSync(command, args, { cwd, stdio: 'inherit' });
  if (result.status !== 0) {
    console.error(`${pkg.name}: ${command} ${args.join(' ')} failed`);
    process.exit(1);
  }
}

rmSync(join(pkgDir, 'dist'), { recursive: true, force: true });
const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
run(process.execPath, [tsc, '-p', 'tsconfig.build.json'], pkgDir);

const ALTERNATIVES = {
  '@cairn/core/fs':
    'In a browser, persist with @cairn/core/indexeddb; in a Worker, sync the plan with @cairn/core/websocket.',
  '@cairn/server': 'Run it with Node (npx cairn serve) and connect to it with @cairn/core/websocket.',
  '@cairn/server/cluster': 'Run it with Node (npx cairn serve --redis URL --postgres URL).',
  '@cairn/mcp': 'Run it with Node (npx cairn mcp).',
};

// An entry whose exports map has a `browser` target is Node-only: a browser or Worker build gets a module with
// the same export names (so the build links) that throws at once, saying what to use instead.
for (const [subpath, target] of Object.entries(pkg.exports)) {
  if (typeof target !== 'object' || !target.browser) continue;
  const name = subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`;
  const names = Object.keys(await import(pathToFileURL(join(pkgDir, target.import)).href));
  const message = `${name} runs only in Node, so a browser or Worker build cannot use it. ${ALTERNATIVES[name]}`;
  // The package's "sideEffects" lists this file, so a bundler keeps the throw; each export throws too.
  const lines = [
    `// ${name} as a browser or Worker build resolves it (the exports map's "browser" condition): Node-only.`,
    `const message = ${JSON.stringify(message)};`,
    'function nodeOnly() {',
    '  throw new Error(message);',
    '}',
    'nodeOnly();',
    ...names.map((n) => (n === 'default' ? 'export default nodeOnly;' : `export const ${n} = nodeOnly;`)),
  ];
  writeFileSync(join(pkgDir, target.browser), `${lines.join('\n')}\n`);
}

// The demo ships inside @cairn/server so that `cairn serve` serves it with nothing else installed.
if (pkg.name === '@cairn/server') {
  const demo = join(root, 'apps/demo');
  run(
    process.execPath,
    [join(root, 'node_modules/vite/bin/vite.js'), 'build', demo, '--logLevel', 'warn'],
    root,
  );
  const out = join(pkgDir, 'dist/demo');
  cpSync(join(demo, 'dist'), out, {
    recursive: true,
    filter: (src) => !src.endsWith('.map') && !src.endsWith('.built'),
  });
  if (!existsSync(join(out, 'index.html'))) throw new Error('the demo build has no index.html');
  console.log(`${pkg.name}: demo copied to ${relative(root, out)}`);
}
console.log(`${pkg.name}: built`);
