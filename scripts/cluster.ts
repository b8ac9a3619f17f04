// `pnpm cluster`: a cluster on this machine to watch one plan from several instances. Installs Debian's
// redis-server and postgresql when missing (as root), starts them with their data in ./data/cluster, builds the
// packages, and runs three `cairn serve` instances on ports 1234-1236 serving the demo. Ctrl-C stops everything.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { startPostgres, startRedis } from '../packages/server/test/services.js';

const ROOT = resolve(import.meta.dirname, '..');
const DATA = resolve(ROOT, 'data/cluster');
const PORTS = [1234, 1235, 1236];

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { stdio: 'inherit', cwd: ROOT });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed`);
}

const missing = [
  ['/usr/bin/redis-server', 'redis-server'],
  ['/usr/lib/postgresql', 'postgresql'],
].filter(([path]) => !existsSync(path!));
if (missing.length > 0) {
  run('bash', ['-c', `apt-get update -qq && apt-get install -y -qq ${missing.map(([, p]) => p).join(' ')}`]);
}

const redis = await startRedis({ dir: resolve(DATA, 'redis'), port: 6390, persist: true });
const postgres = await startPostgres({ dir: resolve(DATA, 'postgres'), port: 5440 });
console.log(`redis ${redis.url}, postgres ${postgres.url} (data in ${DATA})`);
run(process.execPath, ['scripts/build.mjs']);

const instances: ChildProcess[] = PORTS.map((port) =>
  spawn(
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
  ),
);
console.log(`three instances: ${PORTS.map((p) => `http://127.0.0.1:${p}`).join(', ')} (Ctrl-C stops them)`);

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await Promise.all(
    instances.map(
      (child) =>
        new Promise<void>((done) => {
          if (child.exitCode !== null) return done();
          child.once('exit', () => done());
          child.kill('SIGTERM');
        }),
    ),
  );
  await Promise.all([redis.destroy(), postgres.destroy()]);
  process.exit(0);
}
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
for (const child of instances) child.once('exit', () => void stop());
