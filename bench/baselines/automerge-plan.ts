// The same plan model in Automerge, written the way its docs recommend: one document, a map of tasks keyed by id,
// each task a map of fields; every edit one `change`. Fields nobody co-edits (status, who, ids) are
// `ImmutableString` scalars (a plain JS string would become a collaborative text object, which costs several
// times more per write); titles stay text, as Cairn's are Y.Text. Used by the tool-call and storage benchmarks.
import * as A from '@automerge/automerge';

export type AmTask = {
  id: A.ImmutableString;
  num: number;
  title: string;
  status: A.ImmutableString;
  blockedBy: Record<string, true>;
  createdAt: number;
  updatedAt: number;
  updatedBy: A.ImmutableString;
};

export type AmPlan = {
  tasks: Record<string, AmTask>;
};

export interface AmTaskInput {
  id: string;
  num: number;
  title: string;
  status: string;
}

const str = (s: string) => new A.ImmutableString(s);

/** A scalar string field's value. */
export function text(value: A.ImmutableString | string): string {
  return typeof value === 'string' ? value : value.val;
}

export function emptyPlan(): A.Doc<AmPlan> {
  return A.from<AmPlan>({ tasks: {} });
}

export function newTask(t: AmTaskInput, actor = 'agent:writer'): AmTask {
  const now = Date.now();
  return {
    id: str(t.id),
    num: t.num,
    title: t.title,
    status: str(t.status),
    blockedBy: {},
    createdAt: now,
    updatedAt: now,
    updatedBy: str(actor),
  };
}

export function addTasks(doc: A.Doc<AmPlan>, tasks: AmTaskInput[]): A.Doc<AmPlan> {
  return A.change(doc, (d) => {
    for (const t of tasks) d.tasks[t.id] = newTask(t);
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
    t.status = str(status);
    t.updatedAt = Date.now();
    t.updatedBy = str(actor);
  });
}

/** Open tasks whose blockers are all closed (the same rule as Cairn's, on this model). */
export function amReady(doc: A.Doc<AmPlan>): AmTask[] {
  const tasks = doc.tasks;
  const out: AmTask[] = [];
  for (const id in tasks) {
    const t = tasks[id]!;
    const status = text(t.status);
    if (status !== 'pending' && status !== 'in_progress') continue;
    let ok = true;
    for (const b in t.blockedBy) {
      const blocker = tasks[b];
      const s = blocker ? text(blocker.status) : undefined;
      if (s !== undefined && s !== 'done' && s !== 'cancelled' && s !== 'skipped') {
        ok = false;
        break;
      }
    }
    if (ok) out.push(t);
  }
  return out;
}
