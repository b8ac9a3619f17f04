// Offline distillation from traces recorded through a toolkit (issue 30): values all traces agreed on kept, each
// step kept, the procedure named for the kind of task with its varying parts as slots, each refused call a pitfall
// with what the refusal said and what the call that then worked did differently; traces of two kinds never mix.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { createPlan, createToolkit } from '../src/index.js';
import {
  currentVersion,
  exampleOf,
  learnSkill,
  offlineDistill,
  readCalls,
  readSkill,
  renderLearnedProcedures,
  SKILL_FORMAT,
  type Skill,
  skillOfKind,
  type TraceSample,
  traceRecorder,
} from '../src/learning/index.js';

const STEPS = ['Find a free slot', 'Reserve the table', 'Confirm to the user'];

/** A booking worked through the ongoing_task tools in a conversation of its own, one refused call on the way. */
async function booking(party: number, restaurant: string, day: string): Promise<TraceSample> {
  const traces = new Y.Doc();
  const plan = createPlan({ actor: 'user:ann' });
  const toolkit = createToolkit(plan, { families: ['ongoing_task'], onCall: traceRecorder(traces) });
  const goal = `Book a table for ${party} at ${restaurant} on ${day}`;
  await toolkit.dispatch('set_ongoing_task', {
    task: goal,
    status: 'in_progress',
    steps: STEPS.map((title) => ({ title, status: 'pending' })),
    context: { party, restaurant, day },
  });
  // Refused: a wake-up time on a task that is not waiting.
  await toolkit.dispatch('set_ongoing_task', {
    task: goal,
    status: 'in_progress',
    wakeAt: '2026-12-04T09:00:00Z',
    taskId: 1,
  });
  await toolkit.dispatch('set_ongoing_task', {
    task: goal,
    status: 'waiting_external',
    wakeAt: '2026-12-04T09:00:00Z',
    nextStep: 'Wait for the restaurant to confirm',
    taskId: 1,
  });
  await toolkit.dispatch('clear_ongoing_task', { outcome: 'done', taskId: 1 });
  const task = plan.children(null)[0]!;
  return { planId: `acme:conv:${restaurant}`, taskId: task.id, goal, calls: readCalls(traces) };
}

/** A renewal: other words, other tools in another order. */
async function renewal(document: string, until: string): Promise<TraceSample> {
  const traces = new Y.Doc();
  const plan = createPlan({ actor: 'user:ann' });
  const toolkit = createToolkit(plan, { families: ['ongoing_task'], onCall: traceRecorder(traces) });
  const goal = `Renew the ${document} until ${until}`;
  await toolkit.dispatch('set_ongoing_task', { task: goal, status: 'waiting_user', context: { document } });
  await toolkit.dispatch('clear_ongoing_task', { outcome: 'done', taskId: 1 });
  return {
    planId: `acme:conv:${document}`,
    taskId: plan.children(null)[0]!.id,
    goal,
    calls: readCalls(traces),
  };
}

function learn(doc: Y.Doc, samples: TraceSample[], skillId: string | null = null): Skill {
  return learnSkill(doc, {
    scope: 'acme',
    draft: offlineDistill(samples),
    author: { kind: 'offline' },
    skillId,
    example: exampleOf(samples.at(-1)!),
    source: { planId: samples.at(-1)!.planId, taskId: samples.at(-1)!.taskId, goal: samples.at(-1)!.goal },
    actor: 'learning',
    now: samples.length,
  }).skill;
}

describe('offline distillation (issue 30)', () => {
  it('keeps the values all traces agreed on, each step, and names the kind with slots', async () => {
    const traces = [
      await booking(8, 'Luigi’s', 'Tuesday'),
      await booking(2, 'Nopa', 'Friday'),
      await booking(4, 'Chez Panisse', 'Monday'),
    ];
    const draft = offlineDistill(traces);
    expect(draft.name).toBe('Book a table for <party> at <restaurant> on <day>');
    expect(draft.triggers[0]).toBe('book table');
    expect(draft.steps.map((s) => s.tool)).toEqual([
      'set_ongoing_task',
      'set_ongoing_task',
      'clear_ongoing_task',
    ]);
    expect(draft.steps[0]!.args).toEqual({
      task: '<string>',
      status: 'in_progress',
      // Three steps stay three, each with the title every trace gave it.
      steps: STEPS.map((title) => ({ title, status: 'pending' })),
      context: { party: '<number>', restaurant: '<string>', day: '<string>' },
    });
    expect(draft.steps[1]!.args).toEqual({
      task: '<string>',
      status: 'waiting_external',
      wakeAt: '2026-12-04T09:00:00Z',
      nextStep: 'Wait for the restaurant to confirm',
      // The same number in every conversation, but a reference to that conversation's own task.
      taskId: '<number>',
    });
    expect(draft.steps[2]!.args).toEqual({ outcome: 'done', taskId: '<number>' });
    // One refused call in each trace, the same mistake: one pitfall, with the refusal's words and the fix.
    expect(draft.pitfalls).toEqual([
      {
        tool: 'set_ongoing_task',
        error: 'invalid_transition',
        message: expect.stringMatching(
          /^wakeAt only applies to the waiting_user and waiting_external statuses/,
        ),
        fix:
          'it worked as set_ongoing_task with nextStep "Wait for the restaurant to confirm", ' +
          'with status "waiting_external" instead of "in_progress"',
      },
    ]);
    const text = renderLearnedProcedures([learn(new Y.Doc(), traces)]);
    expect(text).toContain('- Book a table for <party> at <restaurant> on <day> [skill');
    expect(text).toContain(
      '2. set_ongoing_task { nextStep: "Wait for the restaurant to confirm", status: "waiting_external"',
    );
    expect(text).toContain('Pitfall: set_ongoing_task was refused (invalid_transition: wakeAt only applies');
  });

  it('learned from one trace, keeps only vocabulary, every item of a list, and slots the values the calls took from the goal', async () => {
    const draft = offlineDistill(await booking(8, 'Luigi’s', 'Tuesday'));
    expect(draft.name).toBe('Book a table for <party> at <restaurant> on <day>');
    expect(draft.steps[0]!.args).toMatchObject({
      steps: STEPS.map(() => ({ title: '<string>', status: 'pending' })),
      context: { party: '<number>', restaurant: '<string>', day: '<string>' },
    });
    expect(draft.steps[1]!.args).toMatchObject({ nextStep: '<string>', status: 'waiting_external' });
    expect(draft.pitfalls).toHaveLength(1);
  });

  it('a refused call with no later success is a pitfall that says so', () => {
    const draft = offlineDistill({
      planId: 'p',
      taskId: null,
      goal: 'Close the ticket',
      calls: [
        { tool: 'get_ongoing_task', args: {}, outcome: 'ok' },
        {
          tool: 'clear_ongoing_task',
          args: { taskId: 9 },
          outcome: 'not_found',
          error: 'There is no task 9.',
        },
      ],
    });
    expect(draft.pitfalls).toEqual([
      {
        tool: 'clear_ongoing_task',
        error: 'not_found',
        message: 'There is no task 9.',
        fix: 'no later call succeeded; do not call clear_ongoing_task so',
      },
    ]);
  });

  it('learns the next task of a kind with the earlier traces of that kind, never with another kind', async () => {
    const library = new Y.Doc();
    const first = await booking(8, 'Luigi’s', 'Tuesday');
    const books = learn(library, [first]);
    const renew = await renewal('passport', '2030');
    expect(skillOfKind([books], renew)).toBeNull();
    const renews = learn(library, [renew]);
    expect(renews.id).not.toBe(books.id);
    const second = await booking(2, 'Nopa', 'Friday');
    const kind = skillOfKind([renews, books], second);
    expect(kind?.id).toBe(books.id);
    const both = learn(library, [...kind!.examples, second], kind!.id);
    expect(both.id).toBe(books.id);
    expect(both.examples.map((e) => e.goal)).toEqual([first.goal, second.goal]);
    // It followed version 1: counted for it, whose text now says what both traces agreed on.
    expect(currentVersion(both)).toMatchObject({
      version: 1,
      name: 'Book a table for <party> at <restaurant> on <day>',
    });
    expect(currentVersion(both).steps[0]!.args).toMatchObject({
      steps: STEPS.map((title) => ({ title, status: 'pending' })),
    });
    // A booking made with other calls (no steps given) is a new version of the kind's skill.
    const other = await booking(3, 'Nopa', 'Monday');
    const shortCalls = other.calls.map((c, i) =>
      i === 0 ? { ...c, args: { task: other.goal, status: 'in_progress' } } : c,
    );
    const changed = { ...other, calls: shortCalls };
    const third = learn(library, [...both.examples, changed], skillOfKind([both], changed)!.id);
    expect(third.id).toBe(books.id);
    expect(currentVersion(third).version).toBe(2);
    expect(currentVersion(third).steps[0]!.args).toEqual({ task: '<string>', status: 'in_progress' });
    expect(readSkill(library, renews.id)!.examples.map((e) => e.goal)).toEqual([renew.goal]);
  });

  it('a task that followed the version counts for it; a draft not made with its examples leaves its text as it was', async () => {
    const library = new Y.Doc();
    const first = await booking(8, 'Luigi’s', 'Tuesday');
    const skill = learn(library, [first]);
    const before = currentVersion(skill);
    // Learned from its own trace alone (no skillId): found by its procedure, counted, its pitfall kept.
    const second = await booking(2, 'Nopa', 'Friday');
    const again = learn(library, [{ ...second, calls: second.calls.filter((c) => c.outcome === 'ok') }]);
    expect(again.id).toBe(skill.id);
    expect(currentVersion(again)).toEqual(before);
    expect(again.examples).toHaveLength(2);
  });

  it(`opens a skill stored in format 1 as format ${SKILL_FORMAT}, with no examples`, () => {
    const library = new Y.Doc();
    const stored = learn(library, [
      {
        planId: 'p',
        taskId: null,
        goal: 'Book a table',
        calls: [{ tool: 'get_ongoing_task', args: {}, outcome: 'ok' }],
      },
    ]);
    const { examples: _, ...format1 } = { ...stored, format: 1 };
    library.getMap('skills').set(stored.id, format1);
    expect(readSkill(library, stored.id)).toEqual({ ...stored, examples: [] });
  });
});
