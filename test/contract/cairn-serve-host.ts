// `cairn serve` as a host of the contract, run from the workspace's sources by Node (through tsx, as the other
// tests run the CLI), Bun or Deno (each the binary its npm package ships, run directly so that stopping it stops
// the server and not a wrapper). Every host is a child process configured by flags and environment exactly as a
// user configures `cairn serve`: the Node host too, rather than createCairnServer in the test's own process, so
// that the CLI's reading of its options is under test, a server's crash or hang cannot take the test runner with
// it, and the contract sees every host through the network alone. Sources rather than the built packages: `pnpm
// test` runs before anything is built (the consumer suite runs the built `cairn serve` under Bun and Deno).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SOURCE_CLI_ARGS } from '../source-cli.js';
import { type ContractHost, type HostOptions, type RunningHost, serveEnvironment } from './host.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CAIRN_BIN = join(ROOT, 'packages/server/bin/cairn.js');

/**
 * The runtime binary of an npm package (`node_modules/.bin` holds shell or Node shims around it). Deno's is placed
 * by its install script, which pnpm does not run here (`allowBuilds`); its shim places it on first use, so it runs
 * once when the binary is missing.
 */
function runtimeBinary(path: string, placeWith?: string): string {
  const full = join(ROOT, 'node_modules', path);
  if (!existsSync(full) && placeWith) {
    execFileSync(process.execPath, [join(ROOT, 'node_modules', placeWith), '--version'], { stdio: 'ignore' });
  }
  if (!existsSync(full)) throw new Error(`${full} is missing: run pnpm install (its postinstall places it).`);
  return full;
}

/** The command that runs `cairn` from sources in each runtime; append the CLI's arguments. */
const COMMANDS: Record<'node' | 'bun' | 'deno', () => [string, ...string[]]> = {
  node: () => [process.execPath, ...SOURCE_CLI_ARGS],
  bun: () => [runtimeBinary('bun-cli/bin/bun.exe'), '--conditions=@cairn/source', CAIRN_BIN],
  // The sources import `./x.js` for `./x.ts` (as tsc wants); built packages need no --sloppy-imports.
  deno: () => [
    runtimeBinary('deno-cli/deno', 'deno-cli/bin.cjs'),
    'run',
    '-A',
    '--no-lock',
    '--sloppy-imports',
    '--conditions=@cairn/source',
    CAIRN_BIN,
  ],
};

/** Time a host may take to print its listening line (tsx and Deno compile the sources as they load them). */
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 5_000;

export function cairnServeHost(runtime: keyof typeof COMMANDS): ContractHost {
  return { name: runtime, start: (options) => startCairnServe(runtime, options) };
}

async function startCairnServe(runtime: keyof typeof COMMANDS, options: HostOptions): Promise<RunningHost> {
  const dataDir = await mkdtemp(join(tmpdir(), `cairn-contract-${runtime}-`));
  const [command, ...prefix] = COMMANDS[runtime]();
  const args = [
    ...prefix,
    'serve',
    '--port',
    '0',
    '--host',
    '127.0.0.1',
    '--data',
    dataDir,
    '--static',
    'none',
    ...(options.leaseMs !== undefined ? ['--lease-ms', String(options.leaseMs)] : []),
  ];
  // Nothing of the caller's Cairn configuration leaks in: the host sees only what the contract sets.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('CAIRN_') && !name.startsWith('OPENAI_')),
  );
  const child = spawn(command, args, {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...inherited, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1', ...serveEnvironment(options) },
  });
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    await terminate(child, exited);
    await rm(dataDir, { recursive: true, force: true });
  };
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  try {
    const http = await new Promise<string>((resolve, reject) => {
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        output += chunk.toString();
        const found = /^listening on (http:\/\/127\.0\.0\.1:\d+)\n/m.exec(stdout);
        if (found) resolve(found[1]!);
      });
      void exited.then(() =>
        reject(new Error(`${runtime}: cairn serve exited before listening:\n${output}`)),
      );
      setTimeout(
        () =>
          reject(
            new Error(`${runtime}: cairn serve did not listen within ${START_TIMEOUT_MS} ms:\n${output}`),
          ),
        START_TIMEOUT_MS,
      ).unref();
    });
    return { http, ws: http.replace(/^http/, 'ws'), output: () => output, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** SIGTERM (the server flushes and exits), then SIGKILL if it has not exited in time. */
async function terminate(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}
