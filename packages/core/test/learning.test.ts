// Traces of tool calls and the skills learned from them, on plain documents: what a toolkit records, the trace's
// bound, the offline distiller, the library's versions and retirement, and trigger matching.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { createPlan, createToolkit } from '../src/index.js';
import {
  callsForTask,
  currentVersion,
  learnedProcedureTool,
  learnSkill,
  matchSkills,
  offlineDistill,
  readCalls,
  readChanges,
  readSkills,
  recordCall,
  recordSkillOutcome,
  renderLearnedProcedures,
  setSkillStatus,
  traceRecorder,
} from '../src/learning/index.js';

async function workedTask(traceDoc: Y.Doc, goal = 'Book a table for 4 at Luigi’s on Friday') {
  const plan = createPlan({ actor: 'user:ann' });
  let clock = 1_000;
  const toolkit = createToolkit(plan, {
    actor: 'agent:bot',
    families: ['ongoing_task'],
    now: () => clock++,
    onCall: traceRecorder(traceDoc),
  });
  const created = (await toolkit.dispatch('set_ongoing_task', {
    task: goal,
    status: 'in_progress',
    steps: [
      { title: 'Find a free slot', status: 'pending' },
      { title: 'Confirm to the user', status: 'pending' },
    ],
  })) as { taskId: number };
  const num = created.taskId;
  const id = plan.byNum(num)!.id;
  // A refused call, then the fix.
  await toolkit.dispatch('set_ongoing_task', { task: goal, status: 'sleeping', taskId: num });
  await toolkit.dispatch('set_ongoing_task', { task: goal, status: 'waiting_user', taskId: num });
  await toolkit.dispatch('clear_ongoing_task', { outcome: 'done', taskId: num });
  return { plan, id };
}

describe('traces', () => {
  it('records each call with actor, time, tool, arguments, outcome and the tasks it touched', async () => {
    const traceDoc = new Y.Doc();
    const { plan, id } = await workedTask(traceDoc);
    const calls = readCalls(traceDoc);
    expect(calls.map((c) => [c.tool, c.outcome])).toEqual([
      ['set_ongoing_task', 'ok'],
      ['set_ongoing_task', 'invalid_argument'],
      ['set_ongoing_task', 'ok'],
      ['clear_ongoing_task', 'ok'],
    ]);
    expect(calls.every((c) => c.actor === 'agent:bot')).toBe(true);
    expect(calls.map((c) => c.at)).toEqual([...calls.map((c) => c.at)].sort((a, b) => a - b));
    expect(calls[0]!.tasks).toContain(id);
    // The steps written with the task are touched too.
    for (const step of plan.children(id)) expect(calls[0]!.tasks).toContain(step.id);
    expect(calls[1]!.tasks).toEqual([id]); // refused: only named
    expect(calls[0]!.args).toMatchObject({ status: 'in_progress' });
    // Nothing of the trace is in the plan's own document.
    expect([...plan.doc.share.keys()]).not.toContain('calls');
    expect(callsForTask(calls, new Set([id]), 0)).toHaveLength(4);
    expect(callsForTask(calls, new Set([id]), calls[2]!.at)).toHaveLength(2);
  });

  it('ties a refused call that names its task by goal to that task, and keeps what the refusal said (issue 30)', async () => {
    const traceDoc = new Y.Doc();
    const plan = createPlan({ actor: 'user:ann' });
    const toolkit = createToolkit(plan, { families: ['ongoing_task'], onCall: traceRecorder(traceDoc) });
    await toolkit.dispatch('set_ongoing_task', { task: 'Renew the passport', status: 'in_progress' });
    await toolkit.dispatch('set_ongoing_task', { task: 'Book a table at Luigi’s', status: 'in_progress' });
    const booking = plan.children(null).find((t) => t.title === 'Book a table at Luigi’s')!;
    // No taskId: the goal names it (whatever its case and spacing).
    await toolkit.dispatch('set_ongoing_task', {
      task: 'book a table at  Luigi’s',
      status: 'in_progress',
      wakeAt: '2026-12-04T09:00:00Z',
    });
    const refused = readCalls(traceDoc).at(-1)!;
    expect(refused).toMatchObject({ outcome: 'invalid_transition', tasks: [booking.id] });
    expect(refused.error).toMatch(/^wakeAt only applies to the waiting_user and waiting_external statuses/);
    expect(readCalls(traceDoc)[0]!.error).toBeUndefined();

    const draft = offlineDistill({
      planId: 'p',
      taskId: booking.id,
      goal: booking.title,
      calls: readCalls(traceDoc),
    });
    expect(draft.pitfalls[0]).toMatchObject({ error: 'invalid_transition', message: refused.error });
    const skills = new Y.Doc();
    const { skill } = learnSkill(skills, {
      scope: 'acme',
      draft,
      author: { kind: 'offline' },
      source: { planId: 'p', taskId: booking.id, goal: booking.title },
      actor: 'learning',
      now: 1,
    });
    expect(renderLearnedProcedures([skill])).toContain(
      'Pitfall: set_ongoing_task was refused (invalid_transition: wakeAt only applies to the waiting_user',
    );
  });

  it('ties an ongoing_task taskId to the task of that number, not to the plan alias it equals (issue 30)', async () => {
    const traceDoc = new Y.Doc();
    const plan = createPlan({ actor: 'user:ann' });
    const toolkit = createToolkit(plan, { families: ['ongoing_task'], onCall: traceRecorder(traceDoc) });
    // Task 1 with two steps takes the plan aliases 1 to 3; task 2 is alias 4, and alias 2 is a step of task 1.
    await toolkit.dispatch('set_ongoing_task', {
      task: 'Book a table at Luigi’s',
      status: 'in_progress',
      steps: [
        { title: 'Find a slot', status: 'pending' },
        { title: 'Confirm', status: 'pending' },
      ],
    });
    await toolkit.dispatch('set_ongoing_task', { task: 'Renew the passport', status: 'in_progress' });
    const [booking, passport] = plan.children(null).sort((a, b) => a.num - b.num);
    expect(plan.byNum(2)!.parent).toBe(booking!.id);
    // Named by number only (another wording of the goal), refused and then accepted.
    await toolkit.dispatch('set_ongoing_task', {
      task: 'Passport renewal',
      status: 'in_progress',
      wakeAt: '2026-12-04T09:00:00Z',
      taskId: 2,
    });
    await toolkit.dispatch('clear_ongoing_task', { taskId: 2 });
    const [refused, closed] = readCalls(traceDoc).slice(-2);
    expect(refused).toMatchObject({ outcome: 'invalid_transition', tasks: [passport!.id] });
    expect(closed).toMatchObject({ outcome: 'ok' });
    expect(closed!.tasks).toEqual([passport!.id]);
    // task_manage speaks the plan's aliases: there 2 is the step.
    const aliases = createToolkit(plan, { families: ['task_manage'], onCall: traceRecorder(traceDoc) });
    await aliases.dispatch('task_manage', { action: 'get', id: 2 });
    expect(readCalls(traceDoc).at(-1)!.tasks).toEqual([plan.byNum(2)!.id]);
  });

  it('records an unknown tool, and never lets a failing observer change a result', async () => {
    const seen: string[] = [];
    const toolkit = createToolkit(createPlan(), {
      onCall: (call) => {
        seen.push(`${call.tool}:${call.outcome}`);
        throw new Error('observer broke');
      },
    });
    const result = await toolkit.dispatch('nope', '{}');
    expect(result).toMatchObject({ error: { code: 'unknown_tool' } });
    const added = await toolkit.dispatch('add_tasks', { tasks: [{ title: 'A' }] });
    expect(added).toMatchObject({ added: [{ title: 'A' }] });
    expect(seen).toEqual(['nope:unknown_tool', 'add_tasks:ok']);
  });

  it('never holds more than its bound, by count and by age', () => {
    const doc = new Y.Doc();
    const bound = { maxCalls: 10, maxAgeMs: 1_000 };
    for (let i = 0; i < 25; i++) {
      recordCall(
        doc,
        { tool: 't', args: { i }, actor: 'agent:a', at: 5_000 + i, outcome: 'ok', tasks: [] },
        { bound },
      );
      expect(readCalls(doc).length).toBeLessThanOrEqual(10);
    }
    expect(readCalls(doc).map((c) => (c.args as { i: number }).i)).toEqual([
      15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
    ]);
    recordCall(
      doc,
      { tool: 't', args: { i: 99 }, actor: 'agent:a', at: 6_020, outcome: 'ok', tasks: [] },
      { bound },
    );
    expect(readCalls(doc).map((c) => (c.args as { i: number }).i)).toEqual([20, 21, 22, 23, 24, 99]);
  });

  it('keeps only the shape of arguments too large to store', () => {
    const doc = new Y.Doc();
    const big = { title: 'x'.repeat(10_000), n: 3 };
    recordCall(doc, { tool: 't', args: big, actor: 'agent:a', at: 1, outcome: 'ok', tasks: [] });
    expect(readCalls(doc)[0]!.args).toEqual({ n: '<number>', title: '<string>' });
  });
});

describe('offline distiller and the skill library', () => {
  it('turns a trace into a procedure: tools in order, shapes, pitfalls with their fix', async () => {
    const traceDoc = new Y.Doc();
    const { id } = await workedTask(traceDoc);
    const draft = offlineDistill({
      planId: 'acme:conv:1',
      taskId: id,
      goal: 'Book a table for 4',
      calls: readCalls(traceDoc),
    });
    expect(draft.steps.map((s) => s.tool)).toEqual([
      'set_ongoing_task',
      'set_ongoing_task',
      'clear_ongoing_task',
    ]);
    expect(draft.steps[0]!.args).toMatchObject({
      task: '<string>',
      status: 'in_progress',
      steps: [
        { title: '<string>', status: 'pending' },
        { title: '<string>', status: 'pending' },
      ],
    });
    expect(draft.steps[2]!.args).toEqual({ outcome: 'done', taskId: '<number>' });
    expect(draft.pitfalls).toEqual([
      {
        tool: 'set_ongoing_task',
        error: 'invalid_argument',
        message: expect.stringContaining('status'),
        fix: 'it worked as set_ongoing_task with status "waiting_user" instead of "sleeping"',
      },
    ]);
    expect(draft.triggers).toContain('book table');
    const skills = new Y.Doc();
    const { skill } = learnSkill(skills, {
      scope: 'acme',
      draft,
      author: { kind: 'offline' },
      source: { planId: 'acme:conv:1', taskId: id, goal: 'Book a table for 4' },
      actor: 'learning',
      now: 10,
    });
    expect(renderLearnedProcedures([skill])).toContain(
      'recorded from the tool calls, not written by a model',
    );
  });

  it('makes a new version when the same procedure is learned again with other calls, and retires after failures in a row', () => {
    const doc = new Y.Doc();
    const draft = {
      name: 'Book a table',
      triggers: ['book table'],
      steps: [
        { tool: 'set_ongoing_task', args: {} },
        { tool: 'clear_ongoing_task', args: {} },
      ],
      pitfalls: [],
    };
    const learn = (d: typeof draft, now: number) =>
      learnSkill(doc, {
        scope: 'acme',
        draft: d,
        author: { kind: 'model', model: 'm' },
        source: { planId: 'acme:c', taskId: null, goal: d.name },
        actor: 'learning',
        now,
      });
    const first = learn(draft, 1);
    // The very same calls again (a task that followed it): no new version, so its success counts there (issue 30).
    const same = learn({ ...draft, name: 'Book a table for two' }, 2);
    expect(same).toMatchObject({ created: false, skill: { id: first.skill.id } });
    expect(same.skill.versions.map((v) => v.version)).toEqual([1]);
    const again = learn(
      {
        ...draft,
        name: 'Book a table at a restaurant',
        triggers: ['Book a table', 'reserve'],
        steps: [{ tool: 'set_ongoing_task', args: { task: '<string>' } }, draft.steps[1]!],
      },
      2,
    );
    expect(again.created).toBe(false);
    expect(again.skill.id).toBe(first.skill.id);
    expect(currentVersion(again.skill).version).toBe(2);
    const other = learn({ ...draft, name: 'Look up an order', triggers: ['order status'] }, 3);
    expect(other.created).toBe(true);
    expect(readSkills(doc)).toHaveLength(2);

    const id = first.skill.id;
    const fail = (n: number) =>
      recordSkillOutcome(doc, id, 2, 'failed', {
        actor: 'learning',
        now: 10 + n,
        retireAfter: 3,
        taskId: `t${n}`,
      });
    recordSkillOutcome(doc, id, 2, 'done', { actor: 'learning', now: 9, retireAfter: 3, taskId: 't0' });
    expect(fail(1)?.status).toBe('active');
    expect(fail(2)?.status).toBe('active');
    const retired = fail(3)!;
    expect(retired.status).toBe('retired');
    expect(currentVersion(retired).stats).toEqual({ done: 1, failed: 3, consecutiveFailures: 3 });
    expect(matchSkills(readSkills(doc), ['Book a table for two tonight'])).toEqual([]);

    const restored = setSkillStatus(doc, 'acme', id, 'active', {
      actor: 'user:ann',
      now: 20,
      reason: 'fixed',
    });
    expect(currentVersion(restored).stats.consecutiveFailures).toBe(0);
    expect(matchSkills(readSkills(doc), ['Book a table for two tonight']).map((s) => s.id)).toEqual([id]);
    const changes = readChanges(doc, id).map((c) => `${c.change}:${c.by}`);
    expect(changes).toEqual([
      'learned:learning',
      'relearned:learning',
      'relearned:learning',
      'outcome:learning',
      'outcome:learning',
      'outcome:learning',
      'outcome:learning',
      'retired:learning',
      'restored:user:ann',
    ]);
    expect(() => setSkillStatus(doc, 'acme', 'nope', 'retired', { actor: 'user:ann', now: 1 })).toThrow(
      /no skill "nope" in scope "acme"; skills: /,
    );
  });

  it('matches trigger phrases by keywords, not by similarity', () => {
    const doc = new Y.Doc();
    learnSkill(doc, {
      scope: 'acme',
      draft: {
        name: 'Book a table',
        triggers: ['book table'],
        steps: [{ tool: 'x', args: {} }],
        pitfalls: [],
      },
      author: { kind: 'offline' },
      source: { planId: 'acme:c', taskId: null, goal: 'Book a table' },
      actor: 'learning',
      now: 1,
    });
    const skills = readSkills(doc);
    expect(matchSkills(skills, ['Could you book us a table at Mario’s?'])).toHaveLength(1);
    expect(matchSkills(skills, ['Reserve a seat at the opera'])).toHaveLength(0);
    expect(renderLearnedProcedures([])).toBe('');
  });

  it('offers a read tool to look a procedure up by id or keywords', async () => {
    const doc = new Y.Doc();
    const { skill } = learnSkill(doc, {
      scope: 'acme',
      draft: {
        name: 'Book a table',
        triggers: ['book table'],
        steps: [{ tool: 'set_ongoing_task', args: { task: '<string>' } }],
        pitfalls: [],
      },
      author: { kind: 'model', model: 'm' },
      source: { planId: 'acme:c', taskId: null, goal: 'Book a table' },
      actor: 'learning',
      now: 1,
    });
    const toolkit = createToolkit(createPlan(), {
      families: ['ongoing_task'],
      extraTools: [learnedProcedureTool(() => readSkills(doc))],
    });
    expect(toolkit.names).toContain('get_learned_procedure');
    expect(toolkit.definitions('mcp').find((d) => d.name === 'get_learned_procedure')?.annotations).toEqual({
      readOnlyHint: true,
    });
    const byId = (await toolkit.dispatch('get_learned_procedure', { skillId: skill.id })) as {
      procedures: Array<{ text: string }>;
    };
    expect(byId.procedures[0]!.text).toContain('1. set_ongoing_task { task: <string> }');
    expect(await toolkit.dispatch('get_learned_procedure', { query: 'please book a table' })).toMatchObject({
      procedures: [{ skillId: skill.id, version: 1 }],
    });
    expect(await toolkit.dispatch('get_learned_procedure', { skillId: 'nope' })).toMatchObject({
      error: { code: 'not_found', valid: [skill.id] },
    });
    expect(await toolkit.dispatch('get_learned_procedure', { skillId: skill.id, query: 'x' })).toMatchObject({
      error: { code: 'invalid_argument' },
    });
  });
});
