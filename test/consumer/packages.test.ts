// The tarballs as a registry would publish them: publint and Are The Types Wrong find nothing, each ships only what
// a user needs, and each manifest carries what a maintainer expects (version, engines, license, peers...).
import { describe, expect, inject, it } from 'vitest';
import { bin, PACKAGES, run } from './lib.js';

const { tarballs, base } = inject('consumer');

async function contents(tarball: string): Promise<string[]> {
  const { stdout } = await run('tar', ['-tzf', tarball], { cwd: base });
  return stdout
    .trim()
    .split('\n')
    .map((path) => path.replace(/^package\//, ''));
}

async function manifest(tarball: string): Promise<Record<string, unknown>> {
  const { stdout } = await run('tar', ['-xzOf', tarball, 'package/package.json'], { cwd: base });
  return JSON.parse(stdout);
}

describe.each(PACKAGES)('@cairn/%s as packed', (name) => {
  const tarball = () => tarballs[name];

  it('passes publint (strict: warnings fail too)', async () => {
    const result = await run(bin('publint'), ['run', tarball(), '--strict'], {
      cwd: base,
      allowFailure: true,
    });
    expect(result.stdout + result.stderr).not.toMatch(/Warnings:|Errors:/);
    expect(result.code).toBe(0);
  });

  it('passes Are The Types Wrong for an ESM-only package', async () => {
    const result = await run(bin('attw'), [tarball(), '--profile', 'esm-only', '--format', 'ascii'], {
      cwd: base,
      allowFailure: true,
      timeoutMs: 120_000,
    });
    expect(result.code, result.stdout + result.stderr).toBe(0);
  });

  it('ships the built entries, declarations, maps, README and LICENSE, and no tests, fixtures or benchmarks', async () => {
    const files = await contents(tarball());
    expect(files).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'LICENSE',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/index.js.map',
      ]),
    );
    expect(
      files.filter((f) => /(^|\/)(test|tests|fixtures|bench|__tests__)\/|\.test\.[jt]s$|tsconfig/.test(f)),
    ).toEqual([]);
    if (name === 'server') {
      expect(files).toEqual(expect.arrayContaining(['bin/cairn.js', 'dist/cli.js', 'dist/demo/index.html']));
      expect(files.filter((f) => f.endsWith('.map') && f.startsWith('dist/demo/'))).toEqual([]);
    }
  });

  it('has the manifest fields a maintainer expects, with yjs as a peer dependency', async () => {
    const pkg = await manifest(tarball());
    expect(pkg).toMatchObject({
      name: `@cairn/${name}`,
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      description: expect.any(String),
      license: 'MIT',
      type: 'module',
      engines: { node: '>=20' },
      peerDependencies: { yjs: expect.any(String) },
    });
    // No placeholder address: the repository is the one a release is built from (scripts/release.mjs), or none.
    const source = process.env.GITHUB_REPOSITORY;
    if (source) {
      expect(pkg.repository).toEqual({
        type: 'git',
        url: `git+${process.env.GITHUB_SERVER_URL ?? 'https://github.com'}/${source}.git`,
        directory: `packages/${name}`,
      });
    } else {
      expect(pkg).not.toHaveProperty('repository');
    }
    const dependencies = { ...(pkg.dependencies as Record<string, string>) };
    expect(dependencies).not.toHaveProperty('yjs');
    // pnpm pack replaced the workspace protocol with the version range a registry understands.
    expect(Object.values(dependencies).filter((range) => range.startsWith('workspace:'))).toEqual([]);
    const exportsMap = pkg.exports as Record<string, Record<string, string> | string>;
    for (const [subpath, target] of Object.entries(exportsMap)) {
      if (subpath === './package.json') continue;
      expect(Object.keys(target as object)[0], `${subpath}: "@cairn/source" first, for the workspace`).toBe(
        '@cairn/source',
      );
      expect(target).toMatchObject({
        types: expect.stringMatching(/^\.\/dist\/.*\.d\.ts$/),
        import: expect.stringMatching(/^\.\/dist\/.*\.js$/),
      });
    }
  });
});
