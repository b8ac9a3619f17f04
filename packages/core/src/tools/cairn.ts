// The native tool family: a whole plan (tasks, nested steps, dependencies between them) in one call, partial
// updates of many tasks in one call, and reads that say why a task is blocked. Speaks the plan's string ids,
// which never change, unlike integer aliases.
import * as z from 'zod/mini';
import type { ClaimResult } from '../claims.js';
import { CairnError, withContext } from '../errors.js';
import type { BlockedTask, Plan, TaskUpdate } from '../plan.js';
import {
  ContextSchema,
  type MoveTarget,
  type Status,
  StatusSchema,
  TaskIdSchema,
  type TaskInput,
  type TaskPatch,
  TaskPatchSchema,
  type TaskSnapshot,
  TitleSchema,
} from '../schema.js';
import { searchTasks } from '../search.js';
import { watchSkippedSteps } from '../skipped-steps.js';
import { markParsed } from '../validate.js';
import { parameters } from './parameters/cairn.js';
import { about, bounded, type ToolFamily, toolSpec } from './tool.js';

const patch = TaskPatchSchema.shape;
const Id = TaskIdSchema;
const Title = TitleSchema;
const Key = z.string().check(z.minLength(1), z.maxLength(64));

// The enum lists the statuses; the words say only what it cannot: which are open, and where skipped goes.
const STATUS_HELP =
  'pending, in_progress and waiting_* are open, the rest closed; skipped is for steps only.';

export const fields = {
  status: about(z.optional(StatusSchema), STATUS_HELP),
  activeForm: about(
    patch.activeForm,
    'Present-continuous form shown while in progress, e.g. "Writing tests"; null clears it.',
  ),
  nextStep: about(patch.nextStep, 'The next concrete action; null clears it.'),
  note: about(patch.note, 'Free-text note (replaces the previous note).'),
  context: about(
    z.optional(ContextSchema),
    'Scratch data (ids, dates, choices), merged key by key into what is there; a null value deletes a key.',
  ),
  wakeAt: about(
    patch.wakeAt,
    'ISO 8601 time to resume a waiting_user / waiting_external task; null clears it.',
  ),
  assignee: about(patch.assignee, 'Who works on it: "agent:<name>" or "user:<name>"; null to unassign.'),
};

export const Step = z.union([
  about(Title, 'A step title'),
  // A step's fields mean what a task's do, described once there: repeating it costs every model call.
  z.strictObject({
    title: Title,
    key: z.optional(Key),
    status: z.optional(StatusSchema),
    activeForm: patch.activeForm,
    note: patch.note,
    blockedBy: z.optional(bounded(Id, 0, 100)),
  }),
]);
type StepArg = z.output<typeof Step>;

const NewTask = z.strictObject({
  title: about(Title, 'What the task is, imperative: "Write the migration".'),
  key: about(
    z.optional(Key),
    'A name for this task within this call, so other tasks of the call can name it in blockedBy or parent.',
  ),
  parent: about(z.optional(Id), 'Make this a step of that task: an existing id, or a key from this call.'),
  after: about(
    z.optional(z.nullable(Id)),
    'Place after this sibling id; null puts it first; omitted appends.',
  ),
  blockedBy: about(z.optional(bounded(Id, 0, 100)), 'Ids or keys of tasks that must finish first.'),
  steps: about(z.optional(bounded(Step, 0, 200)), 'Its steps in order: titles, or objects with a title.'),
  ...fields,
});
export type NewTaskArg = z.output<typeof NewTask>;

const Update = z.strictObject({
  id: about(Id, 'The task to change.'),
  title: patch.title,
  ...fields,
  supersededBy: about(patch.supersededBy, 'Id of a newer task that replaces this one; null clears it.'),
  addBlockedBy: about(patch.addBlockedBy, 'Ids of tasks this one must now wait for.'),
  removeBlockedBy: about(patch.removeBlockedBy, 'Ids of tasks it no longer waits for.'),
  addSteps: about(z.optional(bounded(Step, 0, 200)), 'Steps to append to this task.'),
  parent: about(z.optional(z.nullable(Id)), 'Move under this task (null: to the top level).'),
  after: about(z.optional(z.nullable(Id)), 'Move after this sibling (null: first).'),
});
export type UpdateArg = z.output<typeof Update>;

/** The most tasks one update_tasks call changes, and the most hits one search returns (the compact tools too). */
export const MAX_UPDATES = 100;
export const MAX_SEARCH_HITS = 100;

export const VIEWS = ['ready', 'blocked', 'open', 'closed', 'all'] as const;

export const addTasks = toolSpec({
  name: 'add_tasks',
  parameters: parameters.add_tasks,
  description:
    'Add tasks to the shared plan: one, or a whole plan at once, with nested steps and dependencies. Tasks of ' +
    'one call refer to each other by `key` (in blockedBy or parent). Returns the new ids.',
  input: z.strictObject({ tasks: about(bounded(NewTask, 1, 200), 'The tasks to add, in order.') }),
  run({ tasks }, { plan }) {
    const { inputs, keyed } = toInputs(tasks);
    const created = plan.addMany(markParsed(inputs));
    const keys: Record<string, string> = {};
    const added = created.map((task, i) => describeAdded(plan, keyed, keys, inputs[i]!, task));
    return Object.keys(keys).length > 0 ? { added, keys } : { added };
  },
});

/** One added task as add_tasks returns it (with its steps); records the id of each `key` the call used. */
function describeAdded(
  plan: Plan,
  keyed: ReadonlySet<string>,
  keys: Record<string, string>,
  input: TaskInput,
  task: TaskSnapshot,
): Record<string, unknown> {
  if (input.key !== undefined && keyed.has(input.key)) keys[input.key] = task.id;
  const steps = plan.children(task.id);
  return compact(
    {
      blockedBy: task.blockedBy.length > 0 ? task.blockedBy : undefined,
      steps:
        steps.length > 0
          ? steps.map((s, i) => describeAdded(plan, keyed, keys, input.steps?.[i] ?? { title: '' }, s))
          : undefined,
    },
    brief(task),
  );
}

/** At most this many tasks in `nowReady`; `moreReady` counts the rest (list_tasks pages through them). */
const NOW_READY_LIMIT = 50;

export const updateTasks = toolSpec({
  name: 'update_tasks',
  parameters: parameters.update_tasks,
  description:
    'Change some fields of one or more tasks; fields you leave out stay as they are, so marking a task done is ' +
    '{"updates":[{"id":"…","status":"done"}]}. Closing a task skips its open steps. All updates apply, or none. ' +
    'Returns the tasks that became ready.',
  input: z.strictObject({
    updates: about(bounded(Update, 1, MAX_UPDATES), 'One entry per task to change.'),
  }),
  run({ updates }, { plan, actor }) {
    const ops = updates.map(toUpdate);
    const affected = affectedBy(
      plan,
      updates.map((u) => u.id),
    );
    const readyBefore = new Set(affected.filter((id) => plan.isReady(id, { actor })));
    const named = new Set(updates.map((u) => u.id));
    const skipped = new Map([...named].map((id) => [id, watchSkippedSteps(plan, id)]));
    const stepsAdded = new Map<string, string[]>();
    // One task twice in a call is two changes of it, applied in turn.
    for (const [i, result] of plan.updateMany(ops, { repeats: 'in_turn' }).entries()) {
      stepsAdded.set(
        updates[i]!.id,
        result.stepsAdded.map((s) => s.id),
      );
    }
    const touched = new Set([...updates.map((u) => u.id), ...[...stepsAdded.values()].flat()]);
    const updated = [...named].map((id) => {
      const steps = stepsAdded.get(id) ?? [];
      // Open steps its close skipped, unless the call gave them a status itself.
      const skippedSteps =
        skipped
          .get(id)?.()
          .filter((s) => !named.has(s.id)) ?? [];
      return compact(
        {
          stepsAdded: steps.length > 0 ? steps.map((s) => brief(plan.require(s))) : undefined,
          skippedSteps: skippedSteps.length > 0 ? skippedSteps : undefined,
        },
        brief(plan.require(id)),
      );
    });
    // Field changes leave every task's parent, steps and dependents where they were: the tasks affected before
    // are the ones affected now. A move or new steps change the tree, so the walk runs again.
    const reshaped = ops.some((op) => op.move !== undefined || op.addSteps !== undefined);
    const ready = (reshaped ? affectedBy(plan, [...touched]) : affected).filter(
      (id) => !touched.has(id) && !readyBefore.has(id) && plan.isReady(id, { actor }),
    );
    // Bounded like every list a model reads: closing one blocker of thousands must not flood its context.
    const nowReady = ready.slice(0, NOW_READY_LIMIT).map((id) => brief(plan.require(id)));
    const more = ready.length - nowReady.length;
    return more > 0 ? { updated, nowReady, moreReady: more } : { updated, nowReady };
  },
});

/**
 * The tasks whose readiness an edit of `ids` can change, without scanning the plan: each task's parent (which
 * waits on its open steps), its steps (a step inherits its parent's blocked state; closing a task closes its
 * open steps), and the tasks that wait on any of those, with their steps. In a stable order: per task, its
 * parent, its own subtree, then the dependents in plan order.
 */
function affectedBy(plan: Plan, ids: readonly string[]): string[] {
  const out = new Set<string>();
  // Subtrees walked, with their dependents (true) or without (false): a task reached both ways is walked twice.
  const walked = new Map<string, boolean>();
  const addSubtree = (id: string, withDependents: boolean) => {
    const before = walked.get(id);
    if (before === true || before === withDependents) return;
    walked.set(id, withDependents);
    out.add(id);
    for (const step of plan.children(id)) addSubtree(step.id, withDependents);
    if (withDependents) for (const dependent of plan.dependents(id)) addSubtree(dependent.id, false);
  };
  for (const id of ids) {
    const task = plan.get(id);
    if (!task) continue;
    const parent = plan.effectiveParent(task);
    if (parent !== null) out.add(parent);
    addSubtree(id, true);
  }
  return [...out];
}

export const removeTasks = toolSpec({
  name: 'remove_tasks',
  parameters: parameters.remove_tasks,
  description:
    'Remove tasks with all their steps; other tasks stop waiting on them. To close a task instead, set its ' +
    'status (done, failed, cancelled).',
  annotations: { destructiveHint: true },
  input: z.strictObject({ ids: about(bounded(Id, 1, 200), 'Ids of the tasks to remove.') }),
  run({ ids }, { plan }) {
    for (const id of ids) plan.require(id);
    const titles = new Map(plan.list().map((t) => [t.id, t.title]));
    const removed: string[] = [];
    // Every id exists (checked above) and a removal of an existing task cannot be refused: a batch suffices.
    plan.batch((p) => {
      for (const id of ids) if (p.has(id)) removed.push(...p.remove(id));
    });
    return { removed: removed.map((id) => ({ id, title: titles.get(id) ?? '' })) };
  },
});

export const getTask = toolSpec({
  name: 'get_task',
  parameters: parameters.get_task,
  description:
    'Everything about one task: fields, steps, what it waits on and what waits on it, and why it is blocked.',
  annotations: { readOnlyHint: true },
  input: z.strictObject({ id: about(Id, 'The task id.') }),
  run({ id }, { plan, actor }) {
    const task = plan.require(id);
    const blocked = plan.blockedTask(id);
    const dependents = plan.dependents(id);
    const steps = (parent: string): unknown[] =>
      plan.children(parent).map((s) => {
        const inner = steps(s.id);
        return compact({ steps: inner.length > 0 ? inner : undefined }, brief(s));
      });
    const stepList = steps(id);
    return {
      task: compact({
        id: task.id,
        title: task.title,
        status: task.status,
        ready: plan.isReady(id, { actor }),
        blocked: blocked ? why(plan, blocked) : undefined,
        parent: plan.effectiveParent(task) ?? undefined,
        activeForm: task.activeForm,
        nextStep: task.nextStep,
        note: task.note || undefined,
        context: Object.keys(task.context).length > 0 ? task.context : undefined,
        wakeAt: task.wakeAt,
        assignee: task.assignee,
        supersededBy: task.supersededBy,
        blockedBy: task.blockedBy.length > 0 ? task.blockedBy.map((b) => brief(plan.require(b))) : undefined,
        blocks: dependents.length > 0 ? dependents.map(brief) : undefined,
        steps: stepList.length > 0 ? stepList : undefined,
        createdBy: task.createdBy,
        createdAt: new Date(task.createdAt).toISOString(),
        updatedBy: task.updatedBy,
        updatedAt: new Date(task.updatedAt).toISOString(),
      }),
    };
  },
});

export const listTasks = toolSpec({
  name: 'list_tasks',
  parameters: parameters.list_tasks,
  description:
    'List tasks (steps included, in plan order). view: ready (what you can start now; the default), blocked ' +
    '(with the reason and what each waits on), open, closed or all. Returns at most `limit` tasks, with `count` ' +
    'for the whole view and `more` for those left after this page; `offset` pages on.',
  annotations: { readOnlyHint: true },
  input: z.strictObject({
    view: about(z.optional(z.enum(VIEWS)), 'Which tasks: ready (default), blocked, open, closed, all.'),
    assignee: about(
      z.optional(z.string().check(z.minLength(1), z.maxLength(120))),
      'Only tasks assigned to this actor.',
    ),
    limit: about(z.optional(z.int().check(z.minimum(1), z.maximum(500))), 'At most this many (default 100).'),
    offset: about(
      z.optional(z.int().check(z.minimum(0))),
      'Skip this many first (default 0); the next page starts at offset + the tasks returned.',
    ),
  }),
  run({ view = 'ready', assignee, limit = 100, offset = 0 }, { plan, actor }) {
    let tasks: TaskSnapshot[];
    if (view === 'ready') tasks = plan.ready({ actor });
    else if (view === 'blocked') tasks = plan.blocked().map((b) => b.task);
    // `view` was parsed as one of the plan's states: the filter is not parsed again.
    else tasks = plan.list(markParsed({ state: view }));
    if (assignee !== undefined) tasks = tasks.filter((t) => t.assignee === assignee);
    const page = tasks.slice(offset, offset + limit);
    const entries = page.map((task) => {
      // Ready and closed tasks are never blocked; only the page's tasks are asked.
      const b = view === 'ready' || view === 'closed' ? undefined : plan.blockedTask(task.id);
      return compact(
        {
          parent: plan.effectiveParent(task),
          nextStep: task.nextStep,
          wakeAt: task.wakeAt,
          blocked: b ? why(plan, b) : undefined,
        },
        brief(task),
      );
    });
    const more = tasks.length - offset - page.length;
    return { view, count: tasks.length, tasks: entries, ...(more > 0 ? { more } : {}) };
  },
});

export const searchTool = toolSpec({
  name: 'search_tasks',
  parameters: parameters.search_tasks,
  description:
    'Find tasks by keywords in their title, next step, note or context, closed ones included: every word must ' +
    'match the start of a word; exact and whole-word matches come first. count is the number of matches.',
  annotations: { readOnlyHint: true },
  input: z.strictObject({
    query: about(
      z.string().check(z.trim(), z.minLength(1, 'give at least one keyword'), z.maxLength(500)),
      'Keywords.',
    ),
    state: about(z.optional(z.enum(['all', 'open', 'closed'])), 'Which tasks to search (default all).'),
    limit: about(
      z.optional(z.int().check(z.minimum(1), z.maximum(MAX_SEARCH_HITS))),
      'At most this many (default 20).',
    ),
  }),
  run({ query, state = 'all', limit = 20 }, { plan }) {
    // count is every match, tasks the best `limit` of them.
    const hits = searchTasks(plan, query, { state, limit: Number.MAX_SAFE_INTEGER });
    return {
      query,
      count: hits.length,
      tasks: hits.slice(0, limit).map((h) => compact({ matched: h.fields }, brief(h.task))),
    };
  },
});

// Claims go through the plan's arbiter (the sync server when connected), so when several agents ask for the
// same task exactly one is told it won; the others are told who holds it.
export const claimTool = toolSpec({
  name: 'claim',
  parameters: parameters.claim,
  description:
    'Claim a task before working on it: you become its assignee and it goes in_progress. If someone else holds ' +
    'it, outcome is "lost" and holder says who: pick another task. Offline, outcome is "tentative" until the ' +
    'server confirms. Claiming a task you hold renews your claim.',
  input: z.strictObject({ id: about(Id, 'The task to claim.') }),
  async run({ id }, { plan }) {
    return claimed(plan, await plan.claim(id));
  },
});

export const claimNextTool = toolSpec({
  name: 'claim_next',
  parameters: parameters.claim_next,
  description:
    'Claim the first ready task nobody holds (in plan order) and get it back; outcome "none" when no task is ' +
    'ready. The usual way for one of several agents to pick up work.',
  input: z.strictObject({
    parent: about(
      z.optional(z.nullable(Id)),
      'Only steps of this task; null: only top-level tasks; omitted: any task.',
    ),
  }),
  async run({ parent }, { plan }) {
    return claimed(plan, await plan.claimNext(parent === undefined ? {} : { parent }));
  },
});

export const releaseTool = toolSpec({
  name: 'release',
  parameters: parameters.release,
  description:
    'Give back a task you hold without finishing it: no assignee, and pending again if it was in progress, ' +
    'so another agent can claim it.',
  input: z.strictObject({ id: about(Id, 'The task to release.') }),
  async run({ id }, { plan }) {
    return claimed(plan, await plan.release(id));
  },
});

export const handOffTool = toolSpec({
  name: 'hand_off',
  parameters: parameters.hand_off,
  description: 'Hand a task you hold (or nobody holds) to someone else, e.g. "user:ann" or "agent:reviewer".',
  input: z.strictObject({
    id: about(Id, 'The task to hand off.'),
    to: about(
      z.string().check(z.minLength(1), z.maxLength(120)),
      'Who gets it: "agent:<name>" or "user:<name>".',
    ),
  }),
  async run({ id, to }, { plan }) {
    return claimed(plan, await plan.handOff(id, to));
  },
});

/** The `cairn` family: Cairn's own tools, tasks named by id (docs/TOOLS.md). */
export const cairnFamily: ToolFamily = {
  name: 'cairn',
  ids: 'id',
  tools: [
    addTasks,
    updateTasks,
    removeTasks,
    getTask,
    listTasks,
    searchTool,
    claimTool,
    claimNextTool,
    releaseTool,
    handOffTool,
  ],
};

/** A claim's result as a tool result: what happened, who holds the task, and the task itself. */
function claimed(plan: Plan, result: ClaimResult): Record<string, unknown> {
  const task = result.taskId ? plan.get(result.taskId) : undefined;
  return {
    outcome: result.outcome,
    holder: result.holder,
    arbitrated: result.arbitrated,
    message: result.message,
    ...(task ? { task: brief(task) } : result.taskId ? { task: { id: result.taskId } } : {}),
  };
}

// ---------------------------------------------------------------- mapping

type Brief = { id: string; title: string; status: Status; assignee?: string };

/** A task as results name it: id, title, status, and who holds it if anyone. */
function brief(task: TaskSnapshot): Brief {
  const out: Brief = { id: task.id, title: task.title, status: task.status };
  if (task.assignee) out.assignee = task.assignee;
  return out;
}

function why(plan: Plan, blocked: BlockedTask): Record<string, unknown> {
  const names = (ids: string[]) => ids.map((id) => ({ id, title: plan.get(id)?.title ?? '' }));
  switch (blocked.reason) {
    case 'cycle':
      return { reason: 'cycle', cycle: names(blocked.cycle ?? []) };
    case 'parent_blocked':
      return { reason: 'parent_blocked', parent: names(blocked.blockedBy)[0] };
    default:
      return { reason: blocked.reason, waitingOn: names(blocked.blockedBy) };
  }
}

/**
 * Copies onto `target` the fields that carry something (not null or undefined), so a result costs only the
 * tokens that matter. Field by field on purpose: in V8 an object spread followed by more fields takes a slow
 * path (one to three µs an object), which was most of the cost of listing 100 tasks.
 */
function compact(
  fields: Record<string, unknown>,
  target: Record<string, unknown> = {},
): Record<string, unknown> {
  for (const key in fields) {
    const value = fields[key];
    if (value !== null && value !== undefined) target[key] = value;
  }
  return target;
}

function stepInput(step: StepArg): TaskInput {
  if (typeof step === 'string') return { title: step };
  const { blockedBy, ...rest } = step;
  return { ...rest, ...(blockedBy ? { blockedBy } : {}) };
}

/**
 * Turns the call's flat list (where `parent` may be a key of the same call) into nested TaskInputs, so
 * plan.addMany creates everything in one validated transaction.
 */
function toInputs(tasks: NewTaskArg[]): { inputs: TaskInput[]; keyed: Set<string> } {
  const keyed = new Set<string>();
  const byKey = new Map<string, { arg: NewTaskArg; input: TaskInput }>();
  const nodes = tasks.map((arg) => {
    const { parent, steps, context, ...rest } = arg;
    const input: TaskInput = {
      ...rest,
      ...(context ? { context } : {}),
      ...(steps ? { steps: steps.map(stepInput) } : {}),
    };
    if (arg.key !== undefined) {
      if (byKey.has(arg.key)) {
        throw new CairnError('invalid_argument', `The key "${arg.key}" is used by two tasks of this call.`);
      }
      byKey.set(arg.key, { arg, input });
    }
    return { arg, input };
  });
  for (const node of nodes) {
    if (node.arg.key !== undefined) keyed.add(node.arg.key);
    for (const step of node.input.steps ?? []) if (step.key !== undefined) keyed.add(step.key);
  }
  const roots: TaskInput[] = [];
  for (const { arg, input } of nodes) {
    const parentKey = arg.parent;
    const host = parentKey === undefined ? undefined : byKey.get(parentKey);
    if (!host) {
      if (parentKey !== undefined) input.parent = parentKey;
      roots.push(input);
      continue;
    }
    // Refuse a ring of parents (a is b's parent and b is a's), which would never reach the top level.
    for (let at: NewTaskArg | undefined = host.arg, hops = 0; at?.parent !== undefined; hops++) {
      if (at.parent === arg.key || hops > tasks.length) {
        throw new CairnError(
          'cycle',
          `The parents of "${arg.title}" lead back to it; a task cannot be its own step.`,
        );
      }
      at = byKey.get(at.parent)?.arg;
    }
    host.input.steps = [...(host.input.steps ?? []), input];
  }
  return { inputs: roots, keyed };
}

/**
 * One entry of update_tasks as a plan update: its fields, appended steps and a move. Built from arguments the
 * tool's schema already parsed (with the plan's own field schemas), so the plan does not parse them again.
 */
function toUpdate(update: UpdateArg, index: number): TaskUpdate {
  const { id, addSteps, parent, after, ...fields } = update;
  const op: TaskUpdate = { id };
  const patch: TaskPatch = fields;
  if (Object.keys(patch).length > 0) op.patch = markParsed(patch);
  if (addSteps?.length) op.addSteps = markParsed(addSteps.map(stepInput));
  if (parent !== undefined || after !== undefined) {
    const move: MoveTarget = {};
    if (parent !== undefined) move.parent = parent;
    if (after !== undefined) move.after = after;
    op.move = markParsed(move);
  }
  if (!op.patch && !op.addSteps && !op.move) {
    const message =
      'Nothing to change: give at least one field besides id (status, title, nextStep, note, context, ...).';
    throw withContext(new CairnError('invalid_argument', message), `updates[${index}] (task ${id})`);
  }
  return op;
}
