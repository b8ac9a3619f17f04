// Seed 001's conversation tasks: set_ongoing_task (create or update, with steps, nextStep, merged context and
// wakeAt for waiting statuses), get_ongoing_task and clear_ongoing_task. A plan is one conversation's scope, so
// its top-level tasks are the conversation's tasks and their child tasks are the steps; task numbers count the
// tasks only (task-numbers.ts), as the open-tasks block shows them.
import * as z from 'zod/mini';
import { CairnError } from '../errors.js';
import type { Plan } from '../plan.js';
import { checkListItems, reconcileList } from '../reconcile.js';
import {
  ContextSchema,
  isOpenStatus,
  isWaitingStatus,
  type Status,
  type TaskInput,
  type TaskPatch,
  TaskPatchSchema,
  type TaskSnapshot,
  TEXT_LIMITS,
  TitleSchema,
} from '../schema.js';
import { watchSkippedSteps } from '../skipped-steps.js';
import { openConversationTasks, type TaskNumbers, taskNumbers } from '../task-numbers.js';
import { markParsed } from '../validate.js';
import { knownTasks } from './aliases.js';
import { parameters } from './parameters/ongoing-task.js';
import { about, bounded, type ToolFamily, toolSpec } from './tool.js';

const GOAL_STATUSES = [
  'pending',
  'in_progress',
  'waiting_user',
  'waiting_external',
  'done',
  'failed',
  'cancelled',
] as const;
const STEP_STATUSES = ['pending', 'in_progress', 'done', 'failed', 'skipped'] as const;
const OUTCOMES = ['done', 'failed', 'cancelled'] as const;
type StepStatus = (typeof STEP_STATUSES)[number];

/** A step's plan status in the seed's step vocabulary: waiting reads as in progress, cancelled as skipped. */
function toStepStatus(status: Status): StepStatus {
  if (status === 'waiting_user' || status === 'waiting_external') return 'in_progress';
  if (status === 'cancelled') return 'skipped';
  return status;
}

const TaskId = about(z.int().check(z.minimum(1)), 'The task to act on (its taskId).');

const setOngoingTask = toolSpec({
  name: 'set_ongoing_task',
  parameters: parameters.set_ongoing_task,
  description:
    'Create or update a task you are in the middle of in this conversation. With taskId it updates that task; ' +
    'without, it updates the open task with the same goal or creates one. steps is the full step list; context ' +
    'is merged into what is there; wakeAt only applies to the waiting_user / waiting_external statuses.',
  input: z.strictObject({
    task: about(TitleSchema, 'The goal, e.g. "Book a table for 4 at Luigi\'s on Friday".'),
    status: about(
      z.enum(GOAL_STATUSES),
      'pending, in_progress, waiting_user, waiting_external (open); done, failed, cancelled (closed).',
    ),
    nextStep: about(TaskPatchSchema.shape.nextStep, 'The next concrete action.'),
    steps: about(
      z.optional(
        bounded(
          z.strictObject({
            title: TitleSchema,
            status: z.enum(STEP_STATUSES),
            note: TaskPatchSchema.shape.note,
          }),
          0,
          200,
        ),
      ),
      'The whole step checklist, in order.',
    ),
    context: about(
      z.optional(ContextSchema),
      'Data collected so far (ids, dates, choices); merged key by key, a null value deletes a key.',
    ),
    wakeAt: about(
      TaskPatchSchema.shape.wakeAt,
      'ISO time to re-activate a waiting task, e.g. 2026-12-04T09:00:00Z.',
    ),
    taskId: z.optional(TaskId),
  }),
  run(args, { plan, now }) {
    const { task: goal, status, steps, taskId } = args;
    if (args.wakeAt && !isWaitingStatus(status)) {
      throw new CairnError(
        'invalid_transition',
        `wakeAt only applies to the waiting_user and waiting_external statuses, and status is ${status}. Set status to one of those, or leave wakeAt out.`,
        { valid: ['waiting_user', 'waiting_external'] },
      );
    }
    const numbers = taskNumbers(plan);
    const target =
      taskId !== undefined
        ? byNumber(numbers, taskId)
        : newestOpen(numbers.tasks.filter((t) => sameGoal(t.title, goal)));
    const fields = {
      ...(args.nextStep !== undefined ? { nextStep: args.nextStep } : {}),
      ...(args.context !== undefined ? { context: args.context } : {}),
      ...(args.wakeAt !== undefined ? { wakeAt: args.wakeAt } : {}),
    };
    // Every field below is the call's, parsed by the tool's schema (the task's own field rules): the plan and the
    // list rewrite do not parse them again.
    const stepItems = steps
      ? markParsed(
          steps.map((s) => ({
            title: s.title,
            status: s.status as Status,
            ...(s.note ? { note: s.note } : {}),
          })),
        )
      : undefined;
    if (!target) {
      const input: TaskInput = { title: goal, status, ...fields, ...(stepItems ? { steps: stepItems } : {}) };
      const created = plan.add(markParsed(input));
      return { created: true, ...ongoing(plan, created, now) };
    }
    if (stepItems) checkListItems(stepItems, target.id);
    const skipped = watchSkippedSteps(plan, target.id);
    plan.batch((p) => {
      // Steps first: closing the task then closes whichever of them are still open, as any close does.
      if (stepItems) {
        reconcileList(p, stepItems, {
          parent: target.id,
          sameStatus: (current, wanted) => toStepStatus(current) === toStepStatus(wanted),
        });
      }
      // The stored wording stays unless the goal itself changed (not merely its case or spacing).
      const patch: TaskPatch = {
        ...(sameGoal(target.title, goal) ? {} : { title: goal }),
        status,
        ...fields,
      };
      p.update(target.id, markParsed(patch));
    });
    // Steps the call itself gave as skipped are its own doing; the rest were skipped by closing the task.
    const given = new Set(stepItems?.filter((s) => s.status === 'skipped').map((s) => s.title));
    const skippedSteps = skipped()
      .filter((s) => !given.has(s.title))
      .map((s) => s.title);
    return {
      created: false,
      ...ongoing(plan, plan.require(target.id), now),
      ...(skippedSteps.length > 0 ? { skippedSteps } : {}),
    };
  },
});

const getOngoingTask = toolSpec({
  name: 'get_ongoing_task',
  parameters: parameters.get_ongoing_task,
  description:
    'List the open tasks in this conversation, newest first, with their steps, next step and wake time.',
  annotations: { readOnlyHint: true },
  input: z.strictObject({}),
  run(_args, { plan, now }) {
    const open = openConversationTasks(plan);
    const numbers = taskNumbers(plan);
    return { count: open.length, tasks: open.map((t) => ongoing(plan, t, now, numbers)) };
  },
});

const clearOngoingTask = toolSpec({
  name: 'clear_ongoing_task',
  parameters: parameters.clear_ongoing_task,
  description:
    'Close the newest open task in this conversation (or taskId) as done (the default), failed or cancelled; ' +
    'its steps still open are closed as skipped.',
  input: z.strictObject({
    outcome: about(z.optional(z.enum(OUTCOMES)), 'How it ended: done (default), failed or cancelled.'),
    reason: about(
      z.optional(z.string().check(z.maxLength(2000))),
      'Why, in a sentence; kept in the task note.',
    ),
    taskId: z.optional(TaskId),
  }),
  run({ outcome = 'done', reason, taskId }, { plan, now }) {
    const open = openConversationTasks(plan);
    let task: TaskSnapshot;
    if (taskId !== undefined) {
      const numbers = taskNumbers(plan);
      task = byNumber(numbers, taskId);
      if (!isOpenStatus(task.status)) {
        const numberOf = (t: TaskSnapshot) => numbers.numberOf(t.id);
        throw new CairnError(
          'invalid_transition',
          `Task ${taskId} is already closed (${task.status}). ${knownTasks(open, 'Open tasks', numberOf)}`,
          { valid: open.map(numberOf) },
        );
      }
    } else {
      const newest = open[0];
      if (!newest) throw new CairnError('not_found', 'There is no open task in this conversation to clear.');
      task = newest;
    }
    const note = reason ? (task.note ? `${task.note}\n${reason}` : reason) : undefined;
    if (note !== undefined && note.length > TEXT_LIMITS.note) {
      throw new CairnError(
        'limit',
        `Task ${taskNumbers(plan).numberOf(task.id) ?? task.id}'s note would be ${note.length} characters with this reason; ` +
          `a note holds at most ${TEXT_LIMITS.note}. Give a shorter reason.`,
        { field: 'note', length: note.length, max: TEXT_LIMITS.note },
      );
    }
    const skipped = watchSkippedSteps(plan, task.id);
    const patch: TaskPatch = { status: outcome, ...(note !== undefined ? { note } : {}) };
    const closed = plan.update(task.id, markParsed(patch));
    const skippedSteps = skipped().map((s) => s.title);
    return {
      ...ongoing(plan, closed, now),
      ...(reason ? { reason } : {}),
      ...(skippedSteps.length > 0 ? { skippedSteps } : {}),
    };
  },
});

/** The `ongoing_task` family: a conversation's tasks and their steps, named by number (docs/TOOLS.md). */
export const ongoingTaskFamily: ToolFamily = {
  name: 'ongoing_task',
  ids: 'num',
  numbers: (plan) => {
    const numbers = taskNumbers(plan);
    return { numberOf: (task) => numbers.numberOf(task.id), byNumber: (n) => numbers.byNumber(n) };
  },
  tools: [setOngoingTask, getOngoingTask, clearOngoingTask],
};

/** The conversation's task `n`, or a `not_found` error listing the numbers there are. */
function byNumber(numbers: TaskNumbers, n: number): TaskSnapshot {
  const task = numbers.byNumber(n);
  if (task) return task;
  const numberOf = (t: TaskSnapshot) => numbers.numberOf(t.id);
  throw new CairnError(
    'not_found',
    `There is no task ${n}. ${knownTasks(numbers.tasks, 'Known tasks', numberOf)}`,
    {
      id: n,
      known: numbers.tasks.slice(0, 50).map(numberOf),
    },
  );
}

/** The same goal, whatever its case and spacing. */
function sameGoal(a: string, b: string): boolean {
  const normal = (s: string) => s.trim().replace(/\s+/g, ' ').toLowerCase();
  return normal(a) === normal(b);
}

function newestOpen(tasks: TaskSnapshot[]): TaskSnapshot | undefined {
  return tasks
    .filter((t) => isOpenStatus(t.status))
    .sort((a, b) => b.createdAt - a.createdAt || b.num - a.num)[0];
}

/** Who last changed it, in the seed's vocabulary (agent, user, wake, auto_close, ...). */
function source(actor: string): string {
  const colon = actor.indexOf(':');
  return colon === -1 ? actor : actor.slice(0, colon);
}

/** A task as the family shows it; `numbers` is the plan's numbering now (pass it in when showing several tasks). */
function ongoing(
  plan: Plan,
  task: TaskSnapshot,
  now: () => number,
  numbers: TaskNumbers = taskNumbers(plan),
): Record<string, unknown> {
  return {
    taskId: numbers.numberOf(task.id) ?? null,
    task: task.title,
    status: task.status,
    steps: plan.children(task.id).map((s) => ({
      title: s.title,
      status: toStepStatus(s.status),
      ...(s.note ? { note: s.note } : {}),
    })),
    nextStep: task.nextStep,
    // What a person wrote from the dashboard (PATCH { status, note }) or a close's reason: the agent reads it here.
    ...(task.note ? { note: task.note } : {}),
    context: task.context,
    wakeAt: task.wakeAt,
    supersededBy: task.supersededBy ? (numbers.numberOf(task.supersededBy) ?? null) : null,
    source: source(task.updatedBy),
    updatedBy: task.updatedBy,
    createdAt: new Date(task.createdAt).toISOString(),
    ageMinutes: Math.max(0, Math.floor((now() - task.createdAt) / 60_000)),
  };
}
