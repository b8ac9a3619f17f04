// A tool call is parsed once, by the tool's schema (built from the plan's field schemas): neither the plan API
// nor another tool parses again what the tool already did, on any path of any family; the plan API still parses
// what an SDK caller hands it directly. Parses are counted on every schema a call could be parsed by: each
// family's tool inputs and the plan API's own.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPlan, createToolkit, type FamilyName, type Plan } from '../src/index.js';
import { FAMILIES } from '../src/protocol-entry.js';
import {
  ActorSchema,
  ContextSchema,
  ListFilterSchema,
  MoveSchema,
  TaskInputSchema,
  TaskInputsSchema,
  TaskPatchSchema,
} from '../src/schema.js';

afterEach(() => {
  vi.restoreAllMocks();
});

const PARSERS = ['parse', 'safeParse', 'parseAsync', 'safeParseAsync'] as const;

/** Counts every parse of any schema a call could be parsed by, from now until the returned stop. */
function countParses(): { count: () => number; byName: () => Record<string, number> } {
  const schemas: Array<[string, object]> = [
    ['TaskInputSchema', TaskInputSchema],
    ['TaskInputsSchema', TaskInputsSchema],
    ['TaskPatchSchema', TaskPatchSchema],
    ['MoveSchema', MoveSchema],
    ['ListFilterSchema', ListFilterSchema],
    ['ActorSchema', ActorSchema],
    ['ContextSchema', ContextSchema],
  ];
  for (const family of Object.values(FAMILIES)) {
    for (const tool of family.tools) schemas.push([`${tool.name} input`, tool.input]);
  }
  const counts: Record<string, number> = {};
  for (const [name, schema] of schemas) {
    for (const method of PARSERS) {
      const target = schema as Record<string, (...args: unknown[]) => unknown>;
      const original = target[method]!;
      vi.spyOn(target, method).mockImplementation((...args: unknown[]) => {
        counts[name] = (counts[name] ?? 0) + 1;
        return original.apply(schema, args);
      });
    }
  }
  return {
    count: () => Object.values(counts).reduce((a, b) => a + b, 0),
    byName: () => ({ ...counts }),
  };
}

type Call = [tool: string, args: (plan: Plan) => unknown];

/** For each family: calls that take every path of every tool (adds, changes with steps, moves, repeats, reads). */
const CALLS: Record<FamilyName, Call[]> = {
  cairn: [
    [
      'add_tasks',
      () => ({ tasks: [{ title: 'A', key: 'a', steps: ['a1', { title: 'a2' }] }, { title: 'B' }] }),
    ],
    ['update_tasks', (p) => ({ updates: [{ id: top(p, 0), status: 'in_progress', context: { k: 1 } }] })],
    [
      'update_tasks',
      (p) => ({
        updates: [
          { id: top(p, 0), addSteps: ['a3'] },
          { id: top(p, 1), note: 'n' },
        ],
      }),
    ],
    ['update_tasks', (p) => ({ updates: [{ id: top(p, 1), nextStep: 'go', parent: top(p, 0) }] })],
    ['update_tasks', (p) => ({ updates: [{ id: top(p, 0), parent: null, after: null }] })],
    [
      'update_tasks',
      (p) => ({
        updates: [
          { id: top(p, 0), addSteps: [{ title: 'a4' }] },
          { id: top(p, 0), note: 'twice' },
        ],
      }),
    ],
    ['get_task', (p) => ({ id: top(p, 0) })],
    ['list_tasks', () => ({ view: 'open' })],
    ['list_tasks', () => ({})],
    ['search_tasks', () => ({ query: 'a' })],
    ['claim', (p) => ({ id: top(p, 0) })],
    ['release', (p) => ({ id: top(p, 0) })],
    ['claim_next', () => ({})],
    ['hand_off', (p) => ({ id: top(p, 0), to: 'user:ann' })],
    ['remove_tasks', (p) => ({ ids: [top(p, 0)] })],
  ],
  cairn_compact: [
    [
      'write_tasks',
      () => ({
        tasks: [
          { title: 'A', key: 'a', steps: ['a1'] },
          { title: 'B', parent: 'a' },
        ],
      }),
    ],
    ['write_tasks', (p) => ({ tasks: [{ id: top(p, 0), status: 'in_progress', steps: ['a2'] }] })],
    [
      'write_tasks',
      (p) => ({
        tasks: [
          { id: top(p, 0), note: 'n' },
          { id: top(p, 0), nextStep: 'x' },
        ],
      }),
    ],
    ['read_tasks', (p) => ({ id: top(p, 0) })],
    ['read_tasks', () => ({ query: 'a' })],
    ['read_tasks', () => ({ view: 'all' })],
    ['claim_task', (p) => ({ id: top(p, 0) })],
    ['claim_task', (p) => ({ id: top(p, 0), action: 'release' })],
    ['claim_task', () => ({})],
    ['claim_task', (p) => ({ id: top(p, 0), action: 'hand_off', to: 'user:ann' })],
    ['write_tasks', (p) => ({ tasks: [{ id: top(p, 0), remove: true }] })],
  ],
  task_manage: [
    ['task_manage', () => ({ action: 'add', text: 'A' })],
    ['task_manage', () => ({ action: 'add', text: 'B', status: 'active' })],
    ['task_manage', () => ({ action: 'update', id: 1, status: 'done' })],
    ['task_manage', () => ({ action: 'list' })],
    ['task_manage', () => ({ action: 'remove', id: 2 })],
    ['task_manage', () => ({ action: 'replace', tasks: ['C', 'D'] })],
    ['task_manage', () => ({ action: 'clear', status: 'pending' })],
  ],
  todo: [
    ['todo', () => ({ action: 'create', todos: [todo('Run tests', 'pending'), todo('Build', 'pending')] })],
    [
      'todo',
      () => ({ action: 'update', todos: [todo('Run tests', 'completed'), todo('Build', 'in_progress')] }),
    ],
    ['todo', () => ({ action: 'list' })],
    ['TodoWrite', () => ({ todos: [todo('Build', 'completed'), todo('Ship', 'pending')] })],
  ],
  task_graph: [
    ['create_task', () => ({ title: 'A' })],
    ['create_task', () => ({ title: 'B', blocked_by: [1] })],
    ['complete_task', () => ({ task_id: 1 })],
    ['list_ready_tasks', () => ({})],
  ],
  ongoing_task: [
    [
      'set_ongoing_task',
      () => ({ task: 'Book a table', status: 'in_progress', steps: [step('Call', 'pending')] }),
    ],
    [
      'set_ongoing_task',
      () => ({
        task: 'Book a table',
        status: 'waiting_user',
        nextStep: 'Wait',
        context: { people: 4 },
        wakeAt: '2026-12-04T09:00:00Z',
        steps: [step('Call', 'done'), step('Confirm', 'pending')],
      }),
    ],
    ['get_ongoing_task', () => ({})],
    ['clear_ongoing_task', () => ({ outcome: 'done', reason: 'booked' })],
  ],
};

function top(plan: Plan, i: number): string {
  return plan.children(null)[i]!.id;
}
function todo(content: string, status: string) {
  return { content, activeForm: `${content}ing`, status };
}
function step(title: string, status: string) {
  return { title, status };
}

describe('one validation pass', () => {
  for (const family of Object.keys(CALLS) as FamilyName[]) {
    it(`${family}: every call is parsed exactly once, on every path`, async () => {
      const plan = createPlan({ actor: 'agent:a' });
      const tk = createToolkit(plan, { families: [family] });
      const parses = countParses();
      const seen: Array<{ tool: string; parses: number; by: Record<string, number> }> = [];
      for (const [tool, args] of CALLS[family]) {
        const before = parses.byName();
        const start = parses.count();
        const result = await tk.dispatch(tool, args(plan));
        expect(result, `${tool} ${JSON.stringify(result)}`).not.toHaveProperty('error');
        const after = parses.byName();
        const by = Object.fromEntries(
          Object.entries(after)
            .map(([k, v]) => [k, v - (before[k] ?? 0)] as const)
            .filter(([, v]) => v > 0),
        );
        seen.push({ tool, parses: parses.count() - start, by });
      }
      expect(seen.filter((s) => s.parses !== 1)).toEqual([]);
    });
  }

  it('a refused call is parsed once too, and its message names the problem', async () => {
    const plan = createPlan({ actor: 'agent:a' });
    const tk = createToolkit(plan, { families: ['cairn_compact'] });
    const parses = countParses();
    const result = await tk.dispatch('write_tasks', { tasks: [{ title: '' }] });
    expect(result).toMatchObject({ error: { code: 'invalid_argument' } });
    expect(parses.count()).toBe(1);
  });

  it('update_tasks does not parse its patches, steps and moves again in the plan; the plan API does', async () => {
    const plan = createPlan();
    const tk = createToolkit(plan);
    const [a, b] = plan.addMany([{ title: 'A' }, { title: 'B' }]);
    const patches = vi.spyOn(TaskPatchSchema, 'safeParse');
    const moves = vi.spyOn(MoveSchema, 'safeParse');
    const steps = vi.spyOn(TaskInputsSchema, 'safeParse');
    const result = await tk.dispatch('update_tasks', {
      updates: [
        { id: a!.id, status: 'done', context: { k: 1 } },
        { id: b!.id, nextStep: 'go', parent: a!.id, addSteps: ['b1'] },
        { id: b!.id, addSteps: [{ title: 'b2' }] },
      ],
    });
    expect(result).not.toHaveProperty('error');
    expect(plan.get(b!.id)).toMatchObject({ nextStep: 'go', parent: a!.id });
    expect(plan.children(b!.id).map((s) => s.title)).toEqual(['b1', 'b2']);
    expect(patches).not.toHaveBeenCalled();
    expect(moves).not.toHaveBeenCalled();
    expect(steps).not.toHaveBeenCalled();

    plan.update(a!.id, { note: 'by hand' });
    plan.move(b!.id, { parent: null });
    plan.updateMany([{ id: b!.id, addSteps: [{ title: 'b3' }] }]);
    expect(patches).toHaveBeenCalledTimes(1);
    expect(moves).toHaveBeenCalledTimes(1);
    expect(steps).toHaveBeenCalledTimes(1);
    expect(() => plan.update(a!.id, { status: 'nope' as never })).toThrow(/Invalid update of task/);
  });
});
