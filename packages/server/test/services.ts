// Real redis-server and PostgreSQL for the cluster tests (and `pnpm cluster`): each started on a free port (or a
// given one) with its data in a temp dir (or a given one, kept), stopped by the caller. PostgreSQL refuses to run as root, so as root it runs as
// the `postgres` user the Debian package creates, through setpriv (which execs, so a signal reaches postgres itself) (scripts/test.mjs installs both packages when missing).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const REDIS_SERVER = '/usr/bin/redis-server';
/** The newest PostgreSQL Debian installed (/usr/lib/postgresql/<major>/bin). */
const PG_BIN = (() => {
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root) ? readdirSync(root).map(Number).filter(Number.isInteger) : [];
  return join(root, String(Math.max(15, ...majors)), 'bin');
})();

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface ServiceOptions {
  /** Keep the data here (created if missing, reused if there); default a temp dir removed by `destroy`. */
  dir?: string;
  port?: number;
}

async function dataDir(options: ServiceOptions, prefix: string): Promise<string> {
  if (!options.dir) return mkdtemp(join(tmpdir(), prefix));
  await mkdir(options.dir, { recursive: true });
  return options.dir;
}

export interface Service {
  readonly url: string;
  readonly port: number;
  /** The running process (PostgreSQL's postmaster), null while stopped. */
  readonly pid: number | null;
  /** Stops it (SIGKILL for `kill`: a crash), keeping its data dir so `start` brings it back on the same port. */
  stop(how?: 'term' | 'kill'): Promise<void>;
  start(): Promise<void>;
  /** Stops it and removes its data. */
  destroy(): Promise<void>;
}

async function waitForLine(child: ChildProcess, pattern: RegExp, what: string): Promise<void> {
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start:\n${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (pattern.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code}:\n${output}`));
    });
  });
}

function exited(child: ChildProcess | null): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** A service's process, started and stopped again on demand (its data dir stays). */
interface Supervised {
  readonly pid: number | null;
  start(): Promise<void>;
  stop(how?: 'term' | 'kill'): Promise<void>;
}

/**
 * Runs `command` until stopped, started once `ready` appears in its output; `term` is its graceful stop signal
 * and `failed` how it is stopped when it exits or stalls before it is ready.
 */
function supervise(
  what: string,
  [command, args]: [string, string[]],
  ready: RegExp,
  signals: { term: NodeJS.Signals; failed: 'term' | 'kill' },
): Supervised {
  let child: ChildProcess | null = null;
  const stop = async (how: 'term' | 'kill' = 'term') => {
    const running = child;
    child = null;
    running?.kill(how === 'kill' ? 'SIGKILL' : signals.term);
    await exited(running);
  };
  return {
    get pid() {
      return child?.pid ?? null;
    },
    async start() {
      child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      try {
        await waitForLine(child, ready, what);
      } catch (error) {
        await stop(signals.failed);
        throw error;
      }
    },
    stop,
  };
}

function asService(url: string, port: number, running: Supervised, destroy: () => Promise<void>): Service {
  return {
    url,
    port,
    get pid() {
      return running.pid;
    },
    stop: (how) => running.stop(how),
    start: () => running.start(),
    destroy,
  };
}

/**
 * A redis-server on a free port. `persist`: append-only file with fsync always, so a restart (even after
 * SIGKILL) keeps every stream entry; without it a restart starts empty, as a cache-only Redis does.
 */
export async function startRedis(options: ServiceOptions & { persist?: boolean } = {}): Promise<Service> {
  if (!existsSync(REDIS_SERVER)) throw new Error(`${REDIS_SERVER} is missing: apt-get install redis-server`);
  const dir = await dataDir(options, 'cairn-redis-');
  const port = options.port ?? (await freePort());
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', ''];
  if (options.persist) args.push('--appendonly', 'yes', '--appendfsync', 'always');
  else args.push('--appendonly', 'no');
  const redis = supervise('redis-server', [REDIS_SERVER, args], /Ready to accept connections/, {
    term: 'SIGTERM',
    failed: 'kill',
  });
  await redis.start();
  return asService(`redis://127.0.0.1:${port}`, port, redis, async () => {
    await redis.stop('kill');
    if (!options.dir) await rm(dir, { recursive: true, force: true });
  });
}

/** Runs a PostgreSQL binary, as `postgres` when we are root (it refuses root). */
function pgCommand(binary: string, args: string[]): [string, string[]] {
  const path = join(PG_BIN, binary);
  if (process.getuid?.() !== 0) return [path, args];
  return ['setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', path, ...args]];
}

/** A PostgreSQL cluster in a temp dir on a free port, database `cairn`, user `cairn`, trust auth on loopback. */
export async function startPostgres(options: ServiceOptions = {}): Promise<Service> {
  if (!existsSync(join(PG_BIN, 'initdb')))
    throw new Error(`${PG_BIN}/initdb is missing: apt-get install postgresql`);
  const dir = await dataDir(options, 'cairn-pg-');
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, 'data');
  const fresh = !existsSync(join(data, 'PG_VERSION'));
  const [initdb, initArgs] = pgCommand('initdb', [
    '-D',
    data,
    '-U',
    'cairn',
    '--auth=trust',
    '-E',
    'UTF8',
    '--no-sync',
  ]);
  if (fresh) execFileSync(initdb, initArgs, { stdio: 'pipe' });
  const port = options.port ?? (await freePort());
  const postgres = supervise(
    'postgres',
    pgCommand('postgres', [
      '-D',
      data,
      '-p',
      String(port),
      '-k',
      dir,
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'max_connections=200',
    ]),
    /ready to accept connections/,
    // SIGINT is PostgreSQL's fast shutdown; a failure once it runs (a port taken) must not leave it behind.
    { term: 'SIGINT', failed: 'term' },
  );
  await postgres.start();
  const [createdb, createArgs] = pgCommand('createdb', [
    '-h',
    '127.0.0.1',
    '-p',
    String(port),
    '-U',
    'cairn',
    'cairn',
  ]);
  if (fresh) {
    try {
      execFileSync(createdb, createArgs, { stdio: 'pipe' });
    } catch (error) {
      await postgres.stop('term');
      throw error;
    }
  }
  return asService(`postgres://cairn@127.0.0.1:${port}/cairn`, port, postgres, async () => {
    await postgres.stop('term');
    if (!options.dir) await rm(dir, { recursive: true, force: true });
  });
}
