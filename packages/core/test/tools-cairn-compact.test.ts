// The compact variant of the native family: three tools doing the work of ten, with the native tools' results and
// errors, each call whole or not at all, for about half the definition tokens.
import { describe, expect, it } from 'vitest';
import { createPlan, createToolkit } from '../src/index.js';
import { CAIRN_COMPACT_TOOLS, DEFINITION_FORMATS } from '../src/protocol-entry.js';
import { cl100kTokenizer } from '../src/tokenizers/cl100k.js';

// biome-ignore lint/suspicious/noExplicitAny: tool results, read field by field
type Answer = any;

function compactKit() {
  const plan = createPlan({ actor: 'agent:a' });
  const toolkit = createToolkit(plan, { families: [], extraTools: CAIRN_COMPACT_TOOLS });
  const call = async (name: string, args: unknown): Promise<Answer> => toolkit.dispatch(name, args);
  return { plan, toolkit, call };
}

describe('compact native tools', () => {
  it('cost at most 55% of the native family in every definition shape', () => {
    const { toolkit } = compactKit();
    const native = createToolkit(createPlan(), { families: ['cairn'] });
    expect(toolkit.names).toEqual(['read_tasks', 'write_tasks', 'claim_task']);
    for (const format of DEFINITION_FORMATS) {
      const compact = cl100kTokenizer.count(JSON.stringify(toolkit.definitions(format)));
      const full = cl100kTokenizer.count(JSON.stringify(native.definitions(format)));
      expect(compact / full, format).toBeLessThanOrEqual(0.55);
    }
  });

  it('adds a plan with steps and keys, changes and removes tasks, and reads them three ways', async () => {
    const { plan, call } = compactKit();
    const added = await call('write_tasks', {
      tasks: [
        { title: 'Launch', key: 'launch', steps: ['Write', { title: 'Review' }] },
        { title: 'Publish', blockedBy: ['launch'] },
      ],
    });
    const [launch, publish] = added.added;
    expect(added.keys).toEqual({ launch: launch.id });
    expect(publish.blockedBy).toEqual([launch.id]);
    expect(plan.children(launch.id).map((t) => t.title)).toEqual(['Write', 'Review']);

    // A task with open steps is not ready: the list names its steps.
    const ready = await call('read_tasks', {});
    expect(ready.tasks.map((t: Answer) => t.title)).toEqual(['Write', 'Review']);
    expect((await call('read_tasks', { id: launch.id })).task.steps).toHaveLength(2);
    expect((await call('read_tasks', { query: 'publ' })).tasks.map((t: Answer) => t.id)).toEqual([
      publish.id,
    ]);

    const changed = await call('write_tasks', { tasks: [{ id: launch.id, status: 'done', nextStep: null }] });
    expect(changed.updated[0].status).toBe('done');
    expect(changed.nowReady.map((t: Answer) => t.id)).toEqual([publish.id]);
    expect(plan.children(launch.id).every((s) => s.status === 'skipped')).toBe(true);

    const removed = await call('write_tasks', { tasks: [{ id: publish.id, remove: true }] });
    expect(removed.removed).toEqual([{ id: publish.id, title: 'Publish' }]);
    expect(plan.has(publish.id)).toBe(false);
  });

  it('refuses a call that mixes adding, changing and removing, or misplaces a field, changing nothing', async () => {
    const { plan, call } = compactKit();
    const [task] = (await call('write_tasks', { tasks: [{ title: 'One' }] })).added;
    const before = JSON.stringify(plan.toJSON());
    const refusals: Array<[unknown, RegExp]> = [
      [{ tasks: [{ id: task.id, status: 'done' }, { title: 'Two' }] }, /not both: split it in two/],
      [
        {
          tasks: [
            { id: task.id, remove: true },
            { id: task.id, status: 'done' },
          ],
        },
        /only \{ id, remove: true \}/,
      ],
      [{ tasks: [{ id: task.id, key: 'k' }] }, /tasks\.0: key is only for adding a task/],
      [{ tasks: [{ title: 'Two', supersededBy: task.id }] }, /supersededBy is only for changing a task/],
      [{ tasks: [{ status: 'done' }] }, /tasks\.0\.title/],
      [{ tasks: [{ id: 'nope', status: 'done' }] }, /nope/],
    ];
    for (const [args, message] of refusals) {
      const answer = await call('write_tasks', args);
      expect(answer.error?.code, JSON.stringify(args)).toMatch(/invalid_argument|not_found/);
      expect(answer.error.message).toMatch(message);
    }
    expect(JSON.stringify(plan.toJSON())).toBe(before);
  });

  it('checks where it maps a call the rules a native tool adds, changing nothing', async () => {
    const { plan, call } = compactKit();
    const before = JSON.stringify(plan.toJSON());
    expect((await call('read_tasks', { query: 'a', limit: 200 })).error.message).toBe(
      'Invalid arguments: limit: a query finds at most 100 tasks at a time; give a limit from 1 to 100.',
    );
    const many = Array.from({ length: 101 }, (_, i) => ({ id: `t${i}`, status: 'done' }));
    expect((await call('write_tasks', { tasks: many })).error.message).toBe(
      'Invalid arguments: tasks: one call changes at most 100 tasks; this one changes 101. Split it.',
    );
    expect((await call('write_tasks', { tasks: [{ status: 'done' }] })).error.message).toBe(
      'Invalid arguments: tasks.0.title: required (a string) to add a task; an entry without id adds one.',
    );
    expect((await call('claim_task', { id: 'x', action: 'hand_off' })).error.message).toBe(
      'action hand_off needs to: who gets the task, "agent:<name>" or "user:<name>".',
    );
    expect(JSON.stringify(plan.toJSON())).toBe(before);
  });

  it('claims the next task or a given one, releases it and hands it off', async () => {
    const { plan, call } = compactKit();
    const [a, b] = (await call('write_tasks', { tasks: [{ title: 'A' }, { title: 'B' }] })).added;
    expect(await call('claim_task', {})).toMatchObject({ outcome: 'won', task: { id: a.id } });
    expect(await call('claim_task', { id: b.id })).toMatchObject({ outcome: 'won', task: { id: b.id } });
    await call('claim_task', { id: a.id, action: 'release' });
    expect(plan.get(a.id)?.assignee).toBeNull();
    await call('claim_task', { id: b.id, action: 'hand_off', to: 'user:ann' });
    expect(plan.get(b.id)?.assignee).toBe('user:ann');
    expect((await call('claim_task', { action: 'release' })).error.message).toBe(
      'action release needs the id of the task.',
    );
  });
});
