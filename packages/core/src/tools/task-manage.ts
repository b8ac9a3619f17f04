// Seed 000's `task_manage` tool: one tool, an `action`, integer ids, and the statuses pending / active / done
// mapped onto the plan's. Every result carries the current list, as the seed's tool returns it.
import * as z from 'zod/mini';
import { CairnError } from '../errors.js';
import type { Plan } from '../plan.js';
import { isOpenStatus, type Status, type TaskPatch, type TaskSnapshot, TEXT_LIMITS } from '../schema.js';
import { markParsed } from '../validate.js';
import { taskByNum, unixSeconds } from './aliases.js';
import { parameters } from './parameters/task-manage.js';
import { type ToolFamily, toolSpec } from './tool.js';

const ACTIONS = ['list', 'add', 'update', 'remove', 'clear', 'replace'] as const;
const SEED_STATUSES = ['pending', 'active', 'done'] as const;
type SeedStatus = (typeof SEED_STATUSES)[number];

/** What each action takes; anything else given with it is refused, so a misplaced field is never ignored. */
const ACTION_FIELDS: Record<(typeof ACTIONS)[number], { required: string[]; optional: string[] }> = {
  list: { required: [], optional: [] },
  add: { required: ['text'], optional: ['status'] },
  update: { required: ['id'], optional: ['text', 'status'] },
  remove: { required: ['id'], optional: [] },
  clear: { required: [], optional: ['status'] },
  replace: { required: ['tasks'], optional: [] },
};

const TO_PLAN: Record<SeedStatus, Status> = { pending: 'pending', active: 'in_progress', done: 'done' };

/** The plan's statuses in the seed's three: waiting counts as active (started), every closed one as done. */
export function toSeedStatus(status: Status): SeedStatus {
  if (status === 'pending') return 'pending';
  return isOpenStatus(status) ? 'active' : 'done';
}

const taskManage = toolSpec({
  name: 'task_manage',
  parameters: parameters.task_manage,
  description:
    'Manage the agent task list - short-term working memory for tracking steps in a plan. Tasks appear in ' +
    'your context on every message.',
  annotations: { destructiveHint: true },
  input: z.strictObject({
    action: z.enum(ACTIONS),
    text: z.optional(z.string()),
    id: z.optional(z.int()),
    status: z.optional(z.enum(SEED_STATUSES)),
    tasks: z.optional(z.array(z.string())),
  }),
  run(args, { plan }) {
    const { action } = args;
    checkFields(args);
    switch (action) {
      case 'list':
        return result(plan, action);
      case 'add': {
        // checkFields held the text to a title's rules, so the plan does not parse it again.
        const task = plan.add(
          markParsed({ title: args.text!.trim(), status: TO_PLAN[args.status ?? 'pending'] }),
        );
        return result(plan, action, { task: view(plan, task) });
      }
      case 'update': {
        const task = taskByNum(plan, args.id!);
        const status =
          args.status !== undefined && toSeedStatus(task.status) !== args.status
            ? TO_PLAN[args.status]
            : undefined;
        const patch: TaskPatch = {
          ...(args.text !== undefined ? { title: args.text.trim() } : {}),
          ...(status ? { status } : {}),
        };
        const updated = plan.update(task.id, markParsed(patch));
        return result(plan, action, { task: view(plan, updated) });
      }
      case 'remove': {
        const task = taskByNum(plan, args.id!);
        const removed = plan.remove(task.id).length;
        return result(plan, action, { removed });
      }
      case 'clear': {
        const doomed = plan
          .list()
          .filter((t) => args.status === undefined || toSeedStatus(t.status) === args.status)
          .map((t) => t.id);
        let removed = 0;
        // Removing a task that exists cannot be refused, so a plain batch is all or nothing here.
        plan.batch((p) => {
          removed = 0;
          for (const id of doomed) if (p.has(id)) removed += p.remove(id).length;
        });
        return result(plan, action, { removed });
      }
      case 'replace': {
        plan.replace(markParsed(args.tasks!.map((title) => ({ title: title.trim() }))));
        return result(plan, action);
      }
    }
  },
});

/** The `task_manage` family: one tool with an action per change, tasks named by number (docs/TOOLS.md). */
export const taskManageFamily: ToolFamily = { name: 'task_manage', ids: 'num', tools: [taskManage] };

function checkFields(args: Record<string, unknown> & { action: (typeof ACTIONS)[number] }): void {
  const rule = ACTION_FIELDS[args.action];
  const missing = rule.required.filter((f) => args[f] === undefined);
  const extra = Object.keys(args).filter(
    (k) => k !== 'action' && !rule.required.includes(k) && !rule.optional.includes(k),
  );
  const takes = [...rule.required, ...rule.optional.map((f) => `${f}?`)];
  const signature = takes.length > 0 ? `takes ${takes.join(', ')}` : 'takes no other fields';
  if (missing.length > 0 || extra.length > 0) {
    const problems = [
      ...(missing.length > 0 ? [`needs ${missing.join(', ')}`] : []),
      ...(extra.length > 0 ? [`does not take ${extra.join(', ')}`] : []),
    ];
    throw new CairnError(
      'invalid_argument',
      `Action "${args.action}" ${problems.join(' and ')}; it ${signature}.`,
      {
        action: args.action,
        required: rule.required,
        optional: rule.optional,
      },
    );
  }
  if (args.action === 'update' && args['text'] === undefined && args['status'] === undefined) {
    throw new CairnError('invalid_argument', 'Action "update" needs text or status (or both) besides id.');
  }
  // A task's title rules (schema.ts), said in the seed's words ("text"): what is written is not parsed again.
  const texts =
    typeof args['text'] === 'string' ? [args['text']] : ((args['tasks'] as string[] | undefined) ?? []);
  for (const text of texts) {
    if (text.trim() === '') throw new CairnError('invalid_argument', 'A task text must not be empty.');
    if (text.trim().length > TEXT_LIMITS.title) {
      throw new CairnError('invalid_argument', `A task text has at most ${TEXT_LIMITS.title} characters.`);
    }
  }
}

function view(plan: Plan, task: TaskSnapshot): Record<string, unknown> {
  const parent = plan.effectiveParent(task);
  const status = toSeedStatus(task.status);
  return {
    id: task.num,
    text: task.title,
    status,
    // The seed has three statuses; say which plan status stands behind "active" or "done" when it is another.
    ...(TO_PLAN[status] !== task.status ? { plan_status: task.status } : {}),
    ...(parent !== null ? { parent: plan.get(parent)?.num ?? null } : {}),
    created_at: unixSeconds(task.createdAt),
    updated_at: unixSeconds(task.updatedAt),
  };
}

function result(plan: Plan, action: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { success: true, action, ...extra, tasks: plan.list().map((t) => view(plan, t)) };
}
