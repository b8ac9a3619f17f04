// Seed 000's task_manage tool, call by call, and the checklist it feeds into the context.
import { describe, expect, it } from 'vitest';
import { createToolkit, renderPlan } from '../src/index.js';
import { fixedPlan, refused, T0, TestClock } from './tools-fixtures.js';

const manage = () => createToolkit(fixedPlan('agent:a', 1, { clock }), { families: ['task_manage'] });
const at = (minutes: number) => Math.floor((T0 + minutes * 60_000) / 1000);
const clock = new TestClock();

describe('task_manage family', () => {
  it("builds the seed's plan and renders its checklist", async () => {
    clock.ms = T0 + 60_000;
    const tk = manage();
    const added = await tk.dispatch('task_manage', {
      action: 'add',
      text: 'Query admin relay list to find active relays',
    });
    expect(added).toEqual({
      success: true,
      action: 'add',
      task: {
        id: 1,
        text: 'Query admin relay list to find active relays',
        status: 'pending',
        created_at: at(1),
        updated_at: at(1),
      },
      tasks: [
        {
          id: 1,
          text: 'Query admin relay list to find active relays',
          status: 'pending',
          created_at: at(1),
          updated_at: at(1),
        },
      ],
    });
    await tk.dispatch('task_manage', {
      action: 'add',
      text: 'Draft long-form article about Nostr relay setup',
      status: 'active',
    });
    await tk.dispatch('task_manage', { action: 'add', text: 'Publish article as kind 30023' });
    const updated = (await tk.dispatch('task_manage', { action: 'update', id: 1, status: 'done' })) as Record<
      string,
      unknown
    >;
    expect(updated['task']).toMatchObject({ id: 1, status: 'done' });
    const list = await tk.dispatch('task_manage', { action: 'list' });
    expect(
      (list as { tasks: unknown[] }).tasks.map((t) => [
        (t as { id: number }).id,
        (t as { status: string }).status,
      ]),
    ).toEqual([
      [1, 'done'],
      [2, 'active'],
      [3, 'pending'],
    ]);
    expect(renderPlan(tk.plan, { format: 'checklist' })).toBe(
      [
        '### Current Tasks',
        '',
        'Your active task list - short-term working memory for tracking plan steps.',
        '',
        '- [x] 1. Query admin relay list to find active relays',
        '- [-] 2. Draft long-form article about Nostr relay setup',
        '- [ ] 3. Publish article as kind 30023',
      ].join('\n'),
    );
  });

  it('removes, clears by status and replaces, keeping ids unique like next_id', async () => {
    const tk = manage();
    for (const text of ['a', 'b', 'c', 'd']) await tk.dispatch('task_manage', { action: 'add', text });
    await tk.dispatch('task_manage', { action: 'update', id: 2, status: 'done' });
    await tk.dispatch('task_manage', { action: 'update', id: 3, status: 'done', text: 'c!' });
    expect(await tk.dispatch('task_manage', { action: 'remove', id: 1 })).toMatchObject({ removed: 1 });
    const cleared = (await tk.dispatch('task_manage', { action: 'clear', status: 'done' })) as Record<
      string,
      unknown
    >;
    expect(cleared['removed']).toBe(2);
    expect((cleared['tasks'] as Array<{ id: number }>).map((t) => t.id)).toEqual([4]);
    const replaced = (await tk.dispatch('task_manage', { action: 'replace', tasks: ['x', 'y'] })) as Record<
      string,
      unknown
    >;
    expect(replaced['tasks']).toMatchObject([
      { id: 5, text: 'x', status: 'pending' },
      { id: 6, text: 'y', status: 'pending' },
    ]);
    expect(await tk.dispatch('task_manage', { action: 'clear' })).toMatchObject({ removed: 2, tasks: [] });
    expect(renderPlan(tk.plan, { format: 'checklist' })).toBe('');
  });

  it('shows other families’ statuses in its three, and never overwrites one it only echoes', async () => {
    const tk = manage();
    const plan = tk.plan;
    const task = plan.add({ title: 'Wait for reply', status: 'waiting_user' });
    plan.add({ title: 'Dropped', status: 'cancelled' });
    const list = (await tk.dispatch('task_manage', { action: 'list' })) as { tasks: unknown[] };
    expect(list.tasks).toMatchObject([
      { id: 1, status: 'active', plan_status: 'waiting_user' },
      { id: 2, status: 'done', plan_status: 'cancelled' },
    ]);
    await tk.dispatch('task_manage', { action: 'update', id: 2, status: 'done', text: 'Dropped idea' });
    expect(plan.byNum(2)).toMatchObject({ status: 'cancelled', title: 'Dropped idea' });
    await tk.dispatch('task_manage', { action: 'update', id: 1, status: 'active' });
    expect(plan.get(task.id)!.status).toBe('waiting_user');
    await tk.dispatch('task_manage', { action: 'update', id: 1, status: 'done' });
    expect(plan.get(task.id)!.status).toBe('done');
  });

  it('refuses what an action does not take, with the shape it expects, and changes nothing', async () => {
    const tk = manage();
    await tk.dispatch('task_manage', { action: 'add', text: 'a' });
    expect((await refused(tk, 'task_manage', { action: 'add' }, 'invalid_argument')).message).toBe(
      'Action "add" needs text; it takes text, status?.',
    );
    expect(
      (await refused(tk, 'task_manage', { action: 'list', id: 1 }, 'invalid_argument')).message,
    ).toContain('does not take id');
    expect(
      (await refused(tk, 'task_manage', { action: 'update', id: 1 }, 'invalid_argument')).message,
    ).toContain('needs text or status');
    const unknown = await refused(tk, 'task_manage', { action: 'remove', id: 5 }, 'not_found');
    expect(unknown.message).toBe('There is no task 5. Known tasks: 1 (a).');
    expect(unknown['known']).toEqual([1]);
    const status = await refused(
      tk,
      'task_manage',
      { action: 'add', text: 'b', status: 'finished' },
      'invalid_argument',
    );
    expect(status.message).toContain('expected one of "pending"|"active"|"done"');
    const shape = await refused(tk, 'task_manage', { act: 'list' }, 'invalid_argument');
    expect(shape.message).toContain(
      'Expected: task_manage({ action: "list"|"add"|"update"|"remove"|"clear"|"replace"',
    );
    await refused(tk, 'task_manage', '{"action": "add", "text": ', 'invalid_argument');
    expect(
      (await refused(tk, 'task_manage', { action: 'update', id: 1, text: ' ' }, 'invalid_argument')).message,
    ).toBe('A task text must not be empty.');
    await refused(tk, 'task_manage', { action: 'replace', tasks: ['ok', ''] }, 'invalid_argument');
  });
});

describe('task_manage family: a task with open steps', () => {
  it('marking the task done closes its open steps (shown as done, plan_status skipped) in the same write', async () => {
    const tk = manage();
    await tk.dispatch('task_manage', { action: 'add', text: 'Product launch' });
    // Its steps come from another family or a person on the same plan.
    const launch = tk.plan.byNum(1)!;
    tk.plan.addMany([
      { title: 'Write the announcement', parent: launch.id, status: 'done' },
      { title: 'Review it', parent: launch.id, status: 'in_progress' },
      { title: 'Publish', parent: launch.id },
    ]);
    expect(tk.plan.isReady(launch.id)).toBe(false);
    let writes = 0;
    tk.plan.onChange(() => writes++);
    const result = (await tk.dispatch('task_manage', { action: 'update', id: 1, status: 'done' })) as {
      tasks: Array<Record<string, unknown>>;
    };
    expect(writes).toBe(1);
    expect(result.tasks.map((t) => [t['id'], t['status'], t['plan_status'], t['parent']])).toEqual([
      [1, 'done', undefined, undefined],
      [2, 'done', undefined, 1],
      [3, 'done', 'skipped', 1],
      [4, 'done', 'skipped', 1],
    ]);
    expect(tk.plan.list({ state: 'open' })).toEqual([]);
  });
});
