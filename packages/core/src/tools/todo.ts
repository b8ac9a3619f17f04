// Seed 003's `todo` tool (create / update / list with content, activeForm, status and the response counts), and
// Claude Code's `TodoWrite` shape. Both send the whole list; it is reconciled with the plan's top-level tasks
// by content, so unchanged items keep their ids and a status change is one field write.
import * as z from 'zod/mini';
import type { Plan } from '../plan.js';
import { reconcileList } from '../reconcile.js';
import { isOpenStatus, type Status, type TaskSnapshot, TEXT_LIMITS, TitleSchema } from '../schema.js';
import { markParsed } from '../validate.js';
import { parameters } from './parameters/todo.js';
import { about, bounded, type ToolFamily, toolSpec } from './tool.js';

const TODO_STATUSES = ['pending', 'in_progress', 'completed'] as const;
type TodoStatus = (typeof TODO_STATUSES)[number];

const TO_PLAN: Record<TodoStatus, Status> = {
  pending: 'pending',
  in_progress: 'in_progress',
  completed: 'done',
};

/** Waiting tasks are under way (in_progress); every closed status reads as completed. */
export function toTodoStatus(status: Status): TodoStatus {
  if (status === 'pending') return 'pending';
  return isOpenStatus(status) ? 'in_progress' : 'completed';
}

interface TodoItem {
  content: string;
  activeForm: string;
  status: TodoStatus;
}

// The item's rules are the task's (a title; an activeForm, here required and not blank), so what is written
// from them is not parsed again.
const Item = z.strictObject({
  content: about(TitleSchema, "Imperative description: 'Run tests', 'Build project'"),
  activeForm: about(
    z.string().check(z.trim(), z.minLength(1), z.maxLength(TEXT_LIMITS.activeForm)),
    "Present continuous: 'Running tests', 'Building project'",
  ),
  status: about(z.enum(TODO_STATUSES), 'Current status of this todo item'),
});

const todo = toolSpec({
  name: 'todo',
  parameters: parameters.todo,
  description: [
    'Manage your todo list for tracking complex multi-step tasks.',
    '',
    'Use this tool to:',
    '- Create a todo list when starting complex multi-step work',
    '- Update the list as you complete each step',
    '- Stay accountable and focused through long turns',
    '',
    'Todo items have:',
    '- content: Imperative description (e.g., "Run tests", "Build project")',
    '- activeForm: Present continuous (e.g., "Running tests", "Building project")',
    '- status: "pending" | "in_progress" | "completed"',
    '',
    'Recommended pattern:',
    '1. Create list when you start complex multi-step work',
    '2. Update after completing each step',
    '3. Keep exactly ONE item as "in_progress" at a time',
    '4. Mark items "completed" immediately after finishing',
  ].join('\n'),
  input: z
    .strictObject({
      action: about(
        z.enum(['create', 'update', 'list']),
        'Action to perform: create (replace all), update (replace all), list (read current)',
      ),
      todos: about(
        z.optional(bounded(Item, 0, 500)),
        'List of todos (required for create/update, ignored for list)',
      ),
    })
    .check(
      z.refine((args) => args.action === 'list' || args.todos !== undefined, {
        message: 'todos is required for create and update (the whole list, with every item)',
        path: ['todos'],
      }),
    ),
  run({ action, todos }, { plan }) {
    if (action === 'list') {
      const items = currentTodos(plan);
      return { status: 'listed', count: items.length, todos: items };
    }
    const items = write(plan, todos!);
    return {
      status: action === 'create' ? 'created' : 'updated',
      count: items.length,
      pending: items.filter((t) => t.status === 'pending').length,
      in_progress: items.filter((t) => t.status === 'in_progress').length,
      completed: items.filter((t) => t.status === 'completed').length,
      todos: items,
    };
  },
});

const todoWrite = toolSpec({
  name: 'TodoWrite',
  parameters: parameters.TodoWrite,
  description:
    'Create and manage a structured task list for your current session: send the complete list every time, ' +
    'each item with content (imperative), activeForm (present continuous) and status (pending, in_progress, ' +
    'completed). Keep exactly one item in_progress, and mark items completed as soon as they are done.',
  input: z.strictObject({ todos: about(bounded(Item, 0, 500), 'The updated todo list') }),
  run({ todos }, { plan }) {
    const oldTodos = currentTodos(plan);
    const newTodos = write(plan, todos);
    return {
      message:
        'Todos have been modified successfully. Ensure that you continue to use the todo list to track your ' +
        'progress. Please proceed with the current tasks if applicable',
      oldTodos,
      newTodos,
    };
  },
});

/** The `todo` family: Claude Code's todo list (`todo`, `TodoWrite`), written whole (docs/TOOLS.md). */
export const todoFamily: ToolFamily = { name: 'todo', ids: 'num', tools: [todo, todoWrite] };

function write(plan: Plan, todos: readonly TodoItem[]): TodoItem[] {
  const { tasks } = reconcileList(
    plan,
    markParsed(todos.map((t) => ({ title: t.content, activeForm: t.activeForm, status: TO_PLAN[t.status] }))),
    { parent: null, sameStatus: (current, wanted) => toTodoStatus(current) === toTodoStatus(wanted) },
  );
  return tasks.map(asTodo);
}

function currentTodos(plan: Plan): TodoItem[] {
  return plan.children(null).map(asTodo);
}

function asTodo(task: TaskSnapshot): TodoItem {
  return {
    content: task.title,
    activeForm: task.activeForm ?? task.title,
    status: toTodoStatus(task.status),
  };
}
