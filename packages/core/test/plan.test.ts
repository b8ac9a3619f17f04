// The Plan API: writes, validation that changes nothing, ordering, graph queries, events and undo.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { CairnError, createPlan, type Plan, type PlanChangeEvent } from '../src/index.js';
import { seeded } from '../src/testing/seeded.js';

function newPlan(actor = 'agent:a', seed = 1): Plan {
  let clock = 1_000;
  return createPlan({ actor, random: seeded(seed), now: () => clock++ });
}

function expectUnchanged(plan: Plan, fn: () => unknown, code: string): CairnError {
  const before = Y.encodeStateAsUpdate(plan.doc);
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(CairnError);
  expect((caught as CairnError).code).toBe(code);
  expect(Y.encodeStateAsUpdate(plan.doc)).toEqual(before);
  return caught as CairnError;
}

function sync(a: Y.Doc, b: Y.Doc): void {
  Y.applyUpdate(b, Y.encodeStateAsUpdate(a, Y.encodeStateVector(b)));
  Y.applyUpdate(a, Y.encodeStateAsUpdate(b, Y.encodeStateVector(a)));
}

describe('adding tasks', () => {
  it('adds a task with steps in order, attributed to the actor', () => {
    const plan = newPlan();
    const task = plan.add({ title: 'Launch', steps: [{ title: 'Write post' }, { title: 'Review' }] });
    expect(task.id).toMatch(/^[0-9a-z]{7}$/);
    expect(task).toMatchObject({
      title: 'Launch',
      status: 'pending',
      parent: null,
      createdBy: 'agent:a',
      num: 1,
    });
    const steps = plan.children(task.id);
    expect(steps.map((s) => s.title)).toEqual(['Write post', 'Review']);
    expect(steps.every((s) => s.parent === task.id && s.updatedBy === 'agent:a')).toBe(true);
    expect(plan.toJSON().tasks.map((t) => t.title)).toEqual(['Launch', 'Write post', 'Review']);
  });

  it('appends after the last sibling whose rank is well formed, skipping one a writer damaged', () => {
    const plan = newPlan();
    const [a, b] = plan.addMany([{ title: 'a' }, { title: 'b' }]);
    (plan.doc.getMap('tasks').get(b!.id) as Y.Map<unknown>).set('rank', 'not a rank');
    const c = plan.add({ title: 'c' });
    expect(c.rank > a!.rank).toBe(true);
    expect(plan.add({ title: 'd' }).rank > c.rank).toBe(true);
    // The damaged one sorts after every well-formed rank.
    expect(plan.children(null).map((t) => t.title)).toEqual(['a', 'c', 'd', 'b']);
  });

  it('lets tasks of one call depend on each other through keys', () => {
    const plan = newPlan();
    const [a, b] = plan.addMany([
      { title: 'A', key: 'a' },
      { title: 'B', blockedBy: ['a'] },
    ]);
    expect(b!.blockedBy).toEqual([a!.id]);
    expect(plan.ready().map((t) => t.title)).toEqual(['A']);
  });

  it('refuses an unknown blocker, listing the known ids, and changes nothing', () => {
    const plan = newPlan();
    const a = plan.add({ title: 'A' });
    const error = expectUnchanged(plan, () => plan.add({ title: 'B', blockedBy: ['nope'] }), 'not_found');
    expect(error.message).toContain(a.id);
  });

  it('refuses bad fields with a message naming what is valid', () => {
    const plan = newPlan();
    const error = expectUnchanged(
      plan,
      () => plan.add({ title: 'A', status: 'finished' as never }),
      'invalid_argument',
    );
    expect(error.message).toMatch(/status/);
    expect(error.message).toMatch(/pending/);
    expectUnchanged(plan, () => plan.add({ title: '   ' }), 'invalid_argument');
    expectUnchanged(plan, () => plan.add({ title: 'x', extra: 1 } as never), 'invalid_argument');
    expectUnchanged(plan, () => plan.add({ title: 'x', status: 'skipped' }), 'invalid_transition');
    expectUnchanged(
      plan,
      () => plan.add({ title: 'x', wakeAt: '2026-01-01T00:00:00Z' }),
      'invalid_transition',
    );
  });

  it('inserts after a given sibling, or first with after: null', () => {
    const plan = newPlan();
    const [a] = plan.addMany([{ title: 'A' }, { title: 'C' }]);
    plan.add({ title: 'B', after: a!.id });
    plan.add({ title: 'Z', after: null });
    expect(plan.children(null).map((t) => t.title)).toEqual(['Z', 'A', 'B', 'C']);
  });
});

describe('updating tasks', () => {
  it('changes only the given fields and merges context key by key', () => {
    const plan = newPlan();
    const t = plan.add({ title: 'Book table', nextStep: 'call', context: { party: 4, day: 'fri' } });
    const u = plan
      .withActor('user:ann')
      .update(t.id, { status: 'in_progress', context: { day: null, time: '19:00' } });
    expect(u).toMatchObject({
      title: 'Book table',
      status: 'in_progress',
      nextStep: 'call',
      updatedBy: 'user:ann',
    });
    expect(u.context).toEqual({ party: 4, time: '19:00' });
  });

  it('keeps wakeAt only for waiting statuses', () => {
    const plan = newPlan();
    const t = plan.add({ title: 'Wait for reply' });
    expectUnchanged(plan, () => plan.update(t.id, { wakeAt: '2026-12-03T09:00:00Z' }), 'invalid_transition');
    const waiting = plan.update(t.id, { status: 'waiting_user', wakeAt: '2026-12-03T09:00:00Z' });
    expect(waiting.wakeAt).toBe('2026-12-03T09:00:00Z');
    expect(plan.update(t.id, { status: 'in_progress' }).wakeAt).toBeNull();
  });

  it('allows skipped only for steps', () => {
    const plan = newPlan();
    const t = plan.add({ title: 'T', steps: [{ title: 's' }] });
    expectUnchanged(plan, () => plan.update(t.id, { status: 'skipped' }), 'invalid_transition');
    const step = plan.children(t.id)[0]!;
    expect(plan.update(step.id, { status: 'skipped' }).status).toBe('skipped');
  });

  it('refuses a dependency on itself and one that closes a cycle', () => {
    const plan = newPlan();
    const [a, b, c] = plan.addMany([{ title: 'A' }, { title: 'B' }, { title: 'C' }]);
    plan.update(b!.id, { addBlockedBy: [a!.id] });
    plan.update(c!.id, { addBlockedBy: [b!.id] });
    expectUnchanged(plan, () => plan.update(a!.id, { addBlockedBy: [a!.id] }), 'cycle');
    const error = expectUnchanged(plan, () => plan.update(a!.id, { addBlockedBy: [c!.id] }), 'cycle');
    expect(error.message).toContain(a!.id);
    // Dropping the edge that would close the loop in the same call is fine.
    plan.update(b!.id, { removeBlockedBy: [a!.id] });
    expect(plan.update(a!.id, { addBlockedBy: [c!.id] }).blockedBy).toEqual([c!.id]);
  });

  it('updates several tasks at once, validating them all before the first write', () => {
    const plan = newPlan();
    const [a, b, c] = plan.addMany([{ title: 'A' }, { title: 'B' }, { title: 'C' }]);
    const events: PlanChangeEvent[] = [];
    plan.onChange((e) => events.push(e));
    const updated = plan.updateMany([
      { id: a!.id, patch: { status: 'done' } },
      { id: b!.id, patch: { nextStep: 'call', addBlockedBy: [c!.id] } },
    ]);
    expect(updated.map(({ task }) => [task.status, task.nextStep])).toEqual([
      ['done', null],
      ['pending', 'call'],
    ]);
    expect(events).toHaveLength(1);
    // Two new edges that only close a cycle together: the second is refused, and so is the first.
    const error = expectUnchanged(
      plan,
      () =>
        plan.updateMany([
          { id: c!.id, patch: { status: 'in_progress', addBlockedBy: [a!.id] } },
          { id: a!.id, patch: { addBlockedBy: [b!.id] } },
        ]),
      'cycle',
    );
    expect(error.message).toMatch(/^updates\[1\] \(task \w+\): Task \w+ cannot wait on/);
    // An edge an earlier update drops no longer counts.
    plan.updateMany([
      { id: b!.id, patch: { removeBlockedBy: [c!.id] } },
      { id: c!.id, patch: { addBlockedBy: [b!.id] } },
    ]);
    expect(plan.get(c!.id)!.blockedBy).toEqual([b!.id]);
    expectUnchanged(
      plan,
      () =>
        plan.updateMany([
          { id: a!.id, patch: { note: 'x' } },
          { id: a!.id, patch: { status: 'pending' } },
        ]),
      'invalid_argument',
    );
  });

  it('appends steps with the field changes, refusing all of them if one step is wrong', () => {
    const plan = newPlan();
    const [a, b] = plan.addMany([{ title: 'A' }, { title: 'B' }]);
    const [first, second] = plan.updateMany([
      { id: a!.id, patch: { status: 'in_progress' }, addSteps: [{ title: 'a1', key: 'k' }] },
      {
        id: b!.id,
        addSteps: [
          { title: 'b1', key: 'k' },
          { title: 'b2', blockedBy: ['k'] },
        ],
      },
    ]);
    expect(first!.task.status).toBe('in_progress');
    expect(first!.stepsAdded.map((s) => s.title)).toEqual(['a1']);
    expect(second!.stepsAdded.map((s) => [s.title, s.parent])).toEqual([
      ['b1', b!.id],
      ['b2', b!.id],
    ]);
    expect(second!.stepsAdded[1]!.blockedBy).toEqual([second!.stepsAdded[0]!.id]);
    const error = expectUnchanged(
      plan,
      () =>
        plan.updateMany([
          { id: a!.id, patch: { status: 'done' }, addSteps: [{ title: 'ok' }] },
          { id: b!.id, addSteps: [{ title: 'bad', blockedBy: ['zzzzzzz'] }] },
        ]),
      'not_found',
    );
    expect(error.message).toMatch(/^updates\[1\] \(task \w+\): No task with id "zzzzzzz"/);
  });

  it('co-edits a title character by character', () => {
    const a = newPlan('user:ann', 1);
    const b = createPlan({ actor: 'user:bob', doc: new Y.Doc() });
    const t = a.add({ title: 'Write post' });
    sync(a.doc, b.doc);
    a.update(t.id, { title: 'Write blog post' });
    b.update(t.id, { title: 'Write post today' });
    sync(a.doc, b.doc);
    expect(a.get(t.id)!.title).toBe('Write blog post today');
    expect(b.get(t.id)!.title).toBe('Write blog post today');
  });

  it('an unknown id is not_found and lists known ids', () => {
    const plan = newPlan();
    const t = plan.add({ title: 'T' });
    const error = expectUnchanged(plan, () => plan.update('zzzzzzz', { status: 'done' }), 'not_found');
    expect(error.details['known']).toEqual([t.id]);
  });
});

describe('removing and moving', () => {
  it('removes a task with its steps and drops dependencies on them', () => {
    const plan = newPlan();
    const [a, b] = plan.addMany([{ title: 'A', steps: [{ title: 'a1' }] }, { title: 'B' }]);
    plan.update(b!.id, { addBlockedBy: [a!.id] });
    const removed = plan.withActor('user:ann').remove(a!.id);
    expect(removed).toHaveLength(2);
    expect(plan.list().map((t) => t.title)).toEqual(['B']);
    expect(plan.get(b!.id)!.blockedBy).toEqual([]);
    expect(plan.doc.getMap('removed').get(a!.id)).toMatchObject({ by: 'user:ann' });
  });

  it('moves among siblings and under another parent, refusing to move under its own step', () => {
    const plan = newPlan();
    const [a, b, c] = plan.addMany([
      { title: 'A', steps: [{ title: 'a1' }] },
      { title: 'B' },
      { title: 'C' },
    ]);
    plan.move(c!.id, { before: a!.id });
    expect(plan.children(null).map((t) => t.title)).toEqual(['C', 'A', 'B']);
    plan.move(b!.id, { parent: a!.id, after: null });
    expect(plan.children(a!.id).map((t) => t.title)).toEqual(['B', 'a1']);
    const a1 = plan.children(a!.id)[1]!;
    expectUnchanged(plan, () => plan.move(a!.id, { parent: a1.id }), 'cycle');
    expectUnchanged(plan, () => plan.move(a!.id, { after: 'nope' }), 'invalid_argument');
  });

  it('replaces the whole list in one transaction', () => {
    const plan = newPlan();
    plan.addMany([{ title: 'old 1' }, { title: 'old 2' }]);
    let events = 0;
    plan.onChange(() => events++);
    plan.replace([
      { title: 'new 1', key: 'n1' },
      { title: 'new 2', blockedBy: ['n1'] },
    ]);
    expect(events).toBe(1);
    expect(plan.list().map((t) => t.title)).toEqual(['new 1', 'new 2']);
    expect(plan.list().map((t) => t.num)).toEqual([3, 4]);
  });
});

describe('graph queries', () => {
  it('follows the task-graph seed: 1 -> 2, 1 -> 3, 2 & 3 -> 4', () => {
    const plan = newPlan();
    const [t1, t2, t3, t4] = plan.addMany([
      { title: '1', key: '1' },
      { title: '2', key: '2', blockedBy: ['1'] },
      { title: '3', key: '3', blockedBy: ['1'] },
      { title: '4', blockedBy: ['2', '3'] },
    ]);
    expect(plan.ready().map((t) => t.title)).toEqual(['1']);
    expect(plan.blocked().map((b) => [b.task.title, b.reason])).toEqual([
      ['2', 'waiting_on_blockers'],
      ['3', 'waiting_on_blockers'],
      ['4', 'waiting_on_blockers'],
    ]);
    plan.update(t1!.id, { status: 'done' });
    expect(plan.ready().map((t) => t.title)).toEqual(['2', '3']);
    plan.update(t2!.id, { status: 'done' });
    plan.update(t3!.id, { status: 'cancelled' });
    expect(plan.ready().map((t) => t.id)).toEqual([t4!.id]);
  });

  it('a failed blocker blocks with its own reason; claimed tasks are ready only for their holder', () => {
    const plan = newPlan();
    const [a, b, c] = plan.addMany([
      { title: 'A', key: 'a' },
      { title: 'B', blockedBy: ['a'] },
      { title: 'C' },
    ]);
    plan.update(a!.id, { status: 'failed' });
    expect(plan.blocked()).toMatchObject([{ id: b!.id, reason: 'blocker_failed', blockedBy: [a!.id] }]);
    plan.update(c!.id, { assignee: 'agent:z' });
    expect(plan.ready().map((t) => t.id)).toEqual([]);
    expect(plan.ready({ actor: 'agent:z' }).map((t) => t.id)).toEqual([c!.id]);
  });

  it('steps of a blocked task are blocked too', () => {
    const plan = newPlan();
    const [a, b] = plan.addMany([
      { title: 'A', key: 'a' },
      { title: 'B', blockedBy: ['a'], steps: [{ title: 'b1' }] },
    ]);
    const b1 = plan.children(b!.id)[0]!;
    expect(plan.blocked().find((x) => x.id === b1.id)).toMatchObject({
      reason: 'parent_blocked',
      blockedBy: [b!.id],
    });
    plan.update(a!.id, { status: 'done' });
    // B waits on its open step now, not on A.
    expect(plan.ready().map((t) => t.title)).toEqual(['b1']);
  });

  it('a task with open steps waits on them: not ready, and ready once they are closed', async () => {
    const plan = newPlan();
    const [launch] = plan.addMany([
      {
        title: 'Website relaunch',
        steps: [{ title: 'Audit content' }, { title: 'Redesign', status: 'done' }],
      },
    ]);
    const [audit, redesign] = plan.children(launch!.id);
    expect(plan.ready().map((t) => t.title)).toEqual(['Audit content']);
    expect(plan.isReady(launch!.id)).toBe(false);
    expect(plan.blockedTask(launch!.id)).toMatchObject({
      reason: 'waiting_on_steps',
      blockedBy: [audit!.id],
    });
    // Its step does not inherit it: the step is what the parent waits on.
    expect(plan.blockedTask(audit!.id)).toBeUndefined();
    // claimNext hands out the step, and then nothing: the parent is not ready while its step is open.
    expect(await plan.claimNext()).toMatchObject({ outcome: 'won', taskId: audit!.id });
    expect(await plan.claimNext()).toMatchObject({ outcome: 'none' });
    plan.update(audit!.id, { status: 'done' });
    expect(plan.ready().map((t) => t.title)).toEqual(['Website relaunch']);
    // A step reopened makes its parent wait again; a new step too.
    plan.update(redesign!.id, { status: 'pending' });
    expect(plan.blockedTask(launch!.id)).toMatchObject({
      reason: 'waiting_on_steps',
      blockedBy: [redesign!.id],
    });
    plan.update(redesign!.id, { status: 'skipped' });
    const [copy] = plan.addMany([{ title: 'Write copy', parent: launch!.id }]);
    expect(plan.blockedTask(launch!.id)).toMatchObject({ blockedBy: [copy!.id] });
  });

  it('closing a task closes its open steps, at any depth, as skipped in the same write by the same actor', () => {
    const plan = newPlan('agent:closer');
    const [launch] = plan.addMany([
      {
        title: 'Product launch',
        steps: [
          { title: 'Write the announcement', status: 'done' },
          { title: 'Review it', status: 'waiting_user', wakeAt: '2030-01-01T00:00:00.000Z' },
          { title: 'Publish', steps: [{ title: 'On the blog' }, { title: 'On social', status: 'failed' }] },
        ],
      },
    ]);
    let transactions = 0;
    plan.onChange(() => transactions++);
    plan.update(launch!.id, { status: 'done' });
    expect(transactions).toBe(1);
    const statuses = plan.list().map((t) => [t.title, t.status, t.updatedBy]);
    expect(statuses).toEqual([
      ['Product launch', 'done', 'agent:closer'],
      ['Write the announcement', 'done', 'agent:closer'],
      ['Review it', 'skipped', 'agent:closer'],
      ['Publish', 'skipped', 'agent:closer'],
      ['On the blog', 'skipped', 'agent:closer'],
      ['On social', 'failed', 'agent:closer'],
    ]);
    expect(plan.list().find((t) => t.title === 'Review it')!.wakeAt).toBeNull();
    expect(plan.list({ state: 'open' })).toEqual([]);
    // One undo step brings them all back.
    expect(plan.undo()).toBe(true);
    expect(plan.list({ state: 'open' }).map((t) => t.title)).toEqual([
      'Product launch',
      'Review it',
      'Publish',
      'On the blog',
    ]);
  });

  it('in one call of updates, a status given to a step stands; other open steps of a closed task are skipped', () => {
    const plan = newPlan();
    const [trip] = plan.addMany([{ title: 'Trip', steps: [{ title: 'Flights' }, { title: 'Hotel' }] }]);
    const [flights, hotel] = plan.children(trip!.id);
    plan.updateMany([
      { id: flights!.id, patch: { status: 'done' } },
      { id: trip!.id, patch: { status: 'done' }, addSteps: [{ title: 'Car' }] },
      { id: hotel!.id, patch: { note: 'booked by phone' } },
    ]);
    expect(plan.list().map((t) => [t.title, t.status])).toEqual([
      ['Trip', 'done'],
      ['Flights', 'done'],
      ['Hotel', 'skipped'],
      ['Car', 'skipped'],
    ]);
  });

  it('reports a cycle created by a merge, the same way on every replica', () => {
    const one = newPlan('agent:one', 1);
    const two = createPlan({ actor: 'agent:two', doc: new Y.Doc() });
    const [a, b] = one.addMany([{ title: 'A' }, { title: 'B' }]);
    sync(one.doc, two.doc);
    one.update(a!.id, { addBlockedBy: [b!.id] });
    two.update(b!.id, { addBlockedBy: [a!.id] });
    sync(one.doc, two.doc);
    const cycle = [a!.id, b!.id].sort();
    expect(one.cycles()).toEqual([cycle]);
    expect(two.cycles()).toEqual([cycle]);
    expect(one.blocked().map((x) => [x.id, x.reason])).toEqual(two.blocked().map((x) => [x.id, x.reason]));
    expect(one.blocked().every((x) => x.reason === 'cycle')).toBe(true);
    expect(one.ready()).toEqual([]);
  });
});

describe('concurrency', () => {
  it('shows a step added under a concurrently removed parent at the top level', () => {
    const one = newPlan('agent:one', 1);
    const two = createPlan({ actor: 'agent:two', doc: new Y.Doc() });
    const parent = one.add({ title: 'Parent' });
    sync(one.doc, two.doc);
    one.remove(parent.id);
    two.add({ title: 'late step', parent: parent.id });
    sync(one.doc, two.doc);
    expect(one.toJSON()).toEqual(two.toJSON());
    expect(one.children(null).map((t) => t.title)).toEqual(['late step']);
  });

  it('breaks a parent cycle from concurrent moves deterministically', () => {
    const one = newPlan('agent:one', 1);
    const two = createPlan({ actor: 'agent:two', doc: new Y.Doc() });
    const [a, b] = one.addMany([{ title: 'A' }, { title: 'B' }]);
    sync(one.doc, two.doc);
    one.move(a!.id, { parent: b!.id });
    two.move(b!.id, { parent: a!.id });
    sync(one.doc, two.doc);
    expect(one.toJSON()).toEqual(two.toJSON());
    expect(one.list()).toHaveLength(2);
    expect(one.children(null)).toHaveLength(1);
  });

  it('credits concurrent status changes to the writer whose status won, whoever wrote last before', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const a = createPlan({ actor: 'agent:a', doc: new Y.Doc() });
      const b = createPlan({ actor: 'agent:b', doc: new Y.Doc() });
      const task = a.add({ title: 'shared' });
      a.update(task.id, { status: 'in_progress' }); // agent:a wrote last
      Y.applyUpdate(b.doc, Y.encodeStateAsUpdate(a.doc));
      a.update(task.id, { status: seed % 2 ? 'done' : 'failed' });
      b.update(task.id, { status: 'waiting_user' });
      Y.applyUpdate(a.doc, Y.encodeStateAsUpdate(b.doc));
      Y.applyUpdate(b.doc, Y.encodeStateAsUpdate(a.doc));
      const merged = a.get(task.id)!;
      expect(merged.updatedBy).toBe(merged.status === 'waiting_user' ? 'agent:b' : 'agent:a');
      expect(b.get(task.id)).toEqual(merged);
    }
  });

  it('repairs integer aliases that collided in concurrent creation', () => {
    const one = newPlan('agent:one', 1);
    const two = createPlan({ actor: 'agent:two', doc: new Y.Doc(), now: () => 5_000 });
    const a = one.add({ title: 'from one' });
    const b = two.add({ title: 'from two' });
    expect(a.num).toBe(1);
    expect(b.num).toBe(1);
    sync(one.doc, two.doc);
    sync(one.doc, two.doc);
    expect(one.byNum(1)!.id).toBe(a.id);
    expect(two.get(b.id)!.num).toBe(2);
    expect(one.get(b.id)!.num).toBe(2);
  });
});

describe('integer aliases', () => {
  it('finds a task by alias, never reusing a removed one, inside a batch too', () => {
    const plan = newPlan();
    const [a, b] = plan.addMany([{ title: 'A' }, { title: 'B' }]);
    expect(plan.byNum(2)!.id).toBe(b!.id);
    plan.remove(b!.id);
    expect(plan.byNum(2)).toBeUndefined();
    const c = plan.batch((p) => {
      const added = p.add({ title: 'C' });
      expect(p.byNum(3)!.id).toBe(added.id);
      return added;
    });
    expect(c.num).toBe(3);
    expect(plan.byNum(3)!.id).toBe(c.id);
    expect(plan.byNum(1)!.id).toBe(a!.id);
  });

  it('stays above the aliases a peer gave out, even of tasks it removed before this replica saw them', () => {
    const one = newPlan('agent:one', 1);
    const two = createPlan({ actor: 'agent:two', doc: new Y.Doc() });
    expect(two.add({ title: 'X' }).num).toBe(1);
    sync(two.doc, one.doc);
    const gone = one.add({ title: 'Gone soon' });
    one.remove(gone.id);
    one.add({ title: 'Kept' });
    sync(one.doc, two.doc);
    expect(two.byNum(3)!.title).toBe('Kept');
    expect(two.add({ title: 'Y' }).num).toBe(4);
    const solo = createPlan({ actor: 'agent:solo', doc: new Y.Doc() });
    solo.add({ title: 'S' });
    const removedOnly = createPlan({ actor: 'agent:r', doc: new Y.Doc() });
    removedOnly.remove(removedOnly.add({ title: 'R1' }).id);
    removedOnly.remove(removedOnly.add({ title: 'R2' }).id);
    sync(removedOnly.doc, solo.doc);
    expect(solo.add({ title: 'T' }).num).toBe(3);
  });
});

describe('events and undo', () => {
  it('emits changes with the actor, for local and remote writes', () => {
    const one = newPlan('agent:one', 1);
    const two = createPlan({ actor: 'agent:two', doc: new Y.Doc() });
    const seen: PlanChangeEvent[] = [];
    two.onChange((e) => seen.push(e));
    const t = one.add({ title: 'T' });
    sync(one.doc, two.doc);
    two.withActor('user:ann').update(t.id, { status: 'done' });
    expect(seen).toEqual([
      { local: false, changes: [{ id: t.id, kind: 'added', actor: 'agent:one', fields: [] }] },
      { local: true, changes: [{ id: t.id, kind: 'updated', actor: 'user:ann', fields: ['status'] }] },
    ]);
  });

  it('undoes only its own actor’s writes', () => {
    const doc = new Y.Doc();
    const ann = createPlan({ doc, actor: 'user:ann' });
    const bot = createPlan({ doc, actor: 'agent:bot' });
    const t = ann.add({ title: 'T' });
    bot.update(t.id, { status: 'in_progress' });
    ann.update(t.id, { title: 'T2' });
    expect(ann.undo()).toBe(true);
    expect(ann.get(t.id)).toMatchObject({ title: 'T', status: 'in_progress' });
    expect(bot.undo()).toBe(true);
    expect(ann.get(t.id)!.status).toBe('pending');
    expect(ann.redo()).toBe(true);
    expect(ann.get(t.id)!.title).toBe('T2');
  });

  it('snapshots are frozen and toJSON is deterministic across replicas', () => {
    const one = newPlan('agent:one', 1);
    one.addMany([{ title: 'A', context: { b: 1, a: 2 } }, { title: 'B' }]);
    const two = createPlan({ actor: 'agent:two', doc: new Y.Doc() });
    sync(one.doc, two.doc);
    expect(JSON.stringify(one.toJSON())).toBe(JSON.stringify(two.toJSON()));
    expect(Object.keys(one.list()[0]!.context)).toEqual(['a', 'b']);
    expect(Object.isFrozen(one.list()[0])).toBe(true);
  });
});
