// The native family, call by call: a whole plan in one call, partial updates, reads that say why, search.
import { describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import { createPlan, createToolkit, type Toolkit } from '../src/index.js';
import { fixedPlan, refused, sync } from './tools-fixtures.js';

type Brief = { id: string; title: string; status: string; steps?: Brief[] };

async function writePlan(tk: Toolkit) {
  return (await tk.dispatch('add_tasks', {
    tasks: [
      { key: 'read', title: 'Read the auth code' },
      {
        key: 'write',
        title: 'Write AuthManager',
        blockedBy: ['read'],
        steps: ['Sketch the API', { title: 'Implement' }],
      },
      { key: 'tests', title: 'Update tests', blockedBy: ['write'] },
      { title: 'Update docs', blockedBy: ['write'], nextStep: 'List the changed endpoints' },
      { title: 'Cover token refresh', parent: 'tests' },
    ],
  })) as { added: Brief[]; keys: Record<string, string> };
}

describe('cairn family', () => {
  it('writes a whole plan in one call: nested steps, keys for dependencies and parents', async () => {
    const tk = createToolkit(fixedPlan(), {});
    const { added, keys } = await writePlan(tk);
    expect(added.map((t) => t.title)).toEqual([
      'Read the auth code',
      'Write AuthManager',
      'Update tests',
      'Update docs',
    ]);
    expect(added[1]!.steps!.map((s) => s.title)).toEqual(['Sketch the API', 'Implement']);
    expect(added[2]!.steps!.map((s) => s.title)).toEqual(['Cover token refresh']);
    expect(Object.keys(keys).sort()).toEqual(['read', 'tests', 'write']);
    expect(tk.plan.get(keys['write']!)!.blockedBy).toEqual([keys['read']]);
    const ready = (await tk.dispatch('list_tasks', {})) as { view: string; tasks: Brief[] };
    expect(ready.view).toBe('ready');
    expect(ready.tasks.map((t) => t.title)).toEqual(['Read the auth code']);
  });

  it('marks one task done in a few tokens and says what became ready', async () => {
    const tk = createToolkit(fixedPlan(), {});
    const { keys } = await writePlan(tk);
    const args = `{"updates":[{"id":"${keys['read']}","status":"done"}]}`;
    expect(args.length).toBeLessThan(50);
    const result = (await tk.dispatch('update_tasks', args)) as { updated: Brief[]; nowReady: Brief[] };
    expect(result.updated).toEqual([{ id: keys['read'], title: 'Read the auth code', status: 'done' }]);
    // Its steps, not the task itself: a task with open steps waits on them.
    expect(result.nowReady.map((t) => t.title)).toEqual(['Sketch the API', 'Implement']);
  });

  it('updates many fields of many tasks at once, all or nothing', async () => {
    const tk = createToolkit(fixedPlan(), {});
    const { keys } = await writePlan(tk);
    const docs = tk.plan.list().find((t) => t.title === 'Update docs')!;
    await tk.dispatch('update_tasks', {
      updates: [
        { id: docs.id, context: { pages: ['login'], owner: 'ann' }, note: 'short', assignee: 'user:ann' },
        { id: keys['tests']!, addSteps: ['Cover logout'], title: 'Update the tests' },
      ],
    });
    expect(tk.plan.get(docs.id)).toMatchObject({
      context: { owner: 'ann', pages: ['login'] },
      note: 'short',
      assignee: 'user:ann',
    });
    expect(tk.plan.children(keys['tests']!).map((s) => s.title)).toEqual([
      'Cover token refresh',
      'Cover logout',
    ]);
    await tk.dispatch('update_tasks', {
      updates: [{ id: docs.id, context: { owner: null }, assignee: null }],
    });
    expect(tk.plan.get(docs.id)).toMatchObject({ context: { pages: ['login'] }, assignee: null });
    // The second update is refused, so the first one is not applied either.
    const error = await refused(
      tk,
      'update_tasks',
      {
        updates: [
          { id: docs.id, status: 'done' },
          { id: keys['read']!, addBlockedBy: [keys['tests']!] },
        ],
      },
      'cycle',
    );
    expect(error.message).toMatch(/^updates\[1\] \(task \w+\): Task \w+ cannot wait on \w+/);
    expect(tk.plan.get(docs.id)!.status).toBe('pending');
  });

  it('validates field changes and new steps up front instead of dry-running on a copy', async () => {
    const tk = createToolkit(fixedPlan(), {});
    const { keys } = await writePlan(tk);
    const atomic = vi.spyOn(tk.plan, 'atomic');
    const result = (await tk.dispatch('update_tasks', {
      updates: [
        { id: keys['read']!, status: 'done' },
        { id: keys['tests']!, status: 'in_progress', addSteps: ['Cover logout'] },
      ],
    })) as { updated: Array<Brief & { stepsAdded?: Brief[] }> };
    expect(result.updated[1]!.stepsAdded!.map((s) => s.title)).toEqual(['Cover logout']);
    expect(atomic).not.toHaveBeenCalled();
    // A move can depend on another change of the call, and one task twice is two changes of it: dry-run first.
    await tk.dispatch('update_tasks', {
      updates: [{ id: keys['tests']!, note: 'n', parent: keys['write']! }],
    });
    await tk.dispatch('update_tasks', {
      updates: [
        { id: keys['tests']!, note: 'a' },
        { id: keys['tests']!, nextStep: 'b' },
      ],
    });
    expect(atomic).toHaveBeenCalledTimes(2);
    expect(tk.plan.get(keys['tests']!)).toMatchObject({ note: 'a', nextStep: 'b', parent: keys['write'] });
    const error = await refused(
      tk,
      'update_tasks',
      { updates: [{ id: keys['read']!, note: 'x' }, { id: keys['tests']! }] },
      'invalid_argument',
    );
    expect(error.message).toMatch(/^updates\[1\] \(task \w+\): Nothing to change/);
  });

  it('moves, waits and wakes, removes with steps', async () => {
    const tk = createToolkit(fixedPlan(), {});
    const { keys } = await writePlan(tk);
    const docs = tk.plan.list().find((t) => t.title === 'Update docs')!;
    await tk.dispatch('update_tasks', { updates: [{ id: docs.id, parent: keys['write']!, after: null }] });
    expect(tk.plan.children(keys['write']!).map((s) => s.title)).toEqual([
      'Update docs',
      'Sketch the API',
      'Implement',
    ]);
    await tk.dispatch('update_tasks', {
      updates: [{ id: keys['read']!, status: 'waiting_user', wakeAt: '2026-12-04T09:00:00Z' }],
    });
    expect(tk.plan.get(keys['read']!)!.wakeAt).toBe('2026-12-04T09:00:00Z');
    await refused(
      tk,
      'update_tasks',
      { updates: [{ id: keys['read']!, status: 'done', wakeAt: '2026-12-05T09:00:00Z' }] },
      'invalid_transition',
    );
    const removed = (await tk.dispatch('remove_tasks', { ids: [keys['write']!] })) as { removed: Brief[] };
    expect(removed.removed.map((t) => t.title).sort()).toEqual([
      'Implement',
      'Sketch the API',
      'Update docs',
      'Write AuthManager',
    ]);
    expect(tk.plan.get(keys['tests']!)!.blockedBy).toEqual([]);
  });

  it('gets one task with what it waits on, what waits on it and why it is blocked', async () => {
    const tk = createToolkit(fixedPlan(), {});
    const { keys } = await writePlan(tk);
    const { task } = (await tk.dispatch('get_task', { id: keys['write'] })) as {
      task: Record<string, unknown>;
    };
    expect(task).toMatchObject({
      id: keys['write'],
      title: 'Write AuthManager',
      status: 'pending',
      ready: false,
      blocked: {
        reason: 'waiting_on_blockers',
        waitingOn: [{ id: keys['read'], title: 'Read the auth code' }],
      },
      blockedBy: [{ id: keys['read'], title: 'Read the auth code', status: 'pending' }],
      steps: [
        { title: 'Sketch the API', status: 'pending' },
        { title: 'Implement', status: 'pending' },
      ],
      createdBy: 'agent:a',
    });
    expect((task['blocks'] as Brief[]).map((t) => t.title)).toEqual(['Update tests', 'Update docs']);
    expect(task).not.toHaveProperty('note');
    const error = await refused(tk, 'get_task', { id: 'nope' }, 'not_found');
    expect(error.message).toContain(keys['read']!);
  });

  it('lists blocked tasks with the reason, including a cycle that only a merge could make', async () => {
    const one = fixedPlan('agent:one', 1);
    const two = createPlan({ actor: 'agent:two', doc: new Y.Doc() });
    const tk = createToolkit(one, {});
    const { added } = (await tk.dispatch('add_tasks', {
      tasks: [
        { title: 'A' },
        { title: 'B' },
        { key: 'c', title: 'C', status: 'failed' },
        { title: 'D', blockedBy: ['c'] },
      ],
    })) as { added: Brief[] };
    const [a, b, , d] = added.map((t) => t.id);
    sync(one.doc, two.doc);
    one.update(a!, { addBlockedBy: [b!] });
    two.update(b!, { addBlockedBy: [a!] });
    sync(one.doc, two.doc);
    const blocked = (await tk.dispatch('list_tasks', { view: 'blocked' })) as {
      tasks: Array<Record<string, unknown>>;
    };
    expect(blocked.tasks.map((t) => [t['title'], (t['blocked'] as { reason: string }).reason])).toEqual([
      ['A', 'cycle'],
      ['B', 'cycle'],
      ['D', 'blocker_failed'],
    ]);
    expect(blocked.tasks[2]!['blocked']).toEqual({
      reason: 'blocker_failed',
      waitingOn: [{ id: added[2]!.id, title: 'C' }],
    });
    expect(blocked.tasks[0]!['blocked']).toEqual({
      reason: 'cycle',
      cycle: [a, b].sort().map((id) => ({ id, title: one.get(id!)!.title })),
    });
    expect(d).toBeDefined();
  });

  it('lists open, closed, all and by assignee; ready excludes what others hold', async () => {
    const tk = createToolkit(fixedPlan(), { actor: 'agent:me' });
    await tk.dispatch('add_tasks', {
      tasks: [
        { title: 'Mine', assignee: 'agent:me' },
        { title: 'Theirs', assignee: 'agent:other' },
        { title: 'Free' },
        { title: 'Gone', status: 'done' },
      ],
    });
    const titles = async (args: unknown) =>
      ((await tk.dispatch('list_tasks', args)) as { tasks: Brief[] }).tasks.map((t) => t.title);
    expect(await titles({ view: 'ready' })).toEqual(['Mine', 'Free']);
    expect(await titles({ view: 'open' })).toEqual(['Mine', 'Theirs', 'Free']);
    expect(await titles({ view: 'closed' })).toEqual(['Gone']);
    expect(await titles({ view: 'all', assignee: 'agent:other' })).toEqual(['Theirs']);
    expect(await tk.dispatch('list_tasks', { view: 'all', limit: 1 })).toMatchObject({ count: 4, more: 3 });
    await refused(tk, 'list_tasks', { view: 'mine' }, 'invalid_argument');
  });

  it('pages a long list: count for the whole view, more for what is left, offset for the next page', async () => {
    const tk = createToolkit(fixedPlan(), {});
    await tk.dispatch('add_tasks', { tasks: Array.from({ length: 150 }, (_, i) => ({ title: `T${i}` })) });
    type Page = { count: number; tasks: Brief[]; more?: number };
    const first = (await tk.dispatch('list_tasks', {})) as Page;
    expect(first).toMatchObject({ view: 'ready', count: 150, more: 50 });
    expect(first.tasks).toHaveLength(100);
    const next = (await tk.dispatch('list_tasks', { offset: 100, limit: 40 })) as Page;
    expect(next.tasks.map((t) => t.title)).toEqual(Array.from({ length: 40 }, (_, i) => `T${100 + i}`));
    expect(next).toMatchObject({ count: 150, more: 10 });
    const last = (await tk.dispatch('list_tasks', { offset: 140 })) as Page;
    expect(last.tasks).toHaveLength(10);
    expect(last).not.toHaveProperty('more');
    expect(((await tk.dispatch('list_tasks', { offset: 500 })) as Page).tasks).toEqual([]);
    await refused(tk, 'list_tasks', { offset: -1 }, 'invalid_argument');
  });

  it('searches by keyword, closed tasks included', async () => {
    const tk = createToolkit(fixedPlan(), {});
    await tk.dispatch('add_tasks', {
      tasks: [
        { title: 'Book a table at Luigi', status: 'done', context: { party: 4 } },
        { title: 'Call the restaurant', note: 'Luigi closes at 22:00' },
      ],
    });
    const found = (await tk.dispatch('search_tasks', { query: 'luigi' })) as {
      count: number;
      tasks: Array<Brief & { matched: string[] }>;
    };
    expect(found.tasks.map((t) => [t.title, t.status, t.matched])).toEqual([
      ['Book a table at Luigi', 'done', ['title']],
      ['Call the restaurant', 'pending', ['note']],
    ]);
    expect(await tk.dispatch('search_tasks', { query: 'luigi', state: 'open' })).toMatchObject({ count: 1 });
    await refused(tk, 'search_tasks', { query: '  ' }, 'invalid_argument');
  });

  it('ranks the exact and whole-word matches first, and counts every match', async () => {
    const tk = createToolkit(fixedPlan(), {});
    await tk.dispatch('add_tasks', {
      tasks: Array.from({ length: 20 }, (_, i) => ({ title: `Task number ${i + 1}` })),
    });
    const found = (await tk.dispatch('search_tasks', { query: 'number 1', limit: 3 })) as {
      count: number;
      tasks: Brief[];
    };
    // "1" starts 11 titles (1, 10 to 19); the one where it is a whole word comes first.
    expect(found.count).toBe(11);
    expect(found.tasks).toHaveLength(3);
    expect(found.tasks[0]!.title).toBe('Task number 1');
    const exact = (await tk.dispatch('search_tasks', { query: 'task number 12' })) as { tasks: Brief[] };
    expect(exact.tasks[0]!.title).toBe('Task number 12');
  });

  it('refuses bad input with what is valid and changes nothing', async () => {
    const tk = createToolkit(fixedPlan(), {});
    await writePlan(tk);
    expect((await refused(tk, 'add_tasks', { tasks: [] }, 'invalid_argument')).message).toContain('tasks');
    expect(
      (await refused(tk, 'add_tasks', { tasks: [{ title: 'x', blockedBy: ['nope'] }] }, 'not_found')).message,
    ).toContain('known ids');
    const typo = await refused(
      tk,
      'add_tasks',
      { tasks: [{ title: 'x', depends: ['a'] }] },
      'invalid_argument',
    );
    expect(typo.message).toContain(
      'unknown field "depends"; the fields here are title, key?, parent?, after?, blockedBy?',
    );
    const step = await refused(
      tk,
      'add_tasks',
      { tasks: [{ title: 'a', steps: ['x', 5] }] },
      'invalid_argument',
    );
    expect(step.message).toContain('tasks.0.steps.1: expected string | { title: string, key?: string');
    const nan = await refused(
      tk,
      'add_tasks',
      { tasks: [{ title: 'a', context: { n: Number.NaN } }] },
      'invalid_argument',
    );
    expect(nan.message).toContain('context values must be JSON');
    await refused(
      tk,
      'add_tasks',
      {
        tasks: [
          { title: 'a', key: 'k', parent: 'j' },
          { title: 'b', key: 'j', parent: 'k' },
        ],
      },
      'cycle',
    );
    await refused(
      tk,
      'add_tasks',
      {
        tasks: [
          { title: 'a', key: 'k' },
          { title: 'b', key: 'k' },
        ],
      },
      'invalid_argument',
    );
    await refused(tk, 'add_tasks', { tasks: [{ title: 'a', status: 'skipped' }] }, 'invalid_transition');
    await refused(tk, 'update_tasks', { updates: [{ id: 'nope', status: 'done' }] }, 'not_found');
    await refused(tk, 'remove_tasks', { ids: ['nope'] }, 'not_found');
    await refused(
      tk,
      'update_tasks',
      { updates: [{ id: tk.plan.list()[0]!.id, assignee: 'bob' }] },
      'invalid_argument',
    );
  });
});

describe('update_tasks nowReady', () => {
  it('names exactly the tasks that became ready, as a before/after diff of the whole ready list would', async () => {
    let state = 7;
    const random = () => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return state / 2 ** 31;
    };
    const plan = createPlan({ actor: 'agent:a' });
    const tk = createToolkit(plan, {});
    const statuses = ['pending', 'in_progress', 'done', 'failed', 'cancelled', 'waiting_user'] as const;
    let checked = 0;
    for (let i = 0; i < 1000; i++) {
      const tasks = plan.list();
      const pick = () => tasks[Math.floor(random() * tasks.length)]!.id;
      if (tasks.length < 6 || random() < 0.15) {
        plan.add({ title: `t${i}`, ...(tasks.length > 0 && random() < 0.4 ? { parent: pick() } : {}) });
        continue;
      }
      const roll = random();
      const update =
        roll < 0.6
          ? { id: pick(), status: statuses[Math.floor(random() * statuses.length)]! }
          : roll < 0.85
            ? { id: pick(), addBlockedBy: [pick()] }
            : { id: pick(), assignee: random() < 0.5 ? 'agent:b' : null };
      const before = new Set(plan.ready().map((t) => t.id));
      const result = (await tk.dispatch('update_tasks', { updates: [update] })) as
        | { nowReady: Brief[] }
        | { error: unknown };
      if ('error' in result) continue; // a refused cycle changes nothing
      const expected = plan
        .ready()
        .filter((t) => !before.has(t.id) && t.id !== update.id)
        .map((t) => t.id);
      expect(result.nowReady.map((t) => t.id).sort()).toEqual(expected.sort());
      if (expected.length > 0) checked++;
    }
    expect(checked).toBeGreaterThan(10);
  });
});

describe('update_tasks nowReady, bounded', () => {
  it('lists at most 50 newly ready tasks and counts the rest', async () => {
    const plan = createPlan({ actor: 'agent:a' });
    const tk = createToolkit(plan, {});
    const gate = plan.add({ title: 'gate' });
    plan.addMany(Array.from({ length: 120 }, (_, i) => ({ title: `waits ${i}`, blockedBy: [gate.id] })));
    const result = (await tk.dispatch('update_tasks', { updates: [{ id: gate.id, status: 'done' }] })) as {
      nowReady: Brief[];
      moreReady?: number;
    };
    expect(result.nowReady.map((t) => t.title)).toEqual(Array.from({ length: 50 }, (_, i) => `waits ${i}`));
    expect(result.moreReady).toBe(70);
  });
});

describe('cairn family: a task with open steps', () => {
  it('is not ready while its steps are open (blocked view says so), and closing it closes them', async () => {
    const tk = createToolkit(fixedPlan(), {});
    const [launch, after] = tk.plan.addMany([
      {
        title: 'Website relaunch',
        key: 'w',
        steps: [{ title: 'Audit content' }, { title: 'Redesign' }, { title: 'Go live', status: 'done' }],
      },
      { title: 'Announce it' },
    ]);
    const [audit, redesign] = tk.plan.children(launch!.id);
    tk.plan.update(after!.id, { addBlockedBy: [redesign!.id] });
    const ready = (await tk.dispatch('list_tasks', {})) as { tasks: Brief[] };
    expect(ready.tasks.map((t) => t.title)).toEqual(['Audit content', 'Redesign']);
    const blocked = (await tk.dispatch('list_tasks', { view: 'blocked' })) as {
      tasks: Array<Brief & { blocked: unknown }>;
    };
    expect(blocked.tasks.find((t) => t.id === launch!.id)!.blocked).toEqual({
      reason: 'waiting_on_steps',
      waitingOn: [audit!, redesign!]
        .map((s) => ({ id: s.id, title: s.title }))
        .sort((a, b) => (a.id < b.id ? -1 : 1)),
    });
    expect(await tk.dispatch('claim_next', {})).toMatchObject({ task: { id: audit!.id } });

    const result = (await tk.dispatch('update_tasks', {
      updates: [{ id: launch!.id, status: 'done' }],
    })) as { updated: Brief[]; nowReady: Brief[] };
    // The result names the steps the close skipped (issue 30).
    expect(result.updated).toEqual([
      {
        id: launch!.id,
        title: 'Website relaunch',
        status: 'done',
        skippedSteps: [
          { id: expect.any(String), title: 'Audit content' },
          { id: expect.any(String), title: 'Redesign' },
        ],
      },
    ]);
    expect(tk.plan.children(launch!.id).map((s) => [s.title, s.status, s.updatedBy])).toEqual([
      ['Audit content', 'skipped', 'agent:a'],
      ['Redesign', 'skipped', 'agent:a'],
      ['Go live', 'done', 'agent:a'],
    ]);
    // The task that waited on a step closed with it is ready now, and says so.
    expect(result.nowReady.map((t) => t.title)).toEqual(['Announce it']);
  });
});
