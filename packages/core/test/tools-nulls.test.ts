// Models with structured or strict tool calling send every optional field, null for the ones they do not use.
// Every family takes such a null as "absent"; where null means something (clearing a field, "first", "top
// level") it keeps that meaning. OpenAI strict-mode definitions are offered and pass the OpenAI SDK's own check.
import { toStrictJsonSchema } from 'openai/lib/transform';
import { describe, expect, it } from 'vitest';
import { createToolkit, FAMILY_NAMES, isToolError } from '../src/index.js';
import { fixedPlan } from './tools-fixtures.js';

async function ok(tk: ReturnType<typeof createToolkit>, name: string, args: unknown) {
  const result = await tk.dispatch(name, args);
  expect(isToolError(result) ? result.error.message : null, `${name} ${JSON.stringify(args)}`).toBeNull();
  return result as Record<string, unknown>;
}

describe('null in an optional argument', () => {
  it('task_manage: add with id, status and tasks null', async () => {
    const tk = createToolkit(fixedPlan(), { families: ['task_manage'] });
    await ok(tk, 'task_manage', { action: 'add', text: 'x', id: null, status: null, tasks: null });
    expect(tk.plan.list().map((t) => [t.title, t.status])).toEqual([['x', 'pending']]);
  });

  it('todo: list with todos null, and each todo family call with its nulls', async () => {
    const tk = createToolkit(fixedPlan(), { families: ['todo'] });
    await ok(tk, 'todo', { action: 'list', todos: null });
    await ok(tk, 'todo', {
      action: 'create',
      todos: [{ content: 'Run tests', activeForm: 'Running tests', status: 'pending' }],
    });
    expect(tk.plan.list()).toHaveLength(1);
  });

  it('task_graph: create_task with blocked_by null', async () => {
    const tk = createToolkit(fixedPlan(), { families: ['task_graph'] });
    await ok(tk, 'create_task', { title: 'one', blocked_by: null });
    expect(tk.plan.list().map((t) => [t.title, t.blockedBy])).toEqual([['one', []]]);
  });

  it('ongoing_task: optional nulls are absent, nextStep null still clears it', async () => {
    const tk = createToolkit(fixedPlan(), { families: ['ongoing_task'] });
    await ok(tk, 'set_ongoing_task', {
      task: 'Book a table',
      status: 'pending',
      nextStep: 'Call Luigi',
      steps: null,
      context: null,
      taskId: null,
    });
    expect(tk.plan.list()[0]).toMatchObject({ status: 'pending', nextStep: 'Call Luigi' });
    await ok(tk, 'set_ongoing_task', { task: 'Book a table', nextStep: null, status: 'in_progress' });
    expect(tk.plan.list()[0]).toMatchObject({ status: 'in_progress', nextStep: null });
    await ok(tk, 'clear_ongoing_task', { outcome: null, reason: null, taskId: null });
    expect(tk.plan.list()[0]!.status).toBe('done');
  });

  it('cairn: nulls in nested entries are absent, and null still clears or places first', async () => {
    const tk = createToolkit(fixedPlan(), { families: ['cairn'] });
    const added = (await ok(tk, 'add_tasks', {
      tasks: [
        { title: 'A', key: null, parent: null, blockedBy: null, steps: null, status: null, nextStep: 'go' },
        { title: 'B', after: null },
      ],
    })) as { added: Array<{ id: string }> };
    const [a, b] = added.added;
    // after: null kept its meaning: B went first.
    expect(tk.plan.children(null).map((t) => t.title)).toEqual(['B', 'A']);
    await ok(tk, 'update_tasks', {
      updates: [{ id: a!.id, status: null, title: null, addSteps: null, nextStep: null, note: null }],
    });
    expect(tk.plan.get(a!.id)).toMatchObject({ status: 'pending', title: 'A', nextStep: null });
    await ok(tk, 'list_tasks', { view: null, assignee: null, limit: null, offset: null });
    await ok(tk, 'claim_next', { parent: null });
    expect(tk.plan.get(b!.id)!.assignee).toBe(tk.actor);
  });

  it('still refuses a null in a required argument, naming it', async () => {
    const tk = createToolkit(fixedPlan(), { families: ['task_graph'] });
    const result = await tk.dispatch('create_task', { title: null });
    expect(isToolError(result) && result.error.message).toMatch(/title/);
  });
});

describe('OpenAI strict-mode definitions', () => {
  it('make every property required and optional ones nullable, as the OpenAI SDK checks', async () => {
    const tk = createToolkit(fixedPlan(), { families: [...FAMILY_NAMES] });
    const strict = tk.definitions('openai', { strict: true });
    expect(strict).toHaveLength(tk.names.length);
    for (const def of strict) {
      expect(def.function.strict).toBe(true);
      const params = def.function.parameters;
      expect([...(params.required ?? [])].sort()).toEqual(Object.keys(params.properties ?? {}).sort());
      // The SDK's helper throws on what strict mode cannot take, and adds nothing to what it can.
      expect(toStrictJsonSchema(params as never), def.function.name).toEqual(params);
    }
    // A free-form object (context) cannot be expressed in strict mode and is left out.
    const add = strict.find((d) => d.function.name === 'add_tasks')!;
    const item = (add.function.parameters.properties!['tasks'] as { items: { properties: object } }).items;
    expect(Object.keys(item.properties)).not.toContain('context');
    expect(() => tk.definitions('mcp', { strict: true })).toThrow(/OpenAI/);
  });

  it('a call filled the strict way (every field, null where unused) succeeds in every family', async () => {
    const tk = createToolkit(fixedPlan(), { families: [...FAMILY_NAMES] });
    const filled = {
      add_tasks: {
        tasks: [
          {
            title: 'T',
            key: null,
            parent: null,
            after: null,
            blockedBy: null,
            steps: null,
            status: null,
            activeForm: null,
            nextStep: null,
            note: null,
            wakeAt: null,
            assignee: null,
          },
        ],
      },
      task_manage: { action: 'add', text: 'x', id: null, status: null, tasks: null },
      todo: { action: 'list', todos: null },
      create_task: { title: 'y', blocked_by: null },
      set_ongoing_task: { task: 'z', status: 'pending', nextStep: null, steps: null, wakeAt: null },
    } as Record<string, Record<string, unknown>>;
    const strict = new Map(tk.definitions('openai', { strict: true }).map((d) => [d.function.name, d]));
    for (const [name, args] of Object.entries(filled)) {
      // Every property the strict schema names is present, as a strict model would send it.
      const props = Object.keys(strict.get(name)!.function.parameters.properties ?? {});
      for (const key of props) if (!(key in args)) args[key] = null;
      await ok(tk, name, args);
    }
  });
});
