// The plan whose storage is measured: `tasks` tasks, then `updates` small edits, each its own transaction (a
// status flip, stamped with who and when, as every Cairn write is). Platform-neutral, so the same history is
// written in Node (fs, fake-indexeddb) and in real Chromium (the browser test run).
import { createPlan, type Plan } from '@cairn/core';
import type * as Y from 'yjs';

export interface HistoryOptions {
  tasks: number;
  updates: number;
  /** Called every `yieldEvery` updates and awaited (lets an async store write, as spaced-out edits would). */
  onProgress?: (done: number) => void | Promise<void>;
  yieldEvery?: number;
}

/** Adds the tasks, then flips task (i mod tasks) between pending and done, `updates` times. */
export async function writeHistory(
  doc: Y.Doc,
  options: HistoryOptions,
): Promise<{ plan: Plan; usPerUpdate: number }> {
  const plan = createPlan({ doc, actor: 'agent:writer' });
  const ids: string[] = [];
  for (let start = 0; start < options.tasks; start += 500) {
    const n = Math.min(500, options.tasks - start);
    for (const t of plan.addMany(Array.from({ length: n }, (_, i) => ({ title: `Task ${start + i}` }))))
      ids.push(t.id);
  }
  const every = options.yieldEvery ?? 0;
  const t0 = performance.now();
  for (let i = 0; i < options.updates; i++) {
    const id = ids[i % ids.length]!;
    plan.update(id, { status: plan.get(id)!.status === 'done' ? 'pending' : 'done' });
    if (every > 0 && (i + 1) % every === 0) await options.onProgress?.(i + 1);
  }
  return { plan, usPerUpdate: ((performance.now() - t0) * 1000) / options.updates };
}

/** The same plan's final content written fresh: the tasks added once, each already at its final status. */
export function writeFresh(doc: Y.Doc, tasks: number, updates: number): Plan {
  const plan = createPlan({ doc, actor: 'agent:writer' });
  // Task k was flipped ceil((updates - k) / tasks) times: done after an odd number of flips.
  const flips = (k: number) => (updates > k ? Math.ceil((updates - k) / tasks) : 0);
  for (let start = 0; start < tasks; start += 500) {
    const n = Math.min(500, tasks - start);
    plan.addMany(
      Array.from({ length: n }, (_, i) => ({
        title: `Task ${start + i}`,
        status: flips(start + i) % 2 === 1 ? ('done' as const) : ('pending' as const),
      })),
    );
  }
  return plan;
}
