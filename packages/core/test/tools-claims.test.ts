// The claim tools of the native family, decided locally (one document, several toolkits). Arbitration by the
// server is proven in test/claims-race.test.ts.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { createToolkit } from '../src/index.js';
import { arbiterHeldBy, fixedPlan, refused } from './tools-fixtures.js';

describe('claim tools', () => {
  it('claim tells the winner it holds the task and the loser who does', async () => {
    const doc = new Y.Doc();
    const a = createToolkit(fixedPlan('agent:a', 1, { doc }));
    const b = createToolkit(fixedPlan('agent:b', 2, { doc }));
    const [task] = a.plan.addMany([{ title: 'Write the migration' }]);
    expect(await a.dispatch('claim', { id: task!.id })).toEqual({
      outcome: 'won',
      holder: 'agent:a',
      arbitrated: false,
      message: `agent:a now holds task ${task!.id}.`,
      task: { id: task!.id, title: 'Write the migration', status: 'in_progress', assignee: 'agent:a' },
    });
    expect(await b.dispatch('claim', { id: task!.id })).toMatchObject({ outcome: 'lost', holder: 'agent:a' });
    expect(b.plan.get(task!.id)).toMatchObject({ assignee: 'agent:a', updatedBy: 'agent:a' });
  });

  it('claim_next takes ready tasks in order, within a parent when asked, and says when none is left', async () => {
    const tk = createToolkit(fixedPlan('agent:a'));
    const [first, second, third] = tk.plan.addMany([
      { title: 'first', key: 'f', steps: [{ title: 'step one' }] },
      { title: 'second', blockedBy: ['f'] },
      { title: 'third' },
    ]);
    const step = tk.plan.children(first!.id)[0]!;
    // The parent waits on its open step: claim_next hands out the step, never the parent before it.
    expect(await tk.dispatch('claim_next', { parent: null })).toMatchObject({ task: { id: third!.id } });
    expect(await tk.dispatch('claim_next', { parent: first!.id })).toMatchObject({
      outcome: 'won',
      task: { id: step.id },
    });
    expect(await tk.dispatch('claim_next', {})).toMatchObject({ outcome: 'none' });
    await tk.dispatch('update_tasks', { updates: [{ id: step.id, status: 'done' }] });
    expect(await tk.dispatch('claim_next', {})).toMatchObject({ task: { id: first!.id } });
    expect(await tk.dispatch('claim_next', {})).toMatchObject({ outcome: 'none' });
    expect(tk.plan.get(second!.id)!.assignee).toBeNull();
    // A parent that is not in this plan (another plan's id) is unknown, not a parent with nothing ready.
    expect(await tk.dispatch('claim_next', { parent: 'elsewhere1' })).toMatchObject({
      error: { code: 'not_found', message: expect.stringContaining('known ids') },
    });
  });

  it('release and hand_off are attributed; only the holder may do them, and a refusal changes nothing', async () => {
    const doc = new Y.Doc();
    const a = createToolkit(fixedPlan('agent:a', 1, { doc }));
    const b = createToolkit(fixedPlan('agent:b', 2, { doc }));
    const [task] = a.plan.addMany([{ title: 'T' }]);
    const id = task!.id;
    await a.dispatch('claim', { id });
    expect((await refused(b, 'release', { id }, 'conflict')).message).toContain('agent:a');
    await refused(b, 'hand_off', { id, to: 'user:ann' }, 'conflict');
    await refused(a, 'hand_off', { id, to: 'ann' }, 'invalid_argument');
    await refused(a, 'claim', { id: 'nope' }, 'not_found');
    expect(await a.dispatch('hand_off', { id, to: 'agent:b' })).toMatchObject({
      outcome: 'won',
      holder: 'agent:b',
    });
    expect(a.plan.get(id)).toMatchObject({ assignee: 'agent:b', updatedBy: 'agent:a' });
    expect(await b.dispatch('release', { id })).toMatchObject({ outcome: 'won', holder: null });
    expect(a.plan.get(id)).toMatchObject({ assignee: null, status: 'pending', updatedBy: 'agent:b' });
    a.plan.update(id, { status: 'done' });
    await refused(a, 'claim', { id }, 'invalid_transition');
  });

  it("a toolkit for another actor asks the plan's arbiter, in that actor's name", async () => {
    const plan = fixedPlan('user:ann');
    const [task] = plan.addMany([{ title: 'T' }]);
    const asked: string[] = [];
    plan.useArbiter(arbiterHeldBy('agent:z', asked));
    const tk = createToolkit(plan, { actor: 'agent:b' });
    expect(await tk.dispatch('claim', { id: task!.id })).toMatchObject({
      outcome: 'lost',
      holder: 'agent:z',
    });
    expect(asked).toEqual([`agent:b ${task!.id}`]);
    expect(plan.get(task!.id)!.assignee).toBeNull();
  });
});
