// One call adds at most PLAN_LIMITS.tasksPerCall tasks and a plan holds at most PLAN_LIMITS.tasksPerPlan, so no
// call can stall a shared server; a refusal names the limit and changes nothing.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { createPlan, createToolkit, isToolError } from '../src/index.js';
import { PLAN_LIMITS, TEXT_LIMITS } from '../src/protocol-entry.js';

const titles = (n: number, prefix = 't') => Array.from({ length: n }, (_, i) => ({ title: `${prefix}${i}` }));

describe('plan limits', () => {
  it('refuses one call that adds more than the per-call limit, steps included, changing nothing', async () => {
    const plan = createPlan();
    const tk = createToolkit(plan);
    // The largest call the add_tasks schema allows: 200 tasks of 200 steps.
    const huge = {
      tasks: Array.from({ length: 200 }, (_, i) => ({
        title: `Task ${i}`,
        steps: Array.from({ length: 200 }, (_, j) => `step ${j}`),
      })),
    };
    const before = Y.encodeStateAsUpdate(plan.doc);
    const result = await tk.dispatch('add_tasks', huge);
    expect(isToolError(result) && result.error.code).toBe('limit');
    expect(isToolError(result) && result.error.message).toContain(
      `at most ${PLAN_LIMITS.tasksPerCall} tasks`,
    );
    expect(Buffer.compare(before, Y.encodeStateAsUpdate(plan.doc))).toBe(0);

    expect(() => plan.addMany([{ title: 'p', steps: titles(PLAN_LIMITS.tasksPerCall) }])).toThrow(
      /at most 500/,
    );
    expect(plan.addMany(titles(PLAN_LIMITS.tasksPerCall))).toHaveLength(PLAN_LIMITS.tasksPerCall);
    const [first] = plan.list();
    expect(() =>
      plan.updateMany([{ id: first!.id, addSteps: titles(PLAN_LIMITS.tasksPerCall + 1) }]),
    ).toThrow(/at most 500/);
  });

  it('refuses to grow a plan past the per-plan limit, and says how many more fit', () => {
    const plan = createPlan();
    const per = PLAN_LIMITS.tasksPerCall;
    for (let i = 0; i < PLAN_LIMITS.tasksPerPlan / per; i++) plan.addMany(titles(per, `b${i}-`));
    expect(plan.list()).toHaveLength(PLAN_LIMITS.tasksPerPlan);
    let error: unknown;
    try {
      plan.add({ title: 'one too many' });
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: 'limit', message: expect.stringContaining('at most 10000 tasks') });
    expect(plan.list()).toHaveLength(PLAN_LIMITS.tasksPerPlan);
    // Replacing the whole plan counts what it removes: it fits again.
    expect(plan.replace(titles(3))).toHaveLength(3);
  });

  it('bounds a task’s context, in one write and after a merge, naming the limit and changing nothing', async () => {
    const plan = createPlan();
    const tk = createToolkit(plan);
    const half = 'c'.repeat(TEXT_LIMITS.context / 2);
    const refused = await tk.dispatch('add_tasks', {
      tasks: [{ title: 't', context: { a: half, b: half } }],
    });
    expect(isToolError(refused) && refused.error.message).toContain(
      `at most ${TEXT_LIMITS.context} characters as JSON`,
    );
    const task = plan.add({ title: 't', context: { a: half } });
    const before = Y.encodeStateAsUpdate(plan.doc);
    expect(() => plan.update(task.id, { context: { b: half } })).toThrow(
      new RegExp(`context would be \\d+ characters as JSON; a context is at most ${TEXT_LIMITS.context}`),
    );
    expect(Buffer.compare(before, Y.encodeStateAsUpdate(plan.doc))).toBe(0);
    // A null deletes a key, so the same merge fits once the old value goes.
    expect(plan.update(task.id, { context: { a: null, b: half } }).context).toEqual({ b: half });
  });
});
