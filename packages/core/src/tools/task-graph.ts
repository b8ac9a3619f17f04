// Seed 004's task graph: create_task(title, blocked_by?), complete_task(task_id), list_ready_tasks(). Integer
// ids, `completed` for done; what is ready is decided by the plan's one dependency rule.
import * as z from 'zod/mini';
import type { Plan } from '../plan.js';
import { type TaskPatch, type TaskSnapshot, TitleSchema } from '../schema.js';
import { markParsed } from '../validate.js';
import { numsOf, taskByNum } from './aliases.js';
import { parameters } from './parameters/task-graph.js';
import { about, bounded, type ToolFamily, toolSpec } from './tool.js';

const TaskId = z.int().check(z.minimum(1));
// The seed's title is a plain string; a task's title rules apply to it all the same (a pipe keeps them out of
// the definition the model reads, and in the one parse of the call).
const Title = z.pipe(z.string(), TitleSchema);
const DONE: TaskPatch = markParsed(Object.freeze({ status: 'done' as const }));

const createTask = toolSpec({
  name: 'create_task',
  parameters: parameters.create_task,
  description:
    'Create a task in the persistent task graph. blocked_by lists the ids of tasks that must be completed first. ' +
    'Returns the new task with its id.',
  input: z.strictObject({
    title: about(Title, 'What the task is.'),
    blocked_by: about(z.optional(bounded(TaskId, 0, 100)), 'Ids of tasks this one waits for.'),
  }),
  run({ title, blocked_by = [] }, { plan }) {
    const blockers = blocked_by.map((num) => taskByNum(plan, num).id);
    return graphTask(plan, plan.add(markParsed({ title, blockedBy: blockers })));
  },
});

const completeTask = toolSpec({
  name: 'complete_task',
  parameters: parameters.complete_task,
  description:
    'Mark a task completed (its open steps, if any, are skipped); tasks waiting only on it become ready.',
  input: z.strictObject({ task_id: about(TaskId, 'The id of the task to complete.') }),
  run({ task_id }, { plan }) {
    const task = taskByNum(plan, task_id);
    if (task.status !== 'done') plan.update(task.id, DONE);
    return `Task ${task_id} completed.`;
  },
});

const listReady = toolSpec({
  name: 'list_ready_tasks',
  parameters: parameters.list_ready_tasks,
  description:
    'List the tasks that are ready: not completed, every task they are blocked by is completed, and none of ' +
    'their steps is open.',
  annotations: { readOnlyHint: true },
  input: z.strictObject({}),
  run(_args, { plan, actor }) {
    return plan.ready({ actor }).map((task) => graphTask(plan, task));
  },
});

/** The `task_graph` family: tasks and their dependencies as a graph (docs/TOOLS.md). */
export const taskGraphFamily: ToolFamily = {
  name: 'task_graph',
  ids: 'num',
  tools: [createTask, completeTask, listReady],
};

/** A task as the seed's TaskManager stores it: `{ id, title, status, blockedBy }`. */
function graphTask(plan: Plan, task: TaskSnapshot): Record<string, unknown> {
  return {
    id: task.num,
    title: task.title,
    status: task.status === 'done' ? 'completed' : task.status,
    blockedBy: numsOf(plan, task.blockedBy).sort((a, b) => a - b),
  };
}
