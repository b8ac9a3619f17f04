// Runs the example worker (apps/cloudflare) in the npm workerd, as `wrangler dev` would but without wrangler:
// bundled once per process, a config.capnp written from the same bindings as wrangler.jsonc, a free port from
// --control-fd, a persisted storage directory, and kill -9 / restart on that directory.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
// @ts-expect-error: a plain ESM script without declarations
import { bundleWorker } from '../build.mjs';

const workerdBin: string = createRequire(import.meta.url)('workerd').default;

/** The date of wrangler.jsonc. */
const COMPATIBILITY_DATE = '2026-11-01';
const COMPATIBILITY_FLAGS: string[] = [];

const bundled = new Map<string, Promise<string>>();

/** A worker bundled once per test process (from the TypeScript sources): the example app's, or `entry`. */
export function workerBundle(entry?: string): Promise<string> {
  const key = entry ?? '';
  let bundle = bundled.get(key);
  if (!bundle) {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-worker-'));
    bundle = bundleWorker(join(dir, 'worker.js'), { entry }) as Promise<string>;
    bundled.set(key, bundle);
  }
  return bundle;
}

export interface WorkerdOptions {
  /** Worker variables (CAIRN_SECRET, CAIRN_JUDGE_URL, ...). */
  vars: Record<string, string>;
  /** A test's own worker module instead of the example app, and the Durable Object class it binds. */
  worker?: { entry: string; binding: string; className: string };
  /** Shows workerd's own log (uncaught exceptions). Default: the WORKERD_VERBOSE environment variable. */
  verbose?: boolean;
  /** Receives what workerd writes to stderr (the worker's console.warn and console.error among it). */
  onOutput?: (chunk: string) => void;
}

export interface RunningWorkerd {
  readonly port: number;
  readonly url: string;
  readonly pid: number;
  /** The persisted Durable Object storage directory (kept across restarts). */
  readonly storageDir: string;
  /** SIGKILL: no chance to flush anything. */
  kill9(): Promise<void>;
  /** Starts workerd again on the same storage directory and port (after kill9, or stopping it first). */
  restart(): Promise<void>;
  /** SIGTERM and removes the storage directory. */
  dispose(): Promise<void>;
}

export async function startWorkerd(options: WorkerdOptions): Promise<RunningWorkerd> {
  const worker = await workerBundle(options.worker?.entry);
  const dir = mkdtempSync(join(tmpdir(), 'cairn-workerd-'));
  const storageDir = join(dir, 'do-storage');
  mkdirSync(storageDir);
  const config = join(dir, 'config.capnp');
  copyFileSync(worker, join(dir, 'worker.js')); // an embed path is relative to the config file
  writeFileSync(config, capnp(options.vars, options.worker ?? EXAMPLE_OBJECT));
  const verbose = options.verbose ?? Boolean(process.env.WORKERD_VERBOSE);
  let proc: ChildProcess;
  let port = 0;

  // A restart listens on the port it had, so clients reconnect to the address they know.
  const spawnIt = async () => {
    const args = [
      'serve',
      config,
      '-d',
      `do-storage=${storageDir}`,
      '-s',
      `http=127.0.0.1:${port}`,
      '--control-fd',
      '3',
    ];
    if (verbose) args.push('--verbose');
    proc = spawn(workerdBin, args, { stdio: ['ignore', verbose ? 'inherit' : 'ignore', 'pipe', 'pipe'] });
    let stderr = '';
    proc.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      options.onOutput?.(chunk.toString());
      if (verbose) process.stderr.write(chunk);
    });
    const control = proc.stdio[3] as Readable;
    const [chunk] = (await Promise.race([
      once(control, 'data'),
      once(proc, 'exit').then(([code]) => {
        throw new Error(`workerd exited with code ${code}: ${stderr}`);
      }),
    ])) as [Buffer];
    port = (JSON.parse(chunk.toString().split('\n')[0] ?? '{}') as { port: number }).port;
    // On a restart the listen event can come before the socket accepts: ready once /healthz answers at all (a
    // misconfigured Worker answers it with a 503, which is what such a test then looks at).
    for (const deadline = Date.now() + 10_000; ; ) {
      try {
        await fetch(`http://127.0.0.1:${port}/healthz`);
        break;
      } catch (error) {
        if (Date.now() > deadline || proc.exitCode !== null)
          throw new Error(`workerd does not answer: ${stderr}`, { cause: error });
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  };
  const stopIt = async (signal: NodeJS.Signals) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = once(proc, 'exit');
    proc.kill(signal);
    await exited;
  };
  try {
    await spawnIt();
  } catch (error) {
    // Started but never ready: stopped here, since the caller gets no handle to stop it with.
    await stopIt('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    get port() {
      return port;
    },
    get url() {
      return `http://127.0.0.1:${port}`;
    },
    get pid() {
      return proc.pid ?? -1;
    },
    storageDir,
    kill9: () => stopIt('SIGKILL'),
    restart: async () => {
      await stopIt('SIGTERM');
      await spawnIt();
    },
    dispose: async () => {
      await stopIt('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The example app's object, as wrangler.jsonc binds it. */
const EXAMPLE_OBJECT = { binding: 'CAIRN_PLANS', className: 'CairnPlanObject' };

function capnp(vars: Record<string, string>, object: { binding: string; className: string }): string {
  const bindings = [
    `(name = "${object.binding}", durableObjectNamespace = "${object.className}")`,
    ...Object.entries(vars).map(
      ([name, value]) => `(name = ${JSON.stringify(name)}, text = ${JSON.stringify(value)})`,
    ),
  ];
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .cairn),
    (name = "do-storage", disk = (writable = true)),
    # The judge in the tests listens on loopback, which workerd's default outbound refuses.
    (name = "internet", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [ (name = "http", address = "127.0.0.1:0", http = (), service = "main") ],
);
const cairn :Workerd.Worker = (
  compatibilityDate = "${COMPATIBILITY_DATE}",
  compatibilityFlags = [${COMPATIBILITY_FLAGS.map((f) => JSON.stringify(f)).join(', ')}],
  modules = [ (name = "worker.js", esModule = embed "worker.js") ],
  durableObjectNamespaces = [ (className = "${object.className}", uniqueKey = "cairn-plan-v1", enableSql = true) ],
  durableObjectStorage = (localDisk = "do-storage"),
  bindings = [ ${bindings.join(',\n    ')} ],
);
`;
}
