// Which tasks a transaction changed and how, read from what Yjs records of the transaction (`changedTasks`): the
// kinds agree with Yjs's own events on random edits, remote updates and undo, and Plan.onChange tells them.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { changedTasks } from '../src/change-events.js';
import { createPlan, type PlanChangeEvent, type TaskChange } from '../src/index.js';
import { seeded } from '../src/testing/seeded.js';

type Kinds = Record<string, { kind: string; fields: string[] }>;

function plain(changes: ReadonlyMap<string, { kind: string; fields: ReadonlySet<string> }>): Kinds {
  const out: Kinds = {};
  for (const [id, { kind, fields }] of changes) out[id] = { kind, fields: [...fields].sort() };
  return out;
}

/** Yjs's own account of a transaction, from a deep observer's events: the reference `changedTasks` must match. */
function fromEvents(events: Array<Y.YEvent<Y.AbstractType<unknown>>>, tasks: Y.Map<unknown>): Kinds {
  const out: Kinds = {};
  const note = (id: string, kind: string, field?: string) => {
    const change = out[id] ?? { kind, fields: [] };
    out[id] = change;
    if (kind !== 'updated') change.kind = kind;
    if (field !== undefined && !change.fields.includes(field)) change.fields.push(field);
  };
  for (const event of events) {
    const path = event.path as string[];
    if (event.target === tasks) {
      for (const [id, { action }] of event.changes.keys)
        note(id, action === 'add' ? 'added' : action === 'delete' ? 'removed' : 'updated');
    } else if (path.length >= 2) note(path[0]!, 'updated', path[1]);
    else for (const key of (event as Y.YMapEvent<unknown>).keysChanged) note(path[0]!, 'updated', key);
  }
  for (const [id, change] of Object.entries(out)) {
    if (!(tasks.get(id) instanceof Y.Map)) out[id] = { kind: 'removed', fields: [] };
    else if (change.kind !== 'updated') change.fields = [];
    change.fields.sort();
  }
  return out;
}

function newTask(rand: () => number): Y.Map<unknown> {
  const task = new Y.Map<unknown>();
  task.set('status', 'pending');
  task.set('title', new Y.Text(`t${Math.floor(rand() * 100)}`));
  task.set('blockedBy', new Y.Map<true>());
  return task;
}

describe('changedTasks', () => {
  it('agrees with Yjs’s events on random local, remote and undone transactions', () => {
    for (let seed = 1; seed <= 60; seed++) {
      const rand = seeded(seed);
      const docs = [new Y.Doc(), new Y.Doc(), new Y.Doc()];
      const undo = docs.map((doc) => new Y.UndoManager(doc.getMap('tasks'), { captureTimeout: 0 }));
      let compared = 0;
      for (const doc of docs) {
        const tasks = doc.getMap<unknown>('tasks');
        let expected: Kinds = {};
        tasks.observeDeep((events) => {
          expected = fromEvents(events, tasks);
        });
        doc.on('afterTransaction', (txn: Y.Transaction) => {
          expect(plain(changedTasks(txn, tasks)), `seed ${seed}`).toEqual(expected);
          if (Object.keys(expected).length > 0) compared++;
          expected = {};
        });
      }
      const ids = ['a', 'b', 'c', 'd'];
      const edit = (tasks: Y.Map<unknown>) => {
        const id = ids[Math.floor(rand() * ids.length)]!;
        const task = tasks.get(id);
        const r = rand();
        if (r < 0.2)
          tasks.set(id, newTask(rand)); // added, or replaced whole
        else if (r < 0.3) tasks.delete(id);
        else if (r < 0.33)
          tasks.set(id, 42); // a stray value
        else if (r < 0.4) {
          tasks.set(id, newTask(rand)); // added and removed in one transaction
          tasks.delete(id);
        } else if (task instanceof Y.Map) {
          if (r < 0.6) task.set(rand() < 0.5 ? 'status' : 'note', `v${Math.floor(rand() * 9)}`);
          else if (r < 0.75) (task.get('title') as Y.Text).insert(0, 'x');
          else (task.get('blockedBy') as Y.Map<true>).set(ids[Math.floor(rand() * ids.length)]!, true);
        }
      };
      for (let step = 0; step < 80; step++) {
        const at = Math.floor(rand() * docs.length);
        const doc = docs[at]!;
        const r = rand();
        if (r < 0.6) {
          const edits = 1 + Math.floor(rand() * 3);
          doc.transact(() => {
            for (let i = 0; i < edits; i++) edit(doc.getMap('tasks'));
          });
        } else if (r < 0.7) undo[at]!.undo();
        else if (r < 0.75) undo[at]!.redo();
        else {
          const other = docs[(at + 1 + Math.floor(rand() * 2)) % docs.length]!;
          Y.applyUpdate(other, Y.encodeStateAsUpdate(doc, Y.encodeStateVector(other)));
        }
      }
      expect(compared, `seed ${seed}`).toBeGreaterThan(20);
    }
  });
});

describe('Plan.onChange', () => {
  const byId = (event: PlanChangeEvent) => ({
    ...event,
    changes: [...event.changes].sort((x, y) => x.id.localeCompare(y.id)),
  });
  function watched(actor = 'agent:a') {
    const plan = createPlan({ actor, random: seeded(7), now: () => 1_000 });
    const events: PlanChangeEvent[] = [];
    plan.onChange((e) => events.push(e));
    return { plan, events };
  }

  it('tells adds, field writes inside a task and removals, without the bookkeeping fields', () => {
    const { plan, events } = watched();
    const [a, b] = plan.addMany([{ title: 'A', steps: [{ title: 'a1' }] }, { title: 'B' }]);
    const a1 = plan.children(a!.id)[0]!;
    plan.update(b!.id, { title: 'B, typed', addBlockedBy: [a1.id], context: { k: 1 } });
    plan.update(a1.id, { status: 'done' });
    plan.remove(a!.id);
    const change = (id: string, kind: TaskChange['kind'], fields: string[] = []) => ({
      id,
      kind,
      actor: 'agent:a',
      fields,
    });
    expect(events.map(byId)).toEqual(
      [
        [change(a!.id, 'added'), change(a1.id, 'added'), change(b!.id, 'added')],
        [change(b!.id, 'updated', ['blockedBy', 'context', 'title'])],
        [change(a1.id, 'updated', ['status'])],
        [change(a!.id, 'removed'), change(a1.id, 'removed'), change(b!.id, 'updated', ['blockedBy'])],
      ].map((changes) => byId({ local: true, changes })),
    );
  });

  it('leaves out a task added and removed in one transaction', () => {
    const { plan, events } = watched();
    const kept = plan.add({ title: 'kept' });
    plan.batch((p) => {
      p.remove(p.add({ title: 'gone' }).id);
      p.update(kept.id, { note: 'n' });
    });
    expect(events.at(-1)).toEqual({
      local: true,
      changes: [{ id: kept.id, kind: 'updated', actor: 'agent:a', fields: ['note'] }],
    });
  });

  it('tells a peer’s adds, writes and removals with the actor the task or its tombstone records', () => {
    const one = createPlan({ actor: 'agent:one', random: seeded(1) });
    const { plan: two, events } = watched('agent:two');
    const pass = () => Y.applyUpdate(two.doc, Y.encodeStateAsUpdate(one.doc, Y.encodeStateVector(two.doc)));
    const t = one.add({ title: 'T' });
    pass();
    one.withActor('user:ann').update(t.id, { status: 'in_progress' });
    pass();
    one.withActor('user:bob').remove(t.id);
    pass();
    expect(events).toEqual([
      { local: false, changes: [{ id: t.id, kind: 'added', actor: 'agent:one', fields: [] }] },
      { local: false, changes: [{ id: t.id, kind: 'updated', actor: 'user:ann', fields: ['status'] }] },
      { local: false, changes: [{ id: t.id, kind: 'removed', actor: 'user:bob', fields: [] }] },
    ]);
  });

  it('tells undo and redo as the changes they make', () => {
    const { plan, events } = watched();
    const undoable: boolean[] = [];
    plan.onChange(() => undoable.push(plan.canUndo(), plan.canRedo())); // the undo manager filed the step first
    const t = plan.add({ title: 'T' });
    plan.update(t.id, { status: 'done' });
    plan.undo();
    plan.undo();
    plan.redo();
    plan.remove(t.id);
    plan.undo();
    expect(events.slice(2).map((e) => e.changes.map((c) => [c.kind, c.fields]))).toEqual([
      [['updated', ['status']]],
      [['removed', []]],
      [['added', []]],
      [['removed', []]],
      [['added', []]],
    ]);
    expect(undoable.slice(0, 8)).toEqual([true, false, true, false, true, true, false, true]);
  });

  it('tells a task whose map was replaced whole as updated, and a stray value as a removal', () => {
    const { plan, events } = watched();
    const t = plan.add({ title: 'T' });
    const tasks = plan.doc.getMap<unknown>('tasks');
    const copy = new Y.Map<unknown>();
    for (const [key, value] of tasks.get(t.id) as Y.Map<unknown>)
      copy.set(key, value instanceof Y.AbstractType ? value.clone() : value);
    plan.doc.transact(() => tasks.set(t.id, copy), 'writer');
    expect(events.at(-1)!.changes).toMatchObject([{ id: t.id, kind: 'updated', fields: [] }]);
    expect(plan.get(t.id)!.title).toBe('T');
    plan.doc.transact(() => tasks.set(t.id, 42), 'writer');
    expect(events.at(-1)!.changes).toMatchObject([{ id: t.id, kind: 'removed', fields: [] }]);
    expect(plan.get(t.id)).toBeUndefined();
  });
});
