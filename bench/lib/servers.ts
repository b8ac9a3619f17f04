// Starts the servers the sync benchmarks compare, each in its own process on a free loopback port: Cairn's
// (`cairn serve`, built), the reference y-websocket server, and the bare-ws floor. Reads their CPU time and memory.
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type ServerKind = 'cairn' | 'reference' | 'floor' | 'hocuspocus';

export const SERVER_NAMES: Record<ServerKind, string> = {
  cairn: 'Cairn server (`cairn serve`, disk store on)',
  reference: 'reference @y/websocket-server 0.1.1 (in memory)',
  floor: 'bare `ws` broadcast (floor)',
  hocuspocus: 'Hocuspocus 4.7 + @hocuspocus/extension-redis (in memory)',
};

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Cairn's server runs as users run it: `cairn serve` on the built packages (dist/), by plain `node`. From the
 * TypeScript sources it would run under tsx's loader, which the users' server never has. `pnpm bench` builds
 * first (bench/run.ts); this refuses a build older than the sources, so no figure comes from stale code.
 */
const BUILT_CLI = join(root, 'packages/server/bin/cairn.js');
const BUILT_PACKAGES = ['core', 'mcp', 'server'];

/** Checked once per process: the sources do not change while a benchmark runs. */
let buildChecked = false;

function assertFreshBuild(): void {
  if (buildChecked) return;
  const newest = (dir: string): number => {
    let max = 0;
    for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
      if (entry.isFile()) max = Math.max(max, fs.statSync(join(entry.parentPath, entry.name)).mtimeMs);
    }
    return max;
  };
  for (const name of BUILT_PACKAGES) {
    const built = join(root, 'packages', name, 'dist', 'index.js');
    if (!fs.existsSync(built) || fs.statSync(built).mtimeMs < newest(join(root, 'packages', name, 'src')))
      throw new Error(
        `packages/${name}/dist is missing or older than its sources: run \`pnpm build\` first.`,
      );
  }
  buildChecked = true;
}

/** user + system CPU seconds of a process and its direct children (PostgreSQL's backends), from /proc. */
export function treeCpuSeconds(pid: number): number {
  const ticks = 100; // USER_HZ on Linux
  let total = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(entry) === pid || Number(fields[1]) === pid)
      total += (Number(fields[11]) + Number(fields[12])) / ticks;
  }
  return total;
}

export interface RunningServer {
  kind: ServerKind;
  pid: number;
  /** The base URL a y-websocket client takes (the room name is appended as a path segment). */
  wsBase: string;
  /** user + system CPU seconds the server process has used so far. */
  cpuSeconds(): number;
  /** Resident set size in bytes. */
  rss(): number;
  stop(): Promise<void>;
}

/**
 * `cpuProfileDir`: run the server under `--cpu-prof`; the profile is written there when it exits. `cluster`: a
 * Cairn instance on these Redis and PostgreSQL URLs instead of a data directory.
 */
export async function startServer(
  kind: ServerKind,
  options: { cpuProfileDir?: string; cluster?: { redis: string; postgres: string } } = {},
): Promise<RunningServer> {
  let data: string | null = null;
  let args: string[];
  if (kind === 'cairn') assertFreshBuild();
  if (kind === 'cairn' && options.cluster) {
    const { redis, postgres } = options.cluster;
    args = [BUILT_CLI, 'serve', '--port', '0', '--static', 'none', '--redis', redis, '--postgres', postgres];
  } else if (kind === 'hocuspocus') {
    if (!options.cluster) throw new Error('Hocuspocus runs here only with its Redis extension: pass cluster');
    args = [
      '--import',
      'tsx',
      join(root, 'bench/baselines/hocuspocus-server.ts'),
      '0',
      options.cluster.redis,
    ];
  } else if (kind === 'cairn') {
    data = fs.mkdtempSync(join(os.tmpdir(), 'cairn-bench-server-'));
    args = [BUILT_CLI, 'serve', '--port', '0', '--host', '127.0.0.1', '--data', data];
  } else {
    const script = kind === 'reference' ? 'reference-server.ts' : 'ws-floor-server.ts';
    args = ['--import', 'tsx', join(root, 'bench/baselines', script), '0'];
  }
  if (options.cpuProfileDir) args = ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`, ...args];
  const env = { ...process.env };
  delete env['CAIRN_SECRET']; // open mode: loopback only, no tokens
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (stderr.length > 10_000) stderr = stderr.slice(-5_000);
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(
      () => reject(new Error(`${kind} server did not start in 30 s: ${stderr}`)),
      30_000,
    );
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${kind} server exited with ${code}: ${stderr}`));
    });
  });
  const host = new URL(url);
  if (host.hostname !== '127.0.0.1' && host.hostname !== 'localhost' && host.hostname !== '[::1]')
    throw new Error(`${kind} server is not on loopback: ${url}`);
  const pid = child.pid!;
  const wsBase = `ws://${host.host}${kind === 'cairn' ? '/sync' : ''}`;
  const ticks = 100; // USER_HZ on Linux
  return {
    kind,
    pid,
    wsBase,
    cpuSeconds() {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(fields[11]) + Number(fields[12])) / ticks;
    },
    rss() {
      const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
      const m = /VmRSS:\s+(\d+) kB/.exec(status);
      return m ? Number(m[1]) * 1024 : 0;
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      if (data) fs.rmSync(data, { recursive: true, force: true });
    },
  };
}
