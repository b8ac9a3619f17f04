// The server side of the first read: `GET /api/plans/:plan/tasks` of a plan on disk that the server has not
// loaded, answered from the disk store's first-read snapshot, and the time until the plan has loaded behind that
// answer; against the same GET when the plan has no snapshot (the server loads the whole history first). Each
// request goes to a fresh server process (lib/first-read-server.ts) over the same data directory.
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

async function once(dir: string, planId: string, withSnapshot: boolean) {
  if (!withSnapshot) fs.rmSync(planFiles(dir, planId).snapshot, { force: true });
  const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, SERVER, dir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let out = '';
  const seen = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        const m = pattern.exec(out);
        if (m) {
          child.stdout.off('data', onData);
          resolve(m);
        }
      };
      const onData = (chunk: Buffer) => {
        out += chunk.toString();
        check();
      };
      child.stdout.on('data', onData);
      child.once('exit', (code) => reject(new Error(`first-read server exited (${code}): ${out}`)));
      check();
    });
  try {
    const url = (await seen(/listening on (\S+)\n/))[1]!;
    const loaded = seen(new RegExp(`loaded ${planId} ([\\d.]+)\\n`));
    const t0 = wallMs();
    const res = await fetch(`${url}/api/plans/${encodeURIComponent(planId)}/tasks?limit=500`);
    const body = (await res.json()) as { tasks: unknown[] };
    const t1 = wallMs();
    if (res.status !== 200) throw new Error(`GET tasks answered ${res.status}: ${JSON.stringify(body)}`);
    const t2 = Number((await loaded)[1]);
    return { answered: t1 - t0, hydrated: t2 - t0, tasks: body.tasks.length };
  } finally {
    child.kill('SIGTERM'); // releases the plan, which writes its snapshot again
    await exited;
  }
}

/** `runs` of each after one warm-up of each, taking turns. The snapshot must exist in `dir` at the start. */
export async function httpFirstRead(dir: string, planId: string, runs: number): Promise<HttpFirstRead> {
  const cold: number[] = [];
  const first: number[] = [];
  const hydrated: number[] = [];
  let tasks = 0;
  for (let i = 0; i <= runs; i++) {
    const a = await once(dir, planId, true);
    const b = await once(dir, planId, false);
    if (a.tasks !== b.tasks) throw new Error(`snapshot answer has ${a.tasks} tasks, the load ${b.tasks}`);
    tasks = a.tasks;
    if (i === 0) continue;
    first.push(a.answered);
    hydrated.push(a.hydrated);
    cold.push(b.answered);
  }
  return { cold: summarize(cold), firstRead: summarize(first), hydrated: summarize(hydrated), tasks };
}
