// Claims decided locally (no arbiter): one document, several actors. Server arbitration is tested with the server.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { CairnError, createPlan } from '../src/index.js';
import { arbiterHeldBy } from './tools-fixtures.js';

describe('local claims', () => {
  it('gives a task to the first claimer and tells the second who holds it', async () => {
    const doc = new Y.Doc();
    const a = createPlan({ doc, actor: 'agent:a' });
    const b = createPlan({ doc, actor: 'agent:b' });
    const t = a.add({ title: 'T' });
    const [first, second] = await Promise.all([a.claim(t.id), b.claim(t.id)]);
    expect(first).toMatchObject({ outcome: 'won', holder: 'agent:a', arbitrated: false });
    expect(second).toMatchObject({ outcome: 'lost', holder: 'agent:a' });
    expect(second.message).toContain('agent:a');
    expect(a.get(t.id)).toMatchObject({ assignee: 'agent:a', status: 'in_progress', updatedBy: 'agent:a' });
  });

  it('claimNext hands out each ready task once, in plan order', async () => {
    const doc = new Y.Doc();
    const agents = ['agent:a', 'agent:b', 'agent:c'].map((actor) => createPlan({ doc, actor }));
    const [x, , z] = agents[0]!.addMany([
      { title: 'x', key: 'x' },
      { title: 'y' },
      { title: 'z', blockedBy: ['x'] },
    ]);
    const results = await Promise.all(agents.map((p) => p.claimNext()));
    expect(results.map((r) => r.outcome)).toEqual(['won', 'won', 'none']);
    expect(new Set(results.map((r) => r.taskId)).size).toBe(3);
    expect(results[0]!.taskId).toBe(x!.id);
    expect(agents[0]!.get(z!.id)!.assignee).toBeNull();
  });

  it('release and hand-off are attributed and only the holder may do them', async () => {
    const doc = new Y.Doc();
    const a = createPlan({ doc, actor: 'agent:a' });
    const b = createPlan({ doc, actor: 'agent:b' });
    const t = a.add({ title: 'T' });
    await a.claim(t.id);
    await expect(b.release(t.id)).rejects.toMatchObject({ code: 'conflict' });
    expect((await a.handOff(t.id, 'agent:b')).holder).toBe('agent:b');
    expect(a.get(t.id)).toMatchObject({ assignee: 'agent:b', updatedBy: 'agent:a' });
    await b.release(t.id);
    expect(a.get(t.id)).toMatchObject({ assignee: null, status: 'pending', updatedBy: 'agent:b' });
    await expect(a.claim('nope')).rejects.toBeInstanceOf(CairnError);
    await expect(a.handOff(t.id, 'not an actor')).rejects.toMatchObject({ code: 'invalid_argument' });
  });

  it('routes through an arbiter when one is set', async () => {
    const plan = createPlan({ actor: 'agent:a' });
    const t = plan.add({ title: 'T' });
    const asked: string[] = [];
    plan.useArbiter(arbiterHeldBy('agent:z', asked));
    expect(await plan.claim(t.id)).toMatchObject({ outcome: 'lost', holder: 'agent:z', arbitrated: true });
    expect(asked).toEqual([`agent:a ${t.id}`]);
    expect(plan.get(t.id)!.assignee).toBeNull();
  });
});
