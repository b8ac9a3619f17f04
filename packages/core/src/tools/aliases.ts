// Integer aliases for the families that speak integer ids (task_manage, todo, task_graph, ongoing_task): looking
// a task up by its alias with an error that lists the valid ones, and rewriting plan ids in errors as aliases.
import { CairnError, type CairnErrorJSON } from '../errors.js';
import type { Plan } from '../plan.js';
import type { TaskSnapshot } from '../schema.js';

/** The task with alias `num`, or a `not_found` error listing the aliases (and titles) there are. */
export function taskByNum(plan: Plan, num: number, among?: readonly TaskSnapshot[]): TaskSnapshot {
  const task = plan.byNum(num);
  if (task && (!among || among.some((t) => t.id === task.id))) return task;
  const known = among ?? plan.list();
  throw new CairnError('not_found', `There is no task ${num}. ${knownTasks(known)}`, {
    id: num,
    known: known.slice(0, 50).map((t) => t.num),
  });
}

/** A family's number for a task: the plan's alias unless the family counts otherwise (seed 001's task numbers). */
export type NumberOf = (task: TaskSnapshot) => number | undefined;
const aliasOf: NumberOf = (task) => task.num;

/** How an integer family numbers tasks, both ways: errors speak `numberOf`, traces read `byNumber`. */
export interface Numbering {
  numberOf: NumberOf;
  byNumber(n: number): TaskSnapshot | undefined;
}

/** The plan's own aliases, the numbering of every integer family that does not count otherwise. */
export function aliasNumbering(plan: Plan): Numbering {
  return { numberOf: aliasOf, byNumber: (n) => plan.byNum(n) };
}

/** "Known tasks: 1 (Draft post), 2 (Publish)." or "There are no tasks yet.", capped so it stays short. */
export function knownTasks(
  tasks: readonly TaskSnapshot[],
  label = 'Known tasks',
  numberOf = aliasOf,
): string {
  if (tasks.length === 0) return 'There are no tasks yet.';
  const shown = tasks.slice(0, 20).map((t) => `${numberOf(t)} (${short(t.title)})`);
  return `${label}: ${shown.join(', ')}${tasks.length > 20 ? `, and ${tasks.length - 20} more` : ''}.`;
}

function short(title: string): string {
  return title.length > 40 ? `${title.slice(0, 39)}…` : title;
}

/** The aliases of the given plan ids that still name tasks, in order. */
export function numsOf(plan: Plan, ids: readonly string[]): number[] {
  const out: number[] = [];
  for (const id of ids) {
    const task = plan.get(id);
    if (task) out.push(task.num);
  }
  return out;
}

/** Unix seconds, as seed 000's `created_at` / `updated_at`. */
export function unixSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}

/**
 * Rewrites plan ids in an error (message and details) as the aliases a model using an integer family knows,
 * so a refusal raised deep in the plan still speaks the family's language.
 */
export function errorInAliases(
  plan: Plan,
  error: CairnErrorJSON,
  numbers: (plan: Plan) => Numbering = aliasNumbering,
): CairnErrorJSON {
  const { numberOf } = numbers(plan);
  const ids = new Map<string, number>();
  for (const task of plan.list()) {
    const n = numberOf(task);
    if (n !== undefined) ids.set(task.id, n);
  }
  if (ids.size === 0) return error;
  const swap = (value: unknown): unknown => {
    if (typeof value === 'string') {
      if (ids.has(value)) return ids.get(value);
      return value.replace(/\b[0-9a-z]{7}\b/g, (word) => (ids.has(word) ? String(ids.get(word)) : word));
    }
    if (Array.isArray(value)) return value.map(swap);
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, swap(v)]));
    }
    return value;
  };
  return swap(error) as CairnErrorJSON;
}
