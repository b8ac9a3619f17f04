// A tool call is parsed once, by the tool's schema (built from the plan's field schemas): the plan API does not
// parse what the tool already did, and still parses what an SDK caller hands it directly.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPlan, createToolkit } from '../src/index.js';
import { MoveSchema, TaskPatchSchema } from '../src/protocol-entry.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('one validation pass', () => {
  it('update_tasks does not parse its patches and moves again in the plan; the plan API does', async () => {
    const plan = createPlan();
    const tk = createToolkit(plan);
    const [a, b] = plan.addMany([{ title: 'A' }, { title: 'B' }]);
    const patches = vi.spyOn(TaskPatchSchema, 'safeParse');
    const moves = vi.spyOn(MoveSchema, 'safeParse');
    const result = await tk.dispatch('update_tasks', {
      updates: [
        { id: a!.id, status: 'done', context: { k: 1 } },
        { id: b!.id, nextStep: 'go', parent: a!.id },
      ],
    });
    expect(result).not.toHaveProperty('error');
    expect(plan.get(b!.id)).toMatchObject({ nextStep: 'go', parent: a!.id });
    expect(patches).not.toHaveBeenCalled();
    expect(moves).not.toHaveBeenCalled();

    plan.update(a!.id, { note: 'by hand' });
    plan.move(b!.id, { parent: null });
    expect(patches).toHaveBeenCalledTimes(1);
    expect(moves).toHaveBeenCalledTimes(1);
    expect(() => plan.update(a!.id, { status: 'nope' as never })).toThrow(/Invalid update of task/);
  });
});
