// The Plan API additions the tool families stand on: all-or-nothing writes, list reconciliation, keyword search.
import { describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import { CairnError, createPlan, type Plan, type PlanChangeEvent } from '../src/index.js';
import { reconcileList, searchTasks } from '../src/protocol-entry.js';
import { TaskInputsSchema, TaskPatchSchema } from '../src/schema.js';
import { scratchCopy } from '../src/scratch.js';
import { fixedPlan } from './tools-fixtures.js';

describe('plan.atomic', () => {
  it('applies every write as one transaction and one change event', () => {
    const plan = fixedPlan();
    const [a, b] = plan.addMany([{ title: 'A' }, { title: 'B' }]);
    const events: PlanChangeEvent[] = [];
    plan.onChange((e) => events.push(e));
    plan.atomic((p) => {
      p.update(a!.id, { status: 'done' });
      p.update(b!.id, { status: 'in_progress' });
    });
    expect(events).toHaveLength(1);
    expect(plan.list().map((t) => t.status)).toEqual(['done', 'in_progress']);
  });

  it('changes nothing, byte for byte, when a later write is refused', () => {
    const plan = fixedPlan();
    const [a] = plan.addMany([{ title: 'A' }, { title: 'B' }]);
    const before = Y.encodeStateAsUpdate(plan.doc);
    expect(() =>
      plan.atomic((p) => {
        p.update(a!.id, { status: 'done' });
        p.add({ title: 'C' });
        p.update('nope', { status: 'done' });
      }),
    ).toThrow(CairnError);
    expect(Y.encodeStateAsUpdate(plan.doc)).toEqual(before);
    expect(plan.get(a!.id)!.status).toBe('pending');
  });

  it('dry-runs on a copy of the live plan only: same tasks, no history, no chat', () => {
    const plan = fixedPlan();
    const [a] = plan.addMany([
      { title: 'A', context: { k: [1, { x: 'y' }] }, steps: [{ title: 'a1' }] },
      { title: 'B' },
    ]);
    for (let i = 0; i < 50; i++) plan.update(a!.id, { note: `edit ${i}` });
    plan.doc.getArray('chat').push(['a long conversation'.repeat(100)]);
    const copy = scratchCopy(plan.doc);
    expect(createPlan({ doc: copy }).toJSON()).toEqual(plan.toJSON());
    expect(copy.share.has('chat')).toBe(false);
    expect(Y.encodeStateAsUpdate(copy).length).toBeLessThan(Y.encodeStateAsUpdate(plan.doc).length / 4);
  });

  it('runs the call once, and applies what it planned without validating or parsing it again', () => {
    const plan = fixedPlan();
    const [a] = plan.addMany([{ title: 'A' }]);
    const runs = vi.fn((p: Plan) => {
      p.update(a!.id, { status: 'in_progress' });
      return p.addMany([{ title: 'B', parent: a!.id }])[0]!;
    });
    const inputs = vi.spyOn(TaskInputsSchema, 'safeParse');
    const patches = vi.spyOn(TaskPatchSchema, 'safeParse');
    const added = plan.atomic(runs);
    expect(runs).toHaveBeenCalledTimes(1);
    expect(inputs).toHaveBeenCalledTimes(1);
    expect(patches).toHaveBeenCalledTimes(1);
    expect(plan.get(added.id)).toMatchObject({ title: 'B', parent: a!.id, num: added.num });
    expect(plan.get(a!.id)!.status).toBe('in_progress');
    vi.restoreAllMocks();
  });

  it('refuses a write it could not apply as planned (a claim goes to the arbiter), changing nothing', () => {
    const plan = fixedPlan();
    const [a] = plan.addMany([{ title: 'A' }]);
    const before = Y.encodeStateAsUpdate(plan.doc);
    expect(() => plan.atomic((p) => void p.claim(a!.id))).toThrow(/writes made through the Plan/);
    expect(Y.encodeStateAsUpdate(plan.doc)).toEqual(before);
  });

  it('returns what the real run returns', () => {
    const plan = fixedPlan();
    const created = plan.atomic((p) => p.add({ title: 'A' }));
    expect(plan.get(created.id)?.title).toBe('A');
  });
});

describe('reconcileList', () => {
  it('keeps matched tasks (ids, aliases, steps) and writes only what differs', () => {
    const plan = fixedPlan();
    const [a, b] = plan.addMany([
      { title: 'Research', steps: [{ title: 'read' }] },
      { title: 'Design' },
      { title: 'Old' },
    ]);
    const events: PlanChangeEvent[] = [];
    plan.onChange((e) => events.push(e));
    const result = reconcileList(plan, [
      { title: 'Research', status: 'done' },
      { title: 'Design', status: 'in_progress', activeForm: 'Designing' },
      { title: 'Build' },
    ]);
    expect(result.tasks.map((t) => t.title)).toEqual(['Research', 'Design', 'Build']);
    expect(result.tasks[0]!.id).toBe(a!.id);
    expect(result.tasks[1]!.id).toBe(b!.id);
    expect(result.updated).toEqual([a!.id, b!.id]);
    expect(result.added).toHaveLength(1);
    expect(result.removed).toHaveLength(1);
    expect(plan.children(a!.id).map((s) => s.title)).toEqual(['read']);
    expect(events).toHaveLength(1);
    // Nothing to change: no write at all.
    const before = Y.encodeStateAsUpdate(plan.doc);
    reconcileList(plan, [
      { title: 'Research', status: 'done' },
      { title: 'Design', status: 'in_progress', activeForm: 'Designing' },
      { title: 'Build' },
    ]);
    expect(Y.encodeStateAsUpdate(plan.doc)).toEqual(before);
  });

  it('reorders with moves, not removals', () => {
    const plan = fixedPlan();
    const [a, b, c] = plan.addMany([{ title: 'A' }, { title: 'B' }, { title: 'C' }]);
    const result = reconcileList(plan, [{ title: 'C' }, { title: 'A' }, { title: 'B' }]);
    expect(result.tasks.map((t) => t.id)).toEqual([c!.id, a!.id, b!.id]);
    expect(result.removed).toEqual([]);
    expect(result.added).toEqual([]);
  });

  it('leaves a status alone when the family counts it as the same', () => {
    const plan = fixedPlan();
    const [a] = plan.addMany([{ title: 'A', status: 'cancelled' }]);
    reconcileList(plan, [{ title: 'A', status: 'done' }], {
      sameStatus: (cur, want) => cur !== 'pending' && want === 'done',
    });
    expect(plan.get(a!.id)!.status).toBe('cancelled');
  });

  it('rewrites the steps of one task and refuses a bad item without changing anything', () => {
    const plan = fixedPlan();
    const task = plan.add({ title: 'Book', steps: [{ title: 'call' }] });
    reconcileList(plan, [{ title: 'call', status: 'done' }, { title: 'confirm' }], { parent: task.id });
    expect(plan.children(task.id).map((s) => [s.title, s.status])).toEqual([
      ['call', 'done'],
      ['confirm', 'pending'],
    ]);
    const before = Y.encodeStateAsUpdate(plan.doc);
    expect(() => reconcileList(plan, [{ title: 'x' }, { title: '' }], { parent: task.id })).toThrow(
      CairnError,
    );
    expect(Y.encodeStateAsUpdate(plan.doc)).toEqual(before);
  });
});

describe('searchTasks', () => {
  it('matches every word at word starts across title, next step, note and context, closed tasks included', () => {
    const plan = fixedPlan();
    const [booking, , relay] = plan.addMany([
      { title: "Book a table at Luigi's", context: { restaurant: 'Luigi', party: 4 }, status: 'done' },
      { title: 'Call the bank', nextStep: 'ask about the table fee' },
      { title: 'Query relays', note: 'Café relay is down' },
    ]);
    expect(searchTasks(plan, 'luigi table').map((h) => h.task.id)).toEqual([booking!.id]);
    expect(searchTasks(plan, 'tab').map((h) => h.task.title)).toEqual([
      "Book a table at Luigi's",
      'Call the bank',
    ]);
    expect(searchTasks(plan, 'cafe')[0]).toMatchObject({ task: { id: relay!.id }, fields: ['note'] });
    expect(searchTasks(plan, 'luigi', { state: 'open' })).toEqual([]);
    expect(searchTasks(plan, '  !! ')).toEqual([]);
    expect(searchTasks(plan, 'restaurant')[0]!.fields).toEqual(['context']);
  });
});
