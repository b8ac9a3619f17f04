// Seed 000's task store in TypeScript: the whole list in one tasks.json, `{ tasks: [...], next_id }`, rewritten on
// every change. Its best version: the list stays in memory between calls (the seed's C tool re-reads the file on
// every call; skipping that read only helps it), and each change rewrites the file once. The seed has no
// dependencies; for the shared workload each task gets a `blockedBy` list of ids in the same file.
import * as fs from 'node:fs';

export interface Seed000Task {
  id: number;
  text: string;
  status: 'pending' | 'active' | 'done';
  blockedBy: number[];
  created_at: number;
  updated_at: number;
}

export class Seed000Store {
  private tasks: Seed000Task[] = [];
  private byId = new Map<number, Seed000Task>();
  private nextId = 1;

  constructor(readonly path: string) {
    this.save();
  }

  private save(): void {
    fs.writeFileSync(this.path, JSON.stringify({ tasks: this.tasks, next_id: this.nextId }));
  }

  add(text: string): Seed000Task {
    const t = Math.floor(Date.now() / 1000);
    const task: Seed000Task = {
      id: this.nextId++,
      text,
      status: 'pending',
      blockedBy: [],
      created_at: t,
      updated_at: t,
    };
    this.tasks.push(task);
    this.byId.set(task.id, task);
    this.save();
    return task;
  }

  update(id: number, patch: { status?: Seed000Task['status']; addBlockedBy?: number[] }): Seed000Task {
    const task = this.byId.get(id);
    if (!task) throw new Error(`no task ${id}`);
    if (patch.status) task.status = patch.status;
    for (const b of patch.addBlockedBy ?? []) if (!task.blockedBy.includes(b)) task.blockedBy.push(b);
    task.updated_at = Math.floor(Date.now() / 1000);
    this.save();
    return task;
  }

  /** Open tasks whose blockers are all done, in list order. */
  ready(): Seed000Task[] {
    return this.tasks.filter(
      (t) => t.status !== 'done' && t.blockedBy.every((b) => (this.byId.get(b)?.status ?? 'done') === 'done'),
    );
  }
}
