// The document format (see docs/SCHEMA.md): the names of the top-level maps and task fields, the status
// vocabulary, and the zod schemas that validate every write. The tool dispatcher reuses these schemas. They are
// zod/mini schemas (functions, not methods), so a bundle carries only the checks they use (docs/decisions/048).
import * as z from 'zod/mini';
import './zod-messages.js';

/** Bumped when the document layout changes incompatibly; stored in `meta.schemaVersion`. */
export const SCHEMA_VERSION = 1;

/** Top-level shared types of a plan's Y.Doc. */
export const DOC_KEYS = {
  /** Y.Map<taskId, Y.Map<field, value>>: every live task. */
  tasks: 'tasks',
  /**
   * Y.Map<taskId, { by, at, num? }>: who removed a task and when, so removals stay attributable after sync, and
   * the integer alias it had, so that alias is never given to another task.
   */
  removed: 'removed',
  /** Y.Map<string, unknown>: schemaVersion and plan-level settings. */
  meta: 'meta',
} as const;

/** Keys inside the `meta` map. */
export const META_KEYS = {
  /** The SCHEMA_VERSION the document was first written with. */
  schemaVersion: 'schemaVersion',
} as const;

/** Field names inside a task's Y.Map. One place, so no module spells a field differently. */
export const F = {
  id: 'id',
  num: 'num',
  title: 'title',
  activeForm: 'activeForm',
  status: 'status',
  parent: 'parent',
  rank: 'rank',
  blockedBy: 'blockedBy',
  nextStep: 'nextStep',
  note: 'note',
  context: 'context',
  wakeAt: 'wakeAt',
  supersededBy: 'supersededBy',
  assignee: 'assignee',
  createdBy: 'createdBy',
  updatedBy: 'updatedBy',
  createdAt: 'createdAt',
  updatedAt: 'updatedAt',
} as const;

export const OPEN_STATUSES = ['pending', 'in_progress', 'waiting_user', 'waiting_external'] as const;
export const CLOSED_STATUSES = ['done', 'failed', 'cancelled', 'skipped'] as const;
/** Every task status, open ones first. */
export const STATUSES = [...OPEN_STATUSES, ...CLOSED_STATUSES] as const;
export const WAITING_STATUSES = ['waiting_user', 'waiting_external'] as const;

export type OpenStatus = (typeof OPEN_STATUSES)[number];
export type ClosedStatus = (typeof CLOSED_STATUSES)[number];
/** A task's status: one of `STATUSES`. */
export type Status = (typeof STATUSES)[number];

const OPEN_SET: ReadonlySet<string> = new Set(OPEN_STATUSES);

/**
 * Whether a status is open (pending, in progress or waiting), as against closed (done, failed, cancelled, skipped).
 */
export function isOpenStatus(status: string): status is OpenStatus {
  return OPEN_SET.has(status);
}

export function isWaitingStatus(status: string): boolean {
  return (WAITING_STATUSES as readonly string[]).includes(status);
}

/** An actor names who made a write: `agent:<name>`, `user:<name>`, or a system actor. */
export const SYSTEM_ACTORS = ['wake', 'auto_close', 'lease', 'learning', 'system'] as const;
export const ACTOR_PATTERN = /^(?:(?:agent|user):[^\s]{1,100}|wake|auto_close|lease|learning|system)$/;
export const ActorSchema = z
  .string()
  .check(
    z.regex(
      ACTOR_PATTERN,
      'an actor is "agent:<name>", "user:<name>", "wake", "auto_close", "lease", "learning" or "system"',
    ),
  );
/**
 * Who makes a write: `agent:<name>`, `user:<name>`, or one of the system actors (`wake`, `auto_close`, `lease`,
 * `learning`, `system`). Every write carries one.
 */
export type Actor = string;

/** An actor's kind prefix: a subject that starts with one already names an actor. */
const PRINCIPAL_PREFIX = /^(?:agent|user):/;

/** Whether `value` is an actor a principal (a person or an agent, not the system) may be: agent:<name>, user:<name>. */
export function isPrincipalActor(value: string): boolean {
  return PRINCIPAL_PREFIX.test(value) && ACTOR_PATTERN.test(value);
}

export const PrincipalActorSchema = z
  .string()
  .check(z.refine(isPrincipalActor, 'an actor is "agent:<name>" or "user:<name>"'));

/**
 * The actor a token's subject acts as: the subject itself when it already names one (`agent:ci`), else
 * `<kind>:<subject>`. The one rule for the server's claims, its HTTP routes and the MCP command line.
 */
export function actorFor(subject: string, kind: 'agent' | 'user'): string {
  return PRINCIPAL_PREFIX.test(subject) ? subject : `${kind}:${subject}`;
}

/**
 * How much one write may add, and how many tasks a plan may hold, so that no single call stalls a shared server:
 * adding 500 tasks takes about 20-30 ms on one core, and reads stay cheap at 10,000 tasks (docs/TOOLS.md).
 * Steps count as tasks.
 */
export const PLAN_LIMITS: Readonly<PlanLimits> = { tasksPerCall: 500, tasksPerPlan: 10_000 };
export interface PlanLimits {
  tasksPerCall: number;
  tasksPerPlan: number;
}

export const TaskIdSchema = z.string().check(z.minLength(1), z.maxLength(64));

/**
 * The longest text a task holds, in characters: its note, and its context as JSON (each write, and the context
 * after a merge). With the plan's task limits and the server's document limit (`maxDocBytes`, the same for
 * every path), no write can bloat a plan (docs/SCHEMA.md, "Limits").
 */
export const TEXT_LIMITS = {
  title: 500,
  activeForm: 500,
  nextStep: 2000,
  note: 20_000,
  context: 20_000,
} as const;

const text = (max: number) => z.string().check(z.maxLength(max, `at most ${max} characters`));
/** A task's title: trimmed, not empty, at most `TEXT_LIMITS.title` characters. */
export const TitleSchema = z
  .string()
  .check(
    z.trim(),
    z.minLength(1, 'a title must not be empty'),
    z.maxLength(TEXT_LIMITS.title, `a title has at most ${TEXT_LIMITS.title} characters`),
  );
const isoTime = z.iso.datetime({ offset: true, message: 'an ISO 8601 time such as 2026-12-02T15:00:00Z' });

/** JSON values allowed in `context`. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** Whether a value is JSON: strings, finite numbers, booleans, null, arrays or objects, at most 32 levels deep. */
export function isJson(value: unknown, depth = 0): boolean {
  if (depth > 32) return false;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every((v) => isJson(v, depth + 1));
  if (typeof value === 'object') return Object.values(value).every((v) => isJson(v, depth + 1));
  return false;
}

/**
 * A task's `context`: an object of JSON values, merged key by key (a null value deletes a key). The one
 * validator for the plan API and every tool family. Published as a plain object schema (a recursive JSON type
 * would need `$ref`, which some clients reject); the values are checked to be JSON (at most 32 levels deep).
 */
export const ContextSchema = z.record(z.string(), z.unknown()).check(
  z.refine((value) => isJson(value), {
    message: 'context values must be JSON: strings, finite numbers, booleans, null, arrays or objects',
  }),
  z.refine((value) => JSON.stringify(value).length <= TEXT_LIMITS.context, {
    message: `a context is at most ${TEXT_LIMITS.context} characters as JSON`,
  }),
) as unknown as z.ZodMiniType<Record<string, Json>>;

export const StatusSchema = z.enum(STATUSES);

/** The fields a caller may set on a task; shared by add and update. */
const writableFields = {
  activeForm: z.nullable(text(TEXT_LIMITS.activeForm)),
  status: StatusSchema,
  nextStep: z.nullable(text(TEXT_LIMITS.nextStep)),
  note: text(TEXT_LIMITS.note),
  wakeAt: z.nullable(isoTime),
  supersededBy: z.nullable(TaskIdSchema),
  assignee: z.nullable(ActorSchema),
};

/** A task to add (`Plan.add()`): its title and, optionally, its status, note, assignee, parent, steps, dependencies. */
export interface TaskInput {
  title: string;
  activeForm?: string | null;
  status?: Status;
  nextStep?: string | null;
  note?: string;
  wakeAt?: string | null;
  supersededBy?: string | null;
  assignee?: string | null;
  /** Merged into the task's context; a `null` value deletes the key. */
  context?: Record<string, Json>;
  parent?: string | null;
  blockedBy?: string[];
  /** Child tasks created with this one, in order. */
  steps?: TaskInput[];
  /** Where among its siblings: after this sibling id; `null` puts it first; omitted puts it last. */
  after?: string | null;
  /** A name for this task within one call, usable in the `blockedBy` of the other tasks of that call. */
  key?: string;
}

/** At most `max` items: every list a write takes is bounded. */
const list = <T extends z.core.SomeType>(item: T, max: number) => z.array(item).check(z.maxLength(max));
/** An optional, nullable task id (a parent, a sibling to go after). */
const idOrNull = () => z.optional(z.nullable(TaskIdSchema));

export const TaskInputSchema: z.ZodMiniType<TaskInput> = z.lazy(() =>
  z.strictObject({
    title: TitleSchema,
    ...optionalize(writableFields),
    context: z.optional(ContextSchema),
    parent: idOrNull(),
    blockedBy: z.optional(list(TaskIdSchema, 1000)),
    steps: z.optional(list(TaskInputSchema, 1000)),
    after: idOrNull(),
    key: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
  }),
);

/** One add or replace takes at most 1000 tasks. Built once: building a zod schema costs more than a parse. */
export const TaskInputsSchema = list(TaskInputSchema, 1000);

/** An item of a list rewritten whole (`reconcileList`: a todo list, a task's steps): a task's listed fields. */
export const ListItemSchema = z.strictObject({
  title: TitleSchema,
  status: z.optional(StatusSchema),
  activeForm: z.optional(writableFields.activeForm),
  note: z.optional(writableFields.note),
});
export const ListItemsSchema = list(ListItemSchema, 1000);

export const TaskPatchSchema = z.strictObject({
  title: z.optional(TitleSchema),
  ...optionalize(writableFields),
  context: z.optional(ContextSchema),
  addBlockedBy: z.optional(list(TaskIdSchema, 1000)),
  removeBlockedBy: z.optional(list(TaskIdSchema, 1000)),
});
/** The fields of a task to change (`Plan.update()`); what is left out stays. */
export type TaskPatch = z.infer<typeof TaskPatchSchema>;

export const MoveSchema = z.strictObject({
  parent: idOrNull(),
  after: idOrNull(),
  before: idOrNull(),
});
/** Where `Plan.move()` puts a task: under a parent, after or before a sibling. */
export type MoveTarget = z.infer<typeof MoveSchema>;

export const ListFilterSchema = z.strictObject({
  state: z.optional(z.enum(['open', 'closed', 'all'])),
  status: z.optional(z.union([StatusSchema, z.array(StatusSchema)])),
  parent: idOrNull(),
  assignee: z.optional(z.nullable(ActorSchema)),
});
/** Which tasks `Plan.list()` returns: by state (open, closed, all), status, parent, assignee. */
export type ListFilter = z.infer<typeof ListFilterSchema>;

function optionalize<T extends Record<string, z.core.SomeType>>(
  shape: T,
): { [K in keyof T]: z.ZodMiniOptional<T[K]> } {
  const out: Record<string, z.core.SomeType> = {};
  for (const [key, schema] of Object.entries(shape)) out[key] = z.optional(schema);
  return out as { [K in keyof T]: z.ZodMiniOptional<T[K]> };
}

/** A plain, JSON-serialisable view of one task, as `plan.get()` and `plan.toJSON()` return it. */
export interface TaskSnapshot {
  id: string;
  /** Small integer alias for tool families that speak integer ids (see docs/SCHEMA.md). */
  num: number;
  title: string;
  activeForm: string | null;
  status: Status;
  parent: string | null;
  rank: string;
  blockedBy: string[];
  nextStep: string | null;
  note: string;
  context: Record<string, Json>;
  wakeAt: string | null;
  supersededBy: string | null;
  assignee: string | null;
  createdBy: string;
  updatedBy: string;
  createdAt: number;
  updatedAt: number;
}
