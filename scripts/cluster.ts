// `pnpm cluster`: a cluster on this machine to watch one plan from several instances. Installs Debian's
// redis-server and postgresql when missing (as root), starts them, builds the packages, and runs three
// `cairn serve` instances on ports 1234-1236 serving the demo. Redis keeps its data in ./data/cluster; PostgreSQL
// keeps its in the system's temp dir (one per checkout), because as root it runs as the `postgres` user, who may
// not be able to enter the checkout (a home folder is often 0700). Ctrl-C, SIGTERM, an instance exiting or any
// failure stops everything it started.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Service, startPostgres, startRedis } from '../packages/server/test/services.js';

const ROOT = resolve(import.meta.dirname, '..');
const DATA = resolve(ROOT, 'data/cluster');
const PG_DATA = join(
  tmpdir(),
  `cairn-cluster-${createHash('sha256').update(ROOT).digest('hex').slice(0, 12)}`,
);
const PORTS = [1234, 1235, 1236];

const services: Service[] = [];
const instances: ChildProcess[] = [];
let stopping: Promise<void> | null = null;

/** Stops what was started, instances first (they flush to PostgreSQL and Redis), then exits with `code`. */
function stopAll(code: number): Promise<void> {
  stopping ??= (async () => {
    await Promise.all(
      instances.map(
        (child) =>
          new Promise<void>((done) => {
            if (child.exitCode !== null || child.signalCode !== null) return done();
            child.once('exit', () => done());
            child.kill('SIGTERM');
          }),
      ),
    );
    await Promise.allSettled(services.map((service) => service.stop('term')));
    process.exit(code);
  })();
  return stopping;
}

process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));
process.on('uncaughtException', (error) => {
  console.error(error);
  void stopAll(1);
});

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { stdio: 'inherit', cwd: ROOT });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed`);
}

try {
  const missing = [
    ['/usr/bin/redis-server', 'redis-server'],
    ['/usr/lib/postgresql', 'postgresql'],
  ].filter(([path]) => !existsSync(path!));
  if (missing.length > 0) {
    run('bash', [
      '-c',
      `apt-get update -qq && apt-get install -y -qq ${missing.map(([, p]) => p).join(' ')}`,
    ]);
  }

  const redis = await startRedis({ dir: resolve(DATA, 'redis'), port: 6390, persist: true });
  services.push(redis);
  const postgres = await startPostgres({ dir: PG_DATA, port: 5440 });
  services.push(postgres);
  console.log(`redis ${redis.url} (data in ${DATA}), postgres ${postgres.url} (data in ${PG_DATA})`);
  run(process.execPath, ['scripts/build.mjs']);

  for (const port of PORTS) {
    const child = spawn(
      process.execPath,
      [
        'packages/server/bin/cairn.js',
        'serve',
        '--port',
        String(port),
        '--redis',
        redis.url,
        '--postgres',
        postgres.url,
      ],
      { cwd: ROOT, stdio: 'inherit' },
    );
    instances.push(child);
    child.once('exit', (exitCode) => void stopAll(exitCode ?? 0));
  }
  console.log(`three instances: ${PORTS.map((p) => `http://127.0.0.1:${p}`).join(', ')} (Ctrl-C stops them)`);
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  await stopAll(1);
}
