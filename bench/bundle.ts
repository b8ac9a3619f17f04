// Benchmark 7: what @cairn/core's root entry, as built for publishing (dist/index.js), costs a browser page,
// minified and gzipped (esbuild, as scripts/check-browser-bundle.mjs builds it), with yjs left to the page and
// with yjs included, against
// @automerge/automerge's browser entry with its WebAssembly module counted (gzipped, as a server would send it).
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build, type Metafile } from 'esbuild';
import { BROWSER_BUILD } from './lib/browser-build.js';
import { type BenchOutcome, bytes, type Row, sizeRatio } from './lib/report.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

interface Bundle {
  min: number;
  gzip: number;
  /** Bytes in the minified output by package (own sources as "@cairn/core"). */
  byPackage: Map<string, number>;
  /** Bytes in the minified output by Cairn module (`src/…` of @cairn/core, or `dist/…` when built). */
  byModule: Map<string, number>;
  /** Other files the bundle loads (wasm), gzipped. */
  assetsGzip: number;
  assetsRaw: number;
}

function packageOf(input: string): string {
  const m = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/.exec(input);
  if (m) return m[1]!;
  if (input.startsWith('packages/core/')) return '@cairn/core';
  return input;
}

/** The first JavaScript block of the README's "Install" section (as the consumer suite reads it). */
function readmeExample(): string {
  const readme = fs.readFileSync(join(root, 'README.md'), 'utf8');
  const block = /```js\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('\n## Install\n')));
  if (!block?.[1]) throw new Error('README.md has no ```js block in its "Install" section');
  return block[1];
}

async function bundle(contents: string, external: string[] = []): Promise<Bundle> {
  const outdir = fs.mkdtempSync(join(root, 'bench', '.results', 'bundle-'));
  try {
    const result = await build({
      ...BROWSER_BUILD,
      stdin: { contents, resolveDir: root, sourcefile: 'entry.js', loader: 'js' },
      write: true,
      outdir,
      external,
      metafile: true,
      loader: { '.wasm': 'file' },
      assetNames: '[name]',
    });
    const byPackage = new Map<string, number>();
    const byModule = new Map<string, number>();
    const meta: Metafile = result.metafile;
    let js: Uint8Array | null = null;
    let assetsGzip = 0;
    let assetsRaw = 0;
    for (const [path, out] of Object.entries(meta.outputs)) {
      const data = fs.readFileSync(join(root, path));
      if (path.endsWith('.js')) {
        js = data;
        for (const [input, info] of Object.entries(out.inputs)) {
          const pkg = packageOf(input);
          byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + info.bytesInOutput);
          if (pkg === '@cairn/core') byModule.set(input.slice('packages/core/'.length), info.bytesInOutput);
        }
      } else if (!path.endsWith('.map')) {
        assetsRaw += data.byteLength;
        assetsGzip += gzipSync(data, { level: 9 }).byteLength;
      }
    }
    if (!js) throw new Error('no JavaScript output');
    return {
      min: js.byteLength,
      gzip: gzipSync(js, { level: 9 }).byteLength,
      byPackage,
      byModule,
      assetsGzip,
      assetsRaw,
    };
  } finally {
    fs.rmSync(outdir, { recursive: true, force: true });
  }
}

export async function run(): Promise<BenchOutcome> {
  fs.mkdirSync(join(root, 'bench', '.results'), { recursive: true });
  // What a user installs: the package's own build, made fresh so the figure matches the sources.
  const built = spawnSync(process.execPath, [join(root, 'scripts/build-package.mjs')], {
    cwd: join(root, 'packages/core'),
    stdio: 'inherit',
  });
  if (built.status !== 0) throw new Error('building @cairn/core failed');
  const core = 'export * from "./packages/core/dist/index.js";';
  const without = await bundle(core, ['yjs']);
  const withYjs = await bundle(core);
  const yjsAlone = await bundle('export * from "yjs";');
  // The README's example as a page ships it: only what it uses, yjs included (the consumer suite holds its Vite
  // build to a budget, test/consumer/bundle-size.test.ts).
  const example = readmeExample()
    .replaceAll("'@cairn/core'", "'./packages/core/dist/index.js'")
    .replaceAll("'@cairn/core/tools'", "'./packages/core/dist/tools/index.js'")
    .replaceAll("'@cairn/core/render'", "'./packages/core/dist/render/index.js'");
  const readme = await bundle(example);
  // Cairn's own code in it: every dependency left out (issue 27's target for it is 17 KiB).
  const readmeOwn = await bundle(example, ['yjs', 'lib0', 'lib0/*', 'zod', 'zod/*', 'fractional-indexing']);
  const automerge = await bundle('export * from "@automerge/automerge";');
  const automergeTotal = automerge.gzip + automerge.assetsGzip;
  const rows: Row[] = [
    {
      measure: '@cairn/core root entry, min+gzip, yjs excluded (the page already has it)',
      cairn: bytes(without.gzip),
      baselineName: '@automerge/automerge: JS + its .wasm, gzipped',
      baseline: bytes(automergeTotal),
      ratio: sizeRatio(without.gzip, automergeTotal),
      target: '',
      met: null,
    },
    {
      measure: '@cairn/core root entry, min+gzip, yjs included',
      cairn: bytes(withYjs.gzip),
      baselineName: '@automerge/automerge: JS + its .wasm, gzipped',
      baseline: bytes(automergeTotal),
      ratio: sizeRatio(withYjs.gzip, automergeTotal),
      target: '',
      met: null,
    },
    {
      measure: '@cairn/core root entry, minified, yjs included',
      cairn: bytes(withYjs.min),
      baselineName: '@automerge/automerge: JS + .wasm, minified / raw',
      baseline: bytes(automerge.min + automerge.assetsRaw),
      ratio: sizeRatio(withYjs.min, automerge.min + automerge.assetsRaw),
      target: '',
      met: null,
    },
    {
      measure: "the README's example, min+gzip, yjs included (tree-shaken)",
      cairn: bytes(readme.gzip),
      baselineName: '@automerge/automerge: JS + its .wasm, gzipped',
      baseline: bytes(automergeTotal),
      ratio: sizeRatio(readme.gzip, automergeTotal),
      target: '≤ 45 KiB',
      met: readme.gzip <= 45 * 1024,
    },
    {
      measure: "the README's example, Cairn's own code only, min+gzip",
      cairn: bytes(readmeOwn.gzip),
      baselineName: '',
      baseline: '',
      ratio: '',
      target: '≤ 17 KiB',
      met: readmeOwn.gzip <= 17 * 1024,
    },
    {
      measure: 'for scale: yjs alone, min+gzip',
      cairn: '',
      baselineName: 'yjs 13 (export *)',
      baseline: bytes(yjsAlone.gzip),
      ratio: '',
      target: '',
      met: null,
    },
  ];
  const top = [...withYjs.byPackage]
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6)
    .map(([pkg, n]) => `${pkg} ${bytes(n)}`)
    .join(', ');
  return {
    id: 'bundle',
    number: 7,
    title: 'Bundle size',
    method:
      'The built root entry (`packages/core/dist/index.js`, what npm installs), bundled by esbuild 0.28, `bundle`, `minify`, ESM, platform browser, target es2022, every export of the entry kept ' +
      '(`export * from …`, so nothing is tree-shaken away); gzip level 9. Automerge is bundled from its browser ' +
      'entry, which loads `automerge_wasm_bg.wasm` (counted gzipped, as a server would send it).',
    rows,
    notes: [
      `Minified bytes by package, yjs included: ${top}.`,
      `Automerge: ${bytes(automerge.gzip)} of JavaScript and ${bytes(automerge.assetsGzip)} of WebAssembly (${bytes(automerge.assetsRaw)} raw) gzipped.`,
      `The README's example by package (minified): ${[...readme.byPackage]
        .filter(([, n]) => n > 0)
        .sort((a, b) => b[1] - a[1])
        .map(([pkg, n]) => `${pkg} ${bytes(n)}`)
        .join(
          ', ',
        )}. It imports the one tool family it offers from @cairn/core/tools and the one render format it shows from @cairn/core/render; the plan and the families validate with zod/mini and the families' JSON Schemas are generated ahead (docs/decisions/048).`,
      `Cairn's own modules in the README's example (minified), the largest: ${[...readmeOwn.byModule]
        .filter(([, n]) => n > 0)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 12)
        .map(([path, n]) => `${path} ${bytes(n)}`)
        .join(', ')}.`,
      'Before docs/decisions/048 (measured 2026-12-03, the README example then imported createToolkit and used classic zod): the README example 81.7 KiB.',
      'Before docs/decisions/057 (measured 2026-12-04 12:45 UTC, learning/ then validated with classic zod, which `resolveContext` reaches): the root entry 92.2 KiB with yjs, 71.7 KiB without.',
      "The root entry's rows keep every export (createToolkit carries all six families); only the README rows are tree-shaken. The targets are issue 27's.",
    ],
  };
}
