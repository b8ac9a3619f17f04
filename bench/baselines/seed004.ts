// Seed 004's TaskManager, as its design describes it, in TypeScript: one JSON file per task in a directory,
// `{ id, title, status, blockedBy }`; create assigns max id + 1, complete sets "completed", ready() reads every
// file and returns the pending tasks whose blockers are all completed. The files are the truth (that is what
// lets the plan survive context compaction and be shared by processes), so every query reads them.
import * as fs from 'node:fs';
import { join } from 'node:path';

export interface Seed004Task {
  id: number;
  title: string;
  status: 'pending' | 'in_progress' | 'completed';
  blockedBy: number[];
}

export class Seed004TaskManager {
  private nextId: number;

  constructor(readonly dir: string) {
    fs.mkdirSync(dir, { recursive: true });
    // Max id + 1, found once from the file names (the original keeps the counter in memory after that).
    let max = 0;
    for (const name of fs.readdirSync(dir)) {
      const m = /^task_(\d+)\.json$/.exec(name);
      if (m) max = Math.max(max, Number(m[1]));
    }
    this.nextId = max + 1;
  }

  private path(id: number): string {
    return join(this.dir, `task_${id}.json`);
  }

  load(id: number): Seed004Task {
    return JSON.parse(fs.readFileSync(this.path(id), 'utf8')) as Seed004Task;
  }

  save(task: Seed004Task): void {
    fs.writeFileSync(this.path(task.id), JSON.stringify(task));
  }

  create(title: string, blockedBy: number[] = [], status: Seed004Task['status'] = 'pending'): Seed004Task {
    const task: Seed004Task = { id: this.nextId++, title, status, blockedBy };
    this.save(task);
    return task;
  }

  /** Read-modify-write of one task's file. */
  update(id: number, patch: { status?: Seed004Task['status']; addBlockedBy?: number[] }): Seed004Task {
    const task = this.load(id);
    if (patch.status) task.status = patch.status;
    for (const b of patch.addBlockedBy ?? []) if (!task.blockedBy.includes(b)) task.blockedBy.push(b);
    this.save(task);
    return task;
  }

  complete(id: number): void {
    this.update(id, { status: 'completed' });
  }

  /** Every task, read from its file. */
  all(): Seed004Task[] {
    const out: Seed004Task[] = [];
    for (const name of fs.readdirSync(this.dir)) {
      if (!name.startsWith('task_') || !name.endsWith('.json')) continue;
      out.push(JSON.parse(fs.readFileSync(join(this.dir, name), 'utf8')) as Seed004Task);
    }
    return out;
  }

  /** Pending tasks whose blockers are all completed (a blocker whose file is gone does not block). */
  ready(): Seed004Task[] {
    const tasks = this.all();
    const status = new Map<number, string>();
    for (const t of tasks) status.set(t.id, t.status);
    return tasks
      .filter(
        (t) =>
          t.status === 'pending' && t.blockedBy.every((b) => (status.get(b) ?? 'completed') === 'completed'),
      )
      .sort((a, b) => a.id - b.id);
  }
}
