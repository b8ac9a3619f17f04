// Seed 001's task numbers: a conversation's tasks are the plan's top-level tasks, numbered 1, 2, 3 in the order
// they were made, so steps (child tasks) do not use up numbers. The ongoing_task tools, the open-tasks block and
// the HTTP task routes all speak these numbers. The plan's own integer aliases (`num`) count steps too.
import type { Plan } from './plan.js';
import { isOpenStatus, type TaskSnapshot } from './schema.js';

export interface TaskNumbers {
  /** The top-level tasks in number order (the first is task 1). */
  readonly tasks: readonly TaskSnapshot[];
  numberOf(id: string): number | undefined;
  byNumber(n: number): TaskSnapshot | undefined;
}

/**
 * The numbers as the plan stands. Creation order is the order of the plan's aliases, which never repeat; a
 * top-level task removed by some other route leaves a gap that the later tasks close up.
 */
export function taskNumbers(plan: Plan): TaskNumbers {
  const tasks = plan.children(null).sort((a, b) => a.num - b.num || a.createdAt - b.createdAt);
  const numbers = new Map(tasks.map((t, i) => [t.id, i + 1]));
  return {
    tasks,
    numberOf: (id) => numbers.get(id),
    byNumber: (n) => (Number.isInteger(n) && n >= 1 ? tasks[n - 1] : undefined),
  };
}

/**
 * The conversation's open tasks, newest first (the later alias first within one millisecond): the order of the
 * open-tasks block, of `get_ongoing_task` and of the tasks learned procedures are matched against.
 */
export function openConversationTasks(source: { children(parent: null): TaskSnapshot[] }): TaskSnapshot[] {
  return source
    .children(null)
    .filter((t) => isOpenStatus(t.status))
    .sort((a, b) => b.createdAt - a.createdAt || b.num - a.num);
}
