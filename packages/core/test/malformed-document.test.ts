// A writer can put any value in a shared document. Values that are not tasks, fields of the wrong type and
// impossible times are skipped or read as defaults, reported by plan.malformed(), and never make a read, a write
// or a tool call fail.
import { describe, expect, it } from 'vitest';
import {
  createPlan,
  createToolkit,
  FAMILY_NAMES,
  isToolError,
  RENDER_FORMATS,
  renderPlan,
} from '../src/index.js';
import { seeded } from '../src/testing/seeded.js';
import { damage } from './tools-fixtures.js';

function damagedPlan() {
  const plan = createPlan({ actor: 'agent:a', random: seeded(3) });
  const [a, b] = plan.addMany([
    { title: 'Read the code', key: 'a' },
    { title: 'Write it', blockedBy: ['a'], steps: [{ title: 'sketch' }] },
  ]);
  const garbage = damage(plan.doc, a!.id);
  return { plan, a: a!, b: b!, garbage };
}

describe('a document with values that are not tasks', () => {
  it('reads, lists and reports them instead of failing', () => {
    const { plan, a, garbage } = damagedPlan();
    for (const id of garbage) {
      expect(plan.has(id)).toBe(false);
      expect(plan.get(id)).toBeUndefined();
    }
    expect(plan.list().map((t) => t.id)).not.toContain('x1');
    expect(plan.list()).toHaveLength(3);
    const task = plan.require(a.id);
    expect(task.updatedAt).toBe(0);
    expect(task.createdAt).toBe(0);
    expect(task.num).toBe(0);
    expect(task.blockedBy).toEqual([]);
    expect(task.context).toEqual({});
    expect(task.parent).toBeNull();
    expect(new Date(task.updatedAt).toISOString()).toBe('1970-01-01T00:00:00.000Z');
    plan.ready();
    plan.blocked();
    plan.toJSON();
    for (const format of RENDER_FORMATS) expect(typeof renderPlan(plan, { format })).toBe('string');

    const report = plan.malformed();
    expect(report.map((m) => m.id)).toEqual([a.id, 'x1', 'x2', 'x3', 'x4'].sort());
    expect(report.find((m) => m.id === 'x1')!.reason).toMatch(/not a task.*the string "a plain string"/);
    const victim = report.find((m) => m.id === a.id)!.reason;
    for (const field of [
      'updatedAt',
      'createdAt',
      'num',
      'blockedBy',
      'context',
      'parent',
      'assignee',
      'wakeAt',
    ])
      expect(victim).toContain(`${field} holds`);
  });

  it('keeps adding, updating and removing, with fresh aliases above every valid one', () => {
    const { plan, a, b } = damagedPlan();
    const c = plan.add({ title: 'After the damage', blockedBy: [b.id] });
    expect(c.num).toBe(4);
    plan.update(a.id, { status: 'done', addBlockedBy: [] });
    plan.update(c.id, { removeBlockedBy: [b.id] });
    expect(plan.remove(b.id)).toHaveLength(2);
    expect(plan.replace([{ title: 'fresh start' }])).toHaveLength(1);
    // What is not a task stays where it is, reported, and is never taken for a task.
    expect(plan.malformed().map((m) => m.id)).toEqual(['x1', 'x2', 'x3', 'x4']);
  });

  it('refuses to take a non-task value as a parent or blocker, with the usual not-found error', () => {
    const { plan } = damagedPlan();
    expect(() => plan.add({ title: 'child', parent: 'x1' })).toThrow(/No task with id "x1"/);
    expect(() => plan.add({ title: 'waits', blockedBy: ['x2'] })).toThrow(/No task with id "x2"/);
  });

  it.each(FAMILY_NAMES)('answers every %s tool without an internal error', async (family) => {
    const { plan, a } = damagedPlan();
    const tk = createToolkit(plan, { actor: 'agent:b', families: [family] });
    const calls: Array<[string, unknown]> = [
      ['add_tasks', { tasks: [{ title: 'one more' }] }],
      ['get_task', { id: a.id }],
      ['get_task', { id: 'x1' }],
      ['list_tasks', { view: 'all' }],
      ['update_tasks', { updates: [{ id: a.id, status: 'in_progress' }] }],
      ['claim_next', {}],
      ['search_tasks', { query: 'code' }],
      ['task_manage', { action: 'add', text: 'one more' }],
      ['task_manage', { action: 'list' }],
      ['todo', { action: 'list' }],
      [
        'todo',
        { action: 'create', todos: [{ content: 'one more', status: 'pending', activeForm: 'Adding' }] },
      ],
      ['TodoWrite', { todos: [{ content: 'one more', status: 'pending', activeForm: 'Adding' }] }],
      ['create_task', { title: 'one more' }],
      ['complete_task', { task_id: 2 }],
      ['list_ready_tasks', {}],
      ['set_ongoing_task', { task: 'one more', steps: [{ title: 'a step' }] }],
      ['get_ongoing_task', {}],
      ['clear_ongoing_task', {}],
      ['read_tasks', { view: 'all' }],
      ['read_tasks', { id: a.id }],
      ['write_tasks', { tasks: [{ title: 'one more' }] }],
      ['write_tasks', { tasks: [{ id: a.id, status: 'in_progress' }] }],
      ['claim_task', {}],
    ];
    let ran = 0;
    for (const [name, args] of calls) {
      if (!tk.names.includes(name)) continue;
      ran++;
      const result = await tk.dispatch(name, args);
      if (isToolError(result))
        expect(result.error.code, `${name} ${JSON.stringify(result)}`).not.toBe('internal');
    }
    expect(ran).toBeGreaterThan(0);
  });
});
