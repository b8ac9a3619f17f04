// The same plan model in Automerge, written the way its docs recommend: one document, a map of tasks keyed by id,
// each task a map of fields; every edit one `change`. Used by the tool-call and storage benchmarks.
import * as A from '@automerge/automerge';

export type AmTask = {
  id: string;
  num: number;
  title: string;
  status: string;
  blockedBy: Record<string, true>;
  createdAt: number;
  updatedAt: number;
  updatedBy: string;
};

export type AmPlan = {
  tasks: Record<string, AmTask>;
};

export function emptyPlan(): A.Doc<AmPlan> {
  return A.from<AmPlan>({ tasks: {} });
}

export function addTasks(
  doc: A.Doc<AmPlan>,
  tasks: Array<Pick<AmTask, 'id' | 'num' | 'title' | 'status'>>,
): A.Doc<AmPlan> {
  const now = Date.now();
  return A.change(doc, (d) => {
    for (const t of tasks)
      d.tasks[t.id] = { ...t, blockedBy: {}, createdAt: now, updatedAt: now, updatedBy: 'agent:writer' };
  });
}

export function setStatus(
  doc: A.Doc<AmPlan>,
  id: string,
  status: string,
  actor = 'agent:writer',
): A.Doc<AmPlan> {
  return A.change(doc, (d) => {
    const t = d.tasks[id]!;
    t.status = status;
    t.updatedAt = Date.now();
    t.updatedBy = actor;
  });
}

/** Open tasks whose blockers are all closed (the same rule as Cairn's, on this model). */
export function amReady(doc: A.Doc<AmPlan>): AmTask[] {
  const tasks = doc.tasks;
  const out: AmTask[] = [];
  for (const id in tasks) {
    const t = tasks[id]!;
    if (t.status !== 'pending' && t.status !== 'in_progress') continue;
    let ok = true;
    for (const b in t.blockedBy) {
      const s = tasks[b]?.status;
      if (s !== undefined && s !== 'done' && s !== 'cancelled' && s !== 'skipped') {
        ok = false;
        break;
      }
    }
    if (ok) out.push(t);
  }
  return out;
}
