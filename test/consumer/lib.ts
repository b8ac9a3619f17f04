// What the consumer tests share: running a command to completion, npm with a clean environment and a shared
// cache, a free port, and `cairn serve` started from the bin that npm installed.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const FIXTURES = join(ROOT, 'test/consumer/fixtures');
export const PACKAGES = ['core', 'mcp', 'server'] as const;
export const bin = (name: string) => join(ROOT, 'node_modules/.bin', name);

export interface ConsumerContext {
  base: string;
  /** A project that installed the three tarballs as the README says. */
  app: string;
  /** A project that installed them with --legacy-peer-deps, so without yjs. */
  nopeer: string;
  /** A project on vitest 2 that installed only the core tarball and yjs, strictly (peer conflicts fail). */
  vitest2: string;
  tarballs: Record<(typeof PACKAGES)[number], string>;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The environment of a child that stands for a user's shell: none of the package manager's variables from the
 * test run (npm would read pnpm's `npm_config_*`), and no export condition of the workspace.
 */
export function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(npm_|pnpm_|NODE_OPTIONS$|VITEST|TEST$|NODE_ENV$)/i.test(key)) continue;
    env[key] = value;
  }
  return { ...env, NO_COLOR: '1', ...extra };
}

/** Runs a command to its end; rejects (with its output) if it fails, unless `allowFailure`. */
export function run(
  command: string,
  args: string[],
  options: {
    cwd: string;
    env?: NodeJS.ProcessEnv;
    timeoutMs?: number;
    allowFailure?: boolean;
    input?: string;
  },
): Promise<RunResult> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? userEnv(),
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr?.on('data', (chunk) => {
      stderr += chunk;
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.on('error', fail);
    child.on('close', (code) => {
      clearTimeout(timer);
      const result = { code, stdout, stderr };
      if (code === 0 || options.allowFailure) done(result);
      else fail(new Error(`${command} ${args.join(' ')} exited ${code}\n${stdout}\n${stderr}`));
    });
  });
}

/**
 * npm against the registry only, with one cache shared by every run on this machine (the first run downloads,
 * later ones revalidate little), and no audit or funding requests.
 */
export function npm(cwd: string, args: string[]): Promise<RunResult> {
  return run('npm', [...args, '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], {
    cwd,
    env: userEnv({ npm_config_cache: join(tmpdir(), 'cairn-npm-cache') }),
    timeoutMs: 300_000,
  });
}

// The same free port the server's cluster tests ask for.
export { freePort } from '../../packages/server/test/services.js';

export interface Served {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Whether any process of the process group `pgid` is still running (signal 0 only asks). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts a long-running child and resolves once `ready` matches its stdout (the first group is the URL), or at
 * once without `ready`; rejects if it exits first.
 */
export function startProcess(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; ready?: RegExp },
): Promise<Served> {
  // Its own process group: an npm bin such as workerd's is a Node wrapper that spawns the real binary, which a
  // signal to the wrapper alone would leave running after the test.
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? userEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const stop = async () => {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      // The group is gone already.
    }
    await exited;
    // The child may be such a wrapper, gone while the real binary still shuts down (a server flushing its store
    // into a folder the test is about to remove): stopped means every process of the group has exited.
    for (const deadline = Date.now() + 10_000; groupAlive(child.pid!) && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  };
  return new Promise((done, fail) => {
    if (!options.ready) done({ url: '', child, stop });
    child.stdout?.on('data', (chunk) => {
      stdout += chunk;
      const found = options.ready?.exec(stdout);
      if (found) done({ url: found[1] ?? '', child, stop });
    });
    child.once('exit', (code) =>
      fail(new Error(`${command} exited ${code} before it was ready:\n${stdout}\n${stderr}`)),
    );
  });
}

/** `cairn serve` from the bin npm installed in `project`, on a free port with its own data directory. */
export function startCairn(project: string, extraArgs: string[] = []): Promise<Served> {
  const data = mkdtempSync(join(tmpdir(), 'cairn-consumer-data-'));
  // The bin itself, as a shell would run it: its shebang line names node, and nothing else is needed.
  return startProcess(
    join(project, 'node_modules/.bin/cairn'),
    ['serve', '--port', '0', '--data', data, ...extraArgs],
    { cwd: project, ready: /listening on (http:\/\/\S+)/ },
  );
}

/**
 * Bundles a user's worker from the installed packages as wrangler does (ESM, neutral platform, the workerd
 * conditions), for the npm workerd to serve. `cloudflare:*` modules are the runtime's own.
 */
export async function bundleForWorkerd(entry: string, outfile: string): Promise<void> {
  await build({
    entryPoints: [entry],
    absWorkingDir: dirname(entry),
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['browser', 'module', 'main'],
    external: ['cloudflare:*'],
    logLevel: 'silent',
  });
}
