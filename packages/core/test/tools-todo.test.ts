// Seed 003's todo tool and Claude Code's TodoWrite, call by call, and the reminder they feed into the context.
import { describe, expect, it } from 'vitest';
import { createToolkit, type PlanChangeEvent, renderPlan } from '../src/index.js';
import { fixedPlan, refused } from './tools-fixtures.js';

const plan5 = [
  { content: 'Research auth requirements', activeForm: 'Researching auth requirements', status: 'pending' },
  { content: 'Design auth flow', activeForm: 'Designing auth flow', status: 'pending' },
  { content: 'Implement auth module', activeForm: 'Implementing auth module', status: 'pending' },
  { content: 'Write auth tests', activeForm: 'Writing auth tests', status: 'pending' },
  { content: 'Document auth usage', activeForm: 'Documenting auth usage', status: 'pending' },
] as const;

const withStatus = (...statuses: string[]) =>
  plan5.map((t, i) => ({ ...t, status: statuses[i] ?? 'pending' }));

describe('todo family', () => {
  it("follows the seed's three patterns with its exact responses", async () => {
    const tk = createToolkit(fixedPlan(), { families: ['todo'] });
    expect(await tk.dispatch('todo', { action: 'create', todos: plan5 })).toEqual({
      status: 'created',
      count: 5,
      pending: 5,
      in_progress: 0,
      completed: 0,
      todos: plan5,
    });
    const ids = tk.plan.children(null).map((t) => t.id);
    const events: PlanChangeEvent[] = [];
    tk.plan.onChange((e) => events.push(e));
    const updated = withStatus('completed', 'in_progress');
    expect(await tk.dispatch('todo', { action: 'update', todos: updated })).toEqual({
      status: 'updated',
      count: 5,
      pending: 3,
      in_progress: 1,
      completed: 1,
      todos: updated,
    });
    // The whole list was sent, but only two statuses changed: same tasks, two field writes.
    expect(tk.plan.children(null).map((t) => t.id)).toEqual(ids);
    expect(events.flatMap((e) => e.changes.map((c) => [c.id, c.fields]))).toEqual([
      [ids[0], ['status']],
      [ids[1], ['status']],
    ]);
    expect(await tk.dispatch('todo', { action: 'list' })).toEqual({
      status: 'listed',
      count: 5,
      todos: updated,
    });
    expect(renderPlan(tk.plan, { format: 'reminder' })).toBe(
      [
        '✓ Research auth requirements',
        '→ Designing auth flow',
        '☐ Implement auth module',
        '☐ Write auth tests',
        '☐ Document auth usage',
      ].join('\n'),
    );
  });

  it('replaces the list: dropped items go, new ones arrive in place, order follows the call', async () => {
    const tk = createToolkit(fixedPlan(), { families: ['todo'] });
    await tk.dispatch('todo', { action: 'create', todos: plan5 });
    const next = [
      plan5[1],
      { content: 'Spike OAuth', activeForm: 'Spiking OAuth', status: 'in_progress' },
      plan5[0],
    ];
    const result = (await tk.dispatch('todo', { action: 'update', todos: next })) as { todos: unknown[] };
    expect(result.todos).toEqual(next);
    expect(tk.plan.children(null).map((t) => t.num)).toEqual([2, 6, 1]);
    expect(await tk.dispatch('todo', { action: 'create', todos: [] })).toMatchObject({
      status: 'created',
      count: 0,
    });
    expect(renderPlan(tk.plan, { format: 'reminder' })).toBe('');
  });

  it('accepts the TodoWrite shape and returns the old and new lists', async () => {
    const tk = createToolkit(fixedPlan(), { families: ['todo'] });
    const first = await tk.dispatch('TodoWrite', JSON.stringify({ todos: plan5.slice(0, 2) }));
    expect(first).toMatchObject({ oldTodos: [], newTodos: plan5.slice(0, 2) });
    expect((first as { message: string }).message).toMatch(/^Todos have been modified successfully/);
    const second = await tk.dispatch('TodoWrite', {
      todos: withStatus('completed', 'in_progress').slice(0, 2),
    });
    expect(second).toMatchObject({
      oldTodos: plan5.slice(0, 2),
      newTodos: withStatus('completed', 'in_progress').slice(0, 2),
    });
  });

  it('does not turn a cancelled task into a done one when the list is echoed back', async () => {
    const tk = createToolkit(fixedPlan(), { families: ['todo'] });
    const dropped = tk.plan.add({ title: 'Old idea', status: 'cancelled' });
    const listed = (await tk.dispatch('todo', { action: 'list' })) as { todos: unknown[] };
    expect(listed.todos).toEqual([{ content: 'Old idea', activeForm: 'Old idea', status: 'completed' }]);
    await tk.dispatch('todo', { action: 'update', todos: listed.todos });
    expect(tk.plan.get(dropped.id)!.status).toBe('cancelled');
  });

  it('refuses a malformed list and changes nothing', async () => {
    const tk = createToolkit(fixedPlan(), { families: ['todo'] });
    await tk.dispatch('todo', { action: 'create', todos: plan5 });
    expect((await refused(tk, 'todo', { action: 'update' }, 'invalid_argument')).message).toContain(
      'todos is required for create and update',
    );
    const bad = await refused(
      tk,
      'todo',
      { action: 'update', todos: [{ ...plan5[0], status: 'done' }] },
      'invalid_argument',
    );
    expect(bad.message).toContain(
      'todos.0.status: Invalid option: expected one of "pending"|"in_progress"|"completed"',
    );
    const missing = await refused(
      tk,
      'TodoWrite',
      { todos: [{ content: 'x', status: 'pending' }] },
      'invalid_argument',
    );
    expect(missing.message).toContain('todos.0.activeForm: required');
    const extra = await refused(
      tk,
      'TodoWrite',
      { todos: [{ ...plan5[0], priority: 'high' }] },
      'invalid_argument',
    );
    expect(extra.message).toContain(
      'unknown field "priority"; the fields here are content, activeForm, status',
    );
    await refused(tk, 'todo', { action: 'delete' }, 'invalid_argument');
    // The list is untouched: still five pending items.
    expect((await tk.dispatch('todo', { action: 'list' })) as { count: number }).toMatchObject({ count: 5 });
  });
});

describe('todo family: a task with open steps', () => {
  it('completing a todo closes its open steps as skipped, in the same write', async () => {
    const tk = createToolkit(fixedPlan(), { families: ['todo'] });
    await tk.dispatch('todo', { action: 'create', todos: plan5.slice(0, 2) });
    const research = tk.plan.children(null)[0]!;
    // Its steps come from another family or a person on the same plan.
    tk.plan.addMany([
      { title: 'Read the RFC', parent: research.id, status: 'done' },
      { title: 'Ask security', parent: research.id },
    ]);
    expect(tk.plan.ready().map((t) => t.title)).toEqual(['Ask security', 'Design auth flow']);
    let writes = 0;
    tk.plan.onChange(() => writes++);
    const result = (await tk.dispatch('todo', {
      action: 'update',
      todos: [{ ...plan5[0], status: 'completed' }, plan5[1]],
    })) as { completed: number };
    expect(result.completed).toBe(1);
    expect(writes).toBe(1);
    expect(tk.plan.children(research.id).map((s) => [s.title, s.status])).toEqual([
      ['Read the RFC', 'done'],
      ['Ask security', 'skipped'],
    ]);
    expect(tk.plan.ready().map((t) => t.title)).toEqual(['Design auth flow']);
  });
});
