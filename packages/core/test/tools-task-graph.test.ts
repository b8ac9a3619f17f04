// Seed 004's task graph, call by call: create_task, complete_task, list_ready_tasks over the shared plan.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { createPlan, createToolkit } from '../src/index.js';
import { fixedPlan, refused } from './tools-fixtures.js';

const graph = (plan = fixedPlan()) => createToolkit(plan, { families: ['task_graph'] });

describe('task_graph family', () => {
  it("follows the seed's refactoring session", async () => {
    const tk = graph();
    expect(await tk.dispatch('create_task', { title: 'Read current auth code' })).toEqual({
      id: 1,
      title: 'Read current auth code',
      status: 'pending',
      blockedBy: [],
    });
    expect(
      await tk.dispatch('create_task', { title: 'Write new AuthManager', blocked_by: [1] }),
    ).toMatchObject({
      id: 2,
      blockedBy: [1],
    });
    expect(await tk.dispatch('create_task', { title: 'Update tests', blocked_by: [2] })).toMatchObject({
      id: 3,
    });
    expect(await tk.dispatch('create_task', { title: 'Update docs', blocked_by: [2] })).toMatchObject({
      id: 4,
    });
    expect(await tk.dispatch('list_ready_tasks', {})).toEqual([
      { id: 1, title: 'Read current auth code', status: 'pending', blockedBy: [] },
    ]);
    expect(await tk.dispatch('complete_task', { task_id: 1 })).toBe('Task 1 completed.');
    expect(await tk.dispatch('list_ready_tasks', {})).toEqual([
      { id: 2, title: 'Write new AuthManager', status: 'pending', blockedBy: [1] },
    ]);
  });

  it('unblocks the diamond: 1 -> 2, 1 -> 3, 2 & 3 -> 4', async () => {
    const tk = graph();
    await tk.dispatch('create_task', { title: 'one' });
    await tk.dispatch('create_task', { title: 'two', blocked_by: [1] });
    await tk.dispatch('create_task', { title: 'three', blocked_by: [1] });
    expect(await tk.dispatch('create_task', { title: 'four', blocked_by: [2, 3] })).toEqual({
      id: 4,
      title: 'four',
      status: 'pending',
      blockedBy: [2, 3],
    });
    const ready = async () =>
      ((await tk.dispatch('list_ready_tasks', '')) as Array<{ id: number }>).map((t) => t.id);
    expect(await ready()).toEqual([1]);
    await tk.dispatch('complete_task', { task_id: 1 });
    expect(await ready()).toEqual([2, 3]);
    await tk.dispatch('complete_task', { task_id: 2 });
    expect(await ready()).toEqual([3]);
    expect(await tk.dispatch('complete_task', '{"task_id": 3}')).toBe('Task 3 completed.');
    expect(await ready()).toEqual([4]);
    // Completing again is harmless, as in the seed.
    expect(await tk.dispatch('complete_task', { task_id: 3 })).toBe('Task 3 completed.');
  });

  it('survives losing the conversation: the graph lives in the document', async () => {
    const tk = graph();
    await tk.dispatch('create_task', { title: 'one' });
    await tk.dispatch('create_task', { title: 'two', blocked_by: [1] });
    const reloaded = new Y.Doc();
    Y.applyUpdate(reloaded, Y.encodeStateAsUpdate(tk.plan.doc));
    const fresh = createToolkit(createPlan({ doc: reloaded, actor: 'agent:a' }), {
      families: ['task_graph'],
    });
    expect(await fresh.dispatch('list_ready_tasks')).toEqual([
      { id: 1, title: 'one', status: 'pending', blockedBy: [] },
    ]);
  });

  it('refuses unknown ids and bad arguments, naming what is valid', async () => {
    const tk = graph();
    await tk.dispatch('create_task', { title: 'one' });
    const unknown = await refused(tk, 'create_task', { title: 'two', blocked_by: [1, 7] }, 'not_found');
    expect(unknown.message).toBe('There is no task 7. Known tasks: 1 (one).');
    expect((await refused(tk, 'complete_task', { task_id: 9 }, 'not_found')).message).toContain('1 (one)');
    expect((await refused(tk, 'complete_task', { task_id: '1' }, 'invalid_argument')).message).toContain(
      'task_id: expected an integer, received string',
    );
    expect((await refused(tk, 'complete_task', {}, 'invalid_argument')).message).toContain(
      'task_id: required',
    );
    expect((await refused(tk, 'create_task', { title: '  ' }, 'invalid_argument')).message).toMatch(/empty/);
    expect((await refused(tk, 'list_ready_tasks', { all: true }, 'invalid_argument')).message).toContain(
      'unknown field "all"',
    );
  });

  it('says that a tool without parameters takes no arguments', async () => {
    const message = (await refused(graph(), 'list_ready_tasks', { x: 1 }, 'invalid_argument')).message;
    expect(message).toContain('unknown field "x"; this tool takes no arguments');
    expect(message).not.toMatch(/fields here are\s*[.;]/);
  });
});

describe('task_graph family: a task with open steps', () => {
  it('lists the steps as ready, not their task; completing the task closes the steps left open', async () => {
    const tk = graph();
    // Steps come from another family or a person on the same plan; task_graph sees them by number.
    const [launch] = tk.plan.addMany([
      { title: 'Product launch', steps: [{ title: 'Write the announcement' }, { title: 'Review it' }] },
    ]);
    expect(await tk.dispatch('create_task', { title: 'Celebrate', blocked_by: [1] })).toMatchObject({
      id: 4,
    });
    expect((await tk.dispatch('list_ready_tasks', {})) as Array<{ title: string }>).toEqual([
      { id: 2, title: 'Write the announcement', status: 'pending', blockedBy: [] },
      { id: 3, title: 'Review it', status: 'pending', blockedBy: [] },
    ]);
    expect(await tk.dispatch('complete_task', { task_id: 2 })).toBe('Task 2 completed.');
    expect(await tk.dispatch('complete_task', { task_id: 1 })).toBe('Task 1 completed.');
    expect(tk.plan.children(launch!.id).map((s) => s.status)).toEqual(['done', 'skipped']);
    expect(await tk.dispatch('list_ready_tasks', {})).toEqual([
      { id: 4, title: 'Celebrate', status: 'pending', blockedBy: [1] },
    ]);
  });
});
