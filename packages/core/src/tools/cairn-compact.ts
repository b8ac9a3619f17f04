// A compact variant of the native family: the same work in three general tools (read, write, claim) instead of
// ten, so its definitions cost a model about half as many tokens on every call. Each call is passed on whole to
// the native tool that does that work, so results, errors and the one-transaction rule are the native family's.
// Its fields are the native tools' own schemas, so a call is parsed once, by the compact tool: the native tool
// runs on the mapped arguments without parsing them again, and the few rules a native schema adds are checked
// where the mapping is made.
// Offered as the family `cairn_compact` (`createToolkit(plan, { families: ['cairn_compact'] })`).
import * as z from 'zod/mini';
import { CairnError } from '../errors.js';
import { TaskIdSchema, TaskPatchSchema } from '../schema.js';
import {
  addTasks,
  claimNextTool,
  claimTool,
  fields,
  getTask,
  handOffTool,
  listTasks,
  MAX_SEARCH_HITS,
  MAX_UPDATES,
  type NewTaskArg,
  releaseTool,
  removeTasks,
  Step,
  searchTool,
  type UpdateArg,
  updateTasks,
  VIEWS,
} from './cairn.js';
import { parameters } from './parameters/cairn-compact.js';
import { about, bounded, type ToolContext, type ToolFamily, type ToolSpec, toolSpec } from './tool.js';

const Id = TaskIdSchema;
const patch = TaskPatchSchema.shape;

/**
 * Runs a native tool on arguments mapped from a compact call. They are parsed already (by the compact tool's
 * schema, made of the native fields' schemas); the type says they are what the native tool's parse gives.
 */
function delegate<Args>(tool: ToolSpec<Args>, args: Args, ctx: ToolContext): unknown {
  const defined = Object.fromEntries(Object.entries(args as object).filter(([, v]) => v !== undefined));
  return tool.run(defined as Args, ctx);
}

const readTasks = toolSpec({
  name: 'read_tasks',
  parameters: parameters.read_tasks,
  description:
    'Read the plan: with id, everything about one task (steps, what it waits on and why); with query, tasks ' +
    'matching every keyword (closed ones too); else a list by view: ready (what you can start now; the default), ' +
    'blocked, open, closed or all, `limit` at a time with `count` and `more`, `offset` paging on.',
  annotations: { readOnlyHint: true },
  input: z.strictObject({
    id: about(z.optional(Id), 'One task.'),
    query: about(
      z.optional(z.string().check(z.trim(), z.minLength(1, 'give at least one keyword'), z.maxLength(500))),
      'Keywords.',
    ),
    view: z.optional(z.enum(VIEWS)),
    assignee: about(
      z.optional(z.string().check(z.minLength(1), z.maxLength(120))),
      'Only tasks assigned to this actor.',
    ),
    limit: about(z.optional(z.int().check(z.minimum(1), z.maximum(500))), 'Default 100 (20 for a query).'),
    offset: z.optional(z.int().check(z.minimum(0))),
  }),
  run({ id, query, view, assignee, limit, offset }, ctx) {
    if (id !== undefined && query !== undefined) {
      throw new CairnError('invalid_argument', 'Give id (one task) or query (a search), not both.');
    }
    if (id !== undefined) return delegate(getTask, { id }, ctx);
    if (query !== undefined) {
      if (view === 'ready' || view === 'blocked') {
        throw new CairnError(
          'invalid_argument',
          'A query searches open, closed or all tasks; view ready or blocked lists without one.',
        );
      }
      if (limit !== undefined && limit > MAX_SEARCH_HITS) {
        throw new CairnError(
          'invalid_argument',
          `Invalid arguments: limit: a query finds at most ${MAX_SEARCH_HITS} tasks at a time; give a limit from 1 to ${MAX_SEARCH_HITS}.`,
          { valid: { min: 1, max: MAX_SEARCH_HITS } },
        );
      }
      return delegate(searchTool, { query, state: view, limit }, ctx);
    }
    return delegate(listTasks, { view, assignee, limit, offset }, ctx);
  },
});

const Item = z.strictObject({
  id: about(z.optional(Id), 'The task to change or remove; omit to add a task.'),
  remove: about(z.optional(z.literal(true)), 'With id: remove the task and its steps.'),
  title: about(patch.title, 'Imperative: "Write the migration"; required to add.'),
  key: about(
    z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
    'Names a new task so others of this call can use it in blockedBy or parent.',
  ),
  parent: about(z.optional(z.nullable(Id)), 'The task this is a step of (null: top level).'),
  after: about(z.optional(z.nullable(Id)), 'Place after this sibling (null: first).'),
  blockedBy: about(
    z.optional(bounded(Id, 0, 100)),
    'Ids or keys that must finish first (a change adds them).',
  ),
  removeBlockedBy: about(patch.removeBlockedBy, 'Ids it no longer waits for.'),
  steps: about(z.optional(bounded(Step, 0, 200)), 'Steps in order (a change appends them).'),
  ...fields,
  supersededBy: about(patch.supersededBy, 'Id of a newer task that replaces this one.'),
});
type ItemArg = z.output<typeof Item>;

const ADD_ONLY = ['key'] as const;
const CHANGE_ONLY = ['removeBlockedBy', 'supersededBy'] as const;

const writeTasks = toolSpec({
  name: 'write_tasks',
  parameters: parameters.write_tasks,
  description:
    'Add, change or remove tasks. Without id an entry adds a task (with nested steps and dependencies); with ' +
    'id it changes only the fields given, so marking one done is {"tasks":[{"id":"…","status":"done"}]}; with id ' +
    'and remove: true it removes it. One call does one of the three, all of it or none. Closing a task skips ' +
    'its open steps.',
  input: z.strictObject({ tasks: bounded(Item, 1, 200) }),
  run({ tasks }, ctx) {
    const removing = tasks.filter((t) => t.remove === true);
    const adding = tasks.filter((t) => t.id === undefined);
    if (removing.length > 0) {
      const extra = removing.find((t) => Object.keys(t).some((k) => k !== 'id' && k !== 'remove'));
      if (removing.length < tasks.length || adding.length > 0 || extra) {
        throw new CairnError(
          'invalid_argument',
          'A call that removes gives only { id, remove: true } entries; add or change tasks in another call.',
        );
      }
      return delegate(removeTasks, { ids: removing.map((t) => t.id) }, ctx);
    }
    if (adding.length > 0 && adding.length < tasks.length) {
      throw new CairnError(
        'invalid_argument',
        'A call adds tasks (entries without id) or changes them (entries with id), not both: split it in two.',
      );
    }
    if (adding.length > 0) return delegate(addTasks, { tasks: tasks.map((t, i) => asNewTask(t, i)) }, ctx);
    if (tasks.length > MAX_UPDATES) {
      throw new CairnError(
        'invalid_argument',
        `Invalid arguments: tasks: one call changes at most ${MAX_UPDATES} tasks; this one changes ${tasks.length}. Split it.`,
        { valid: { max: MAX_UPDATES } },
      );
    }
    return delegate(updateTasks, { updates: tasks.map((t, i) => asUpdate(t, i)) }, ctx);
  },
});

function asNewTask(item: ItemArg, index: number): NewTaskArg {
  misplaced(item, index, CHANGE_ONLY, 'changing a task (with id)');
  const { id: _id, remove: _remove, parent, title, removeBlockedBy: _r, supersededBy: _s, ...rest } = item;
  if (title === undefined) {
    throw new CairnError(
      'invalid_argument',
      `Invalid arguments: tasks.${index}.title: required (a string) to add a task; an entry without id adds one.`,
    );
  }
  return { ...rest, title, ...(parent !== null ? { parent } : {}) };
}

function asUpdate(item: ItemArg, index: number): UpdateArg {
  misplaced(item, index, ADD_ONLY, 'adding a task (without id)');
  const { id, remove: _remove, key: _key, blockedBy, steps, ...rest } = item;
  return { ...rest, id: id!, addBlockedBy: blockedBy, addSteps: steps };
}

function misplaced(item: ItemArg, index: number, keys: readonly string[], forWhat: string): void {
  const found = keys.filter((k) => (item as Record<string, unknown>)[k] !== undefined);
  if (found.length > 0) {
    throw new CairnError(
      'invalid_argument',
      `tasks.${index}: ${found.join(', ')} ${found.length === 1 ? 'is' : 'are'} only for ${forWhat}.`,
    );
  }
}

const claimTask = toolSpec({
  name: 'claim_task',
  parameters: parameters.claim_task,
  description:
    'Claim work before doing it: with id, that task (you become its assignee, it goes in_progress; "lost" with ' +
    'the holder when someone else has it, "tentative" offline until the server confirms); without id, the first ' +
    'ready task nobody holds ("none" when there is none). action release gives a task back; hand_off gives it to `to`.',
  input: z.strictObject({
    id: z.optional(Id),
    action: about(z.optional(z.enum(['claim', 'release', 'hand_off'])), 'Default claim.'),
    to: about(
      z.optional(z.string().check(z.minLength(1), z.maxLength(120))),
      'For hand_off: "agent:<name>" or "user:<name>".',
    ),
    parent: about(
      z.optional(z.nullable(Id)),
      'Without id: only steps of this task (null: only top-level tasks).',
    ),
  }),
  run({ id, action = 'claim', to, parent }, ctx) {
    if (action === 'claim') {
      return id === undefined ? delegate(claimNextTool, { parent }, ctx) : delegate(claimTool, { id }, ctx);
    }
    if (id === undefined)
      throw new CairnError('invalid_argument', `action ${action} needs the id of the task.`);
    if (action === 'release') return delegate(releaseTool, { id }, ctx);
    if (to === undefined) {
      throw new CairnError(
        'invalid_argument',
        'action hand_off needs to: who gets the task, "agent:<name>" or "user:<name>".',
      );
    }
    return delegate(handOffTool, { id, to }, ctx);
  },
});

/** The compact native tools: read_tasks, write_tasks, claim_task. */
export const CAIRN_COMPACT_TOOLS: ReadonlyArray<ToolSpec<unknown>> = [readTasks, writeTasks, claimTask];

/** The `cairn_compact` family: Cairn's tools in few, short definitions, tasks named by number (docs/TOOLS.md). */
export const cairnCompactFamily: ToolFamily = {
  name: 'cairn_compact',
  ids: 'id',
  tools: CAIRN_COMPACT_TOOLS,
};
