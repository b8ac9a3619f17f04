// The server side of the first read: `GET /api/plans/:plan/tasks` of a plan on disk that the server has not
// loaded, answered from the disk store's first-read snapshot, and the time until the plan has loaded behind that
// answer; against the same GET of a plan without a snapshot (the server loads the whole history first). One
// server process (lib/first-read-server.ts), already warm from a read of another plan, over copies of the plan.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { planFiles } from '@cairn/core/fs';
import { SOURCE_NODE_ARGS } from '../../test/source-cli.js';
import { wallMs } from './clients.js';
import { type Summary, summarize } from './measure.js';

export interface HttpFirstRead {
  /** No snapshot: request → response, the whole history loaded first. */
  cold: Summary;
  /** Request → response from the snapshot. */
  firstRead: Summary;
  /** Request → the plan loaded in the server's memory behind that answer. */
  hydrated: Summary;
  /** Tasks in the answer (the same for both). */
  tasks: number;
}

const SERVER = join(dirname(fileURLToPath(import.meta.url)), 'first-read-server.ts');

/** Copies of `planId`'s files in `dir` under new names, with or without its snapshot. */
function copies(dir: string, planId: string, names: string[], withSnapshot: boolean): void {
  const from = planFiles(dir, planId);
  for (const name of names) {
    const to = planFiles(dir, name);
    fs.copyFileSync(from.log, to.log);
    if (withSnapshot) fs.copyFileSync(from.snapshot, to.snapshot);
  }
}

/**
 * `runs` reads of each kind, taking turns, after one of each to warm the server's code. The plan's snapshot must
 * exist in `dir`; the copies are removed afterwards.
 */
export async function httpFirstRead(dir: string, planId: string, runs: number): Promise<HttpFirstRead> {
  const warm = Array.from({ length: runs + 1 }, (_, i) => `${planId}-snap${i}`);
  const cold = Array.from({ length: runs + 1 }, (_, i) => `${planId}-cold${i}`);
  copies(dir, planId, warm, true);
  copies(dir, planId, cold, false);
  const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, SERVER, dir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let out = '';
  const waiting = new Set<() => void>();
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    for (const check of [...waiting]) check();
  });
  const seen = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        const m = pattern.exec(out);
        if (!m) return;
        waiting.delete(check);
        resolve(m);
      };
      waiting.add(check);
      child.once('exit', (code) => reject(new Error(`first-read server exited (${code}): ${out}`)));
      check();
    });
  const result = { cold: [] as number[], firstRead: [] as number[], hydrated: [] as number[], tasks: 0 };
  try {
    const url = (await seen(/listening on (\S+)\n/))[1]!;
    const get = async (name: string) => {
      const loaded = seen(new RegExp(`loaded ${name} ([\\d.]+)\\n`));
      const t0 = wallMs();
      const res = await fetch(`${url}/api/plans/${encodeURIComponent(name)}/tasks?limit=500`);
      const body = (await res.json()) as { tasks: unknown[] };
      const t1 = wallMs();
      if (res.status !== 200) throw new Error(`GET tasks answered ${res.status}: ${JSON.stringify(body)}`);
      // The next request waits until this plan has loaded: the load holds the server's event loop.
      const t2 = Number((await loaded)[1]);
      return { answered: t1 - t0, hydrated: t2 - t0, tasks: body.tasks.length };
    };
    for (let i = 0; i <= runs; i++) {
      const a = await get(warm[i]!);
      const b = await get(cold[i]!);
      if (a.tasks !== b.tasks) throw new Error(`snapshot answer has ${a.tasks} tasks, the load ${b.tasks}`);
      result.tasks = a.tasks;
      if (i === 0) continue;
      result.firstRead.push(a.answered);
      result.hydrated.push(a.hydrated);
      result.cold.push(b.answered);
    }
  } finally {
    child.kill('SIGTERM');
    await exited;
    for (const name of [...warm, ...cold]) {
      const files = planFiles(dir, name);
      for (const path of [files.log, files.snapshot, files.lock]) fs.rmSync(path, { force: true });
    }
  }
  return {
    cold: summarize(result.cold),
    firstRead: summarize(result.firstRead),
    hydrated: summarize(result.hydrated),
    tasks: result.tasks,
  };
}
