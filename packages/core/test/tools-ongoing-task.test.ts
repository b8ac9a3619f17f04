// Seed 001's conversation tasks, call by call: set, get and clear the ongoing tasks, and the Open Tasks block.
import { describe, expect, it } from 'vitest';
import { createToolkit, renderPlan } from '../src/index.js';
import { fixedPlan, refused, TestClock } from './tools-fixtures.js';

function conversation() {
  const clock = new TestClock();
  const tk = createToolkit(fixedPlan('agent:a', 1, { clock }), {
    families: ['ongoing_task'],
    now: clock.now,
  });
  return { tk, clock };
}

describe('ongoing_task family', () => {
  it('creates a task with steps and context, then updates it by goal, merging context', async () => {
    const { tk, clock } = conversation();
    const created = await tk.dispatch('set_ongoing_task', {
      task: "Book a table for 4 at Luigi's on Friday and confirm to the user",
      status: 'in_progress',
      nextStep: "Call Luigi's",
      steps: [
        { title: 'Find the number', status: 'done' },
        { title: 'Call to book', status: 'pending' },
      ],
      context: { party: 4, day: 'friday' },
    });
    expect(created).toEqual({
      created: true,
      taskId: 1,
      task: "Book a table for 4 at Luigi's on Friday and confirm to the user",
      status: 'in_progress',
      steps: [
        { title: 'Find the number', status: 'done' },
        { title: 'Call to book', status: 'pending' },
      ],
      nextStep: "Call Luigi's",
      context: { day: 'friday', party: 4 },
      wakeAt: null,
      supersededBy: null,
      source: 'agent',
      updatedBy: 'agent:a',
      createdAt: '2026-12-02T09:00:00.000Z',
      ageMinutes: 0,
    });
    clock.advance(30);
    const waiting = await tk.dispatch('set_ongoing_task', {
      task: "book a table for 4 at Luigi's on Friday and confirm to the user",
      status: 'waiting_user',
      nextStep: 'Ask whether 19:00 works',
      wakeAt: '2026-12-04T09:00:00Z',
      steps: [
        { title: 'Find the number', status: 'done' },
        { title: 'Call to book', status: 'done', note: 'only 19:00 free' },
        { title: 'Confirm with the user', status: 'in_progress' },
      ],
      context: { day: null, time: '19:00' },
    });
    expect(waiting).toMatchObject({
      created: false,
      taskId: 1,
      // Matched case-insensitively, the goal keeps the wording it was stored with.
      task: "Book a table for 4 at Luigi's on Friday and confirm to the user",
      status: 'waiting_user',
      context: { party: 4, time: '19:00' },
      wakeAt: '2026-12-04T09:00:00Z',
      ageMinutes: 30,
      steps: [
        { title: 'Find the number', status: 'done' },
        { title: 'Call to book', status: 'done', note: 'only 19:00 free' },
        { title: 'Confirm with the user', status: 'in_progress' },
      ],
    });
    // The same step tasks were kept (2 and 3), one was added (4).
    expect(tk.plan.children(tk.plan.byNum(1)!.id).map((s) => s.num)).toEqual([2, 3, 4]);
    expect(renderPlan(tk.plan, { format: 'open-tasks', now: clock.ms + 90 * 60_000 })).toBe(
      [
        '## Open Tasks In This Conversation',
        '',
        "Informational only: prioritise the user's current message, and continue a task only when the message relates to it.",
        '',
        "Task 1: Book a table for 4 at Luigi's on Friday and confirm to the user",
        '- Status: waiting_user, opened 2 hours ago',
        '- Steps:',
        '  - [x] Find the number',
        '  - [x] Call to book',
        '  - [-] Confirm with the user',
        '- Next step: Ask whether 19:00 works',
        '- Wakes at: 2026-12-04T09:00:00Z',
      ].join('\n'),
    );
  });

  it('numbers tasks, not steps: after a task with three steps the next task is 2', async () => {
    const { tk } = conversation();
    await tk.dispatch('set_ongoing_task', {
      task: 'Plan the trip',
      status: 'in_progress',
      steps: [
        { title: 'Book flights', status: 'pending' },
        { title: 'Book the hotel', status: 'pending' },
        { title: 'Rent a car', status: 'pending' },
      ],
    });
    const second = await tk.dispatch('set_ongoing_task', { task: 'Renew the passport', status: 'pending' });
    expect(second).toMatchObject({ created: true, taskId: 2 });
    // taskId 2 names the second task, never a step of the first.
    expect(await tk.dispatch('clear_ongoing_task', { taskId: 2 })).toMatchObject({
      taskId: 2,
      task: 'Renew the passport',
      status: 'done',
    });
    expect(
      await tk.dispatch('set_ongoing_task', { task: 'Plan the trip', status: 'done', taskId: 1 }),
    ).toMatchObject({
      taskId: 1,
      task: 'Plan the trip',
    });
    const missing = await refused(tk, 'clear_ongoing_task', { taskId: 3 }, 'not_found');
    expect(missing.message).toBe(
      'There is no task 3. Known tasks: 1 (Plan the trip), 2 (Renew the passport).',
    );
    expect(renderPlan(tk.plan, { format: 'open-tasks' })).toBe('');
    await tk.dispatch('set_ongoing_task', { task: 'Pack', status: 'pending' });
    expect(renderPlan(tk.plan, { format: 'open-tasks' })).toContain('Task 3: Pack');
  });

  it('keeps the stored goal when only its case differs, and takes a really new goal given by taskId', async () => {
    const { tk } = conversation();
    await tk.dispatch('set_ongoing_task', { task: 'Book a table at Luigi’s', status: 'pending' });
    expect(
      await tk.dispatch('set_ongoing_task', {
        task: 'book a TABLE at  luigi’s',
        status: 'in_progress',
        taskId: 1,
      }),
    ).toMatchObject({ task: 'Book a table at Luigi’s', status: 'in_progress' });
    expect(
      await tk.dispatch('set_ongoing_task', {
        task: 'Book a table at Mario’s',
        status: 'in_progress',
        taskId: 1,
      }),
    ).toMatchObject({ task: 'Book a table at Mario’s' });
  });

  it('lists open tasks newest first and clears the newest, or the one named', async () => {
    const { tk, clock } = conversation();
    await tk.dispatch('set_ongoing_task', { task: 'Look up the order', status: 'in_progress' });
    clock.advance(5);
    await tk.dispatch('set_ongoing_task', { task: 'Refund the order', status: 'waiting_external' });
    const open = (await tk.dispatch('get_ongoing_task', {})) as {
      count: number;
      tasks: Array<{ taskId: number }>;
    };
    expect(open.count).toBe(2);
    expect(open.tasks.map((t) => t.taskId)).toEqual([2, 1]);
    expect(await tk.dispatch('clear_ongoing_task', {})).toMatchObject({ taskId: 2, status: 'done' });
    expect(
      await tk.dispatch('clear_ongoing_task', {
        taskId: 1,
        outcome: 'cancelled',
        reason: 'customer withdrew',
      }),
    ).toMatchObject({
      taskId: 1,
      status: 'cancelled',
      reason: 'customer withdrew',
    });
    expect(tk.plan.byNum(1)!.note).toBe('customer withdrew');
    expect(await tk.dispatch('get_ongoing_task')).toEqual({ count: 0, tasks: [] });
    expect(renderPlan(tk.plan, { format: 'open-tasks' })).toBe('');
  });

  it('creates a new task for a new goal and keeps wakeAt to waiting statuses', async () => {
    const { tk } = conversation();
    await tk.dispatch('set_ongoing_task', { task: 'A', status: 'in_progress' });
    expect(await tk.dispatch('set_ongoing_task', { task: 'B', status: 'pending' })).toMatchObject({
      created: true,
      taskId: 2,
    });
    const wake = await refused(
      tk,
      'set_ongoing_task',
      { task: 'A', status: 'in_progress', wakeAt: '2026-12-04T09:00:00Z' },
      'invalid_transition',
    );
    expect(wake.message).toContain('wakeAt only applies to the waiting_user and waiting_external statuses');
    await tk.dispatch('set_ongoing_task', {
      task: 'A',
      status: 'waiting_user',
      wakeAt: '2026-12-04T09:00:00Z',
    });
    // Leaving the waiting status drops the wake time.
    expect(
      await tk.dispatch('set_ongoing_task', { task: 'A', status: 'in_progress', taskId: 1 }),
    ).toMatchObject({ wakeAt: null });
  });

  it('refuses unknown ids, closed tasks and bad statuses with what is valid', async () => {
    const { tk } = conversation();
    await refused(tk, 'clear_ongoing_task', {}, 'not_found');
    await tk.dispatch('set_ongoing_task', { task: 'A', status: 'in_progress' });
    await tk.dispatch('set_ongoing_task', { task: 'B', status: 'done' });
    expect((await refused(tk, 'clear_ongoing_task', { taskId: 7 }, 'not_found')).message).toBe(
      'There is no task 7. Known tasks: 1 (A), 2 (B).',
    );
    expect((await refused(tk, 'clear_ongoing_task', { taskId: 2 }, 'invalid_transition')).message).toBe(
      'Task 2 is already closed (done). Open tasks: 1 (A).',
    );
    const outcome = await refused(tk, 'clear_ongoing_task', { outcome: 'won' }, 'invalid_argument');
    expect(outcome.message).toContain('expected one of "done"|"failed"|"cancelled"');
    const step = await refused(
      tk,
      'set_ongoing_task',
      { task: 'A', status: 'in_progress', steps: [{ title: 'x', status: 'waiting_user' }] },
      'invalid_argument',
    );
    expect(step.message).toContain('steps.0.status');
    await refused(tk, 'set_ongoing_task', { task: 'A' }, 'invalid_argument');
    await refused(
      tk,
      'set_ongoing_task',
      { task: 'A', status: 'waiting_user', wakeAt: 'tomorrow' },
      'invalid_argument',
    );
  });
});

describe('ongoing_task family: a task with open steps', () => {
  it('clearing a task, or setting it done, closes the steps left open as skipped', async () => {
    const { tk } = conversation();
    await tk.dispatch('set_ongoing_task', {
      task: 'Book a table',
      status: 'in_progress',
      steps: [
        { title: 'Find the number', status: 'done' },
        { title: 'Call to book', status: 'pending' },
      ],
    });
    expect(tk.plan.ready().map((t) => t.title)).toEqual(['Call to book']);
    expect(await tk.dispatch('clear_ongoing_task', { reason: 'Booked online' })).toMatchObject({
      taskId: 1,
      status: 'done',
      steps: [
        { title: 'Find the number', status: 'done' },
        { title: 'Call to book', status: 'skipped' },
      ],
    });

    await tk.dispatch('set_ongoing_task', {
      task: 'Renew the passport',
      status: 'in_progress',
      steps: [{ title: 'Take a photo', status: 'pending' }],
    });
    // Done with its step still listed as pending: the close wins, as for any close.
    expect(
      await tk.dispatch('set_ongoing_task', {
        task: 'Renew the passport',
        status: 'done',
        steps: [
          { title: 'Take a photo', status: 'pending' },
          { title: 'Post the form', status: 'pending' },
        ],
      }),
    ).toMatchObject({
      task: 'Renew the passport',
      status: 'done',
      steps: [
        { title: 'Take a photo', status: 'skipped' },
        { title: 'Post the form', status: 'skipped' },
      ],
    });
    expect(tk.plan.list({ state: 'open' })).toEqual([]);
  });

  it('refuses a reason that would push the note past its limit, before writing', async () => {
    const { tk } = conversation();
    await tk.dispatch('set_ongoing_task', { task: 'Long one', status: 'in_progress' });
    const [task] = tk.plan.list();
    tk.plan.update(task!.id, { note: 'n'.repeat(19_990) });
    const error = await refused(tk, 'clear_ongoing_task', { reason: 'because it is done now' }, 'limit');
    expect(error.message).toBe(
      "Task 1's note would be 20013 characters with this reason; a note holds at most 20000. Give a shorter reason.",
    );
  });
});
