// The dispatcher itself: families, attribution to the toolkit's actor, raw arguments, refusals that change
// nothing, and integer aliases that stay unambiguous when two agents create tasks at the same time.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { CairnError, createPlan, createToolkit, isToolError, type PlanChangeEvent } from '../src/index.js';
import { cairnFamily, createToolkitOf, taskManageFamily, todoFamily } from '../src/tools/index.js';
import { fixedPlan, refused, sync } from './tools-fixtures.js';

describe('createToolkit', () => {
  it('offers the cairn family by default and any mix of families, with unique names', () => {
    const plan = fixedPlan();
    expect(createToolkit(plan).names).toEqual([
      'add_tasks',
      'update_tasks',
      'remove_tasks',
      'get_task',
      'list_tasks',
      'search_tasks',
      'claim',
      'claim_next',
      'release',
      'hand_off',
    ]);
    const all = createToolkit(plan, {
      families: ['cairn', 'task_manage', 'todo', 'task_graph', 'ongoing_task'],
    });
    expect(new Set(all.names).size).toBe(all.names.length);
    expect(all.names).toHaveLength(19);
    expect(() => createToolkit(plan, { families: ['jira' as never] })).toThrow(
      /families: cairn, task_manage/,
    );
    expect(() => createToolkit(plan, { actor: 'bob' })).toThrow(CairnError);
  });

  it('is the same toolkit when given the families themselves (@cairn/core/tools)', async () => {
    const plan = fixedPlan('user:ann');
    const byName = createToolkit(plan, { families: ['todo', 'cairn'] });
    const given = createToolkitOf(plan, [todoFamily, cairnFamily], { actor: 'agent:b' });
    expect(given.names).toEqual(byName.names);
    expect(given.families).toEqual(['todo', 'cairn']);
    expect(given.definitions('anthropic')).toEqual(byName.definitions('anthropic'));
    const added = await createToolkitOf(plan, [taskManageFamily]).dispatch('task_manage', {
      action: 'add',
      text: 'T',
    });
    expect(isToolError(added)).toBe(false);
    expect(given.actor).toBe('agent:b');
    expect(() => createToolkitOf(plan, ['cairn' as never])).toThrow(/takes tool families .*not "cairn"/);
  });

  it('attributes every write to its actor, not the plan’s', async () => {
    const plan = fixedPlan('user:ann');
    const events: PlanChangeEvent[] = [];
    plan.onChange((e) => events.push(e));
    const tk = createToolkit(plan, { actor: 'agent:b', families: ['task_manage'] });
    await tk.dispatch('task_manage', { action: 'add', text: 'T' });
    await tk.dispatch('task_manage', { action: 'update', id: 1, status: 'done' });
    expect(plan.byNum(1)).toMatchObject({ createdBy: 'agent:b', updatedBy: 'agent:b' });
    expect(events.flatMap((e) => e.changes.map((c) => c.actor))).toEqual(['agent:b', 'agent:b']);
    // Its writes are its own undo history.
    expect(tk.plan.undo()).toBe(true);
    expect(plan.byNum(1)!.status).toBe('pending');
    tk.destroy();
  });

  it('never throws: unknown tools, non-objects, broken JSON and bad values come back as errors', async () => {
    const tk = createToolkit(fixedPlan(), { families: ['cairn', 'task_graph'] });
    const unknown = await refused(tk, 'create_tasks', {}, 'unknown_tool');
    expect(unknown.message).toContain('There is no tool "create_tasks". Tools: add_tasks,');
    expect(unknown['valid']).toContain('create_task');
    await refused(tk, 42 as never, {}, 'unknown_tool');
    expect((await refused(tk, 'create_task', [1, 2], 'invalid_argument')).message).toContain('not an array');
    expect((await refused(tk, 'create_task', 'title', 'invalid_argument')).message).toContain(
      'not valid JSON',
    );
    expect((await refused(tk, 'create_task', 7, 'invalid_argument')).message).toContain('not number');
    const shape = await refused(tk, 'create_task', { name: 'x' }, 'invalid_argument');
    expect(shape.message).toContain('Expected: create_task({ title: string, blocked_by?: integer[] })');
    expect(isToolError(await tk.dispatch('create_task', { title: 'ok' }))).toBe(false);
    expect(isToolError(await tk.dispatch('create_task', {}))).toBe(true);
  });

  it('turns an unexpected failure into an internal error instead of throwing', async () => {
    const plan = fixedPlan();
    const tk = createToolkit(plan, { families: ['task_graph'] });
    plan.doc.destroy();
    const broken = Object.create(plan) as typeof plan;
    Object.defineProperty(broken, 'add', {
      value: () => {
        throw new TypeError('disk on fire');
      },
    });
    const tk2 = createToolkit(broken, { families: ['task_graph'] });
    const result = (await tk2.dispatch('create_task', { title: 'x' })) as {
      error: { code: string; message: string };
    };
    expect(result.error).toEqual({ code: 'internal', message: 'Unexpected error: disk on fire' });
    expect(tk.names).toHaveLength(3);
  });

  it('keeps integer aliases unambiguous when two agents create tasks concurrently', async () => {
    const one = createToolkit(fixedPlan('agent:one', 1), { families: ['task_manage'] });
    const twoPlan = createPlan({
      actor: 'agent:two',
      doc: new Y.Doc(),
      now: () => Date.parse('2026-12-02T09:05:00Z'),
    });
    const two = createToolkit(twoPlan, { families: ['task_manage'] });
    // Both agents are offline from each other and each creates "task 1".
    await one.dispatch('task_manage', { action: 'add', text: 'from one' });
    await two.dispatch('task_manage', { action: 'add', text: 'from two' });
    sync(one.plan.doc, two.plan.doc);
    sync(one.plan.doc, two.plan.doc);
    // The earlier task keeps 1; its creator renumbered the later one, and every replica agrees.
    for (const tk of [one, two]) {
      const list = (await tk.dispatch('task_manage', { action: 'list' })) as {
        tasks: Array<{ id: number; text: string }>;
      };
      expect(list.tasks.map((t) => [t.id, t.text]).sort((a, b) => Number(a[0]) - Number(b[0]))).toEqual([
        [1, 'from one'],
        [2, 'from two'],
      ]);
    }
    await two.dispatch('task_manage', { action: 'update', id: 2, status: 'done' });
    sync(one.plan.doc, two.plan.doc);
    expect(one.plan.list().find((t) => t.title === 'from two')!.status).toBe('done');
  });
});
