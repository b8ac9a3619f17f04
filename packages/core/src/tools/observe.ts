// What a toolkit tells an `onCall` observer after each call (traces of learned procedures): who called which
// tool with what, whether it was refused, and which tasks it wrote or named. Kept apart from the dispatcher.
import type { ErrorCode } from '../errors.js';
import type { Plan } from '../plan.js';
import type { Actor } from '../schema.js';
import { openConversationTasks } from '../task-numbers.js';
import type { Numbering } from './aliases.js';

/** One finished tool call. */
export interface ToolCallRecord {
  tool: string;
  /** The arguments as given: the parsed object, or the raw text when it was not JSON. */
  args: unknown;
  actor: Actor;
  /** When the call ended (ms since the epoch, the toolkit's clock). */
  at: number;
  /** `ok`, or the code of the refusal. */
  outcome: 'ok' | ErrorCode;
  /** The refusal's message, what the model was told (absent for `ok`). */
  message?: string;
  /** Tasks the call wrote, and existing tasks its arguments named (by id, or by number for integer families). */
  tasks: string[];
}

export type ToolCallObserver = (call: ToolCallRecord) => void;

/** The part of a Toolkit observing needs: structural, so this module and toolkit.ts do not import each other. */
interface ObservedToolkit {
  readonly plan: Plan;
  readonly actor: Actor;
  dispatch(name: string, args?: unknown): Promise<unknown>;
  definitions(...args: never[]): unknown;
  destroy(): void;
}

/**
 * The toolkit with each dispatch reported to `observer`. Writes are seen through the plan's change events while
 * the call runs (only this actor's local ones); an observer that throws never changes the call's result.
 */
export function observeCalls<T extends ObservedToolkit>(
  toolkit: T,
  observer: ToolCallObserver,
  now: () => number,
  /** The numbering a tool's integer task ids are in, or null for a family of string ids. */
  numbering: (tool: string) => Numbering | null,
): T {
  const dispatch = toolkit.dispatch.bind(toolkit);
  const { plan, actor } = toolkit;
  return {
    ...toolkit,
    definitions: toolkit.definitions.bind(toolkit),
    destroy: toolkit.destroy.bind(toolkit),
    async dispatch(name: string, raw?: unknown): Promise<unknown> {
      const touched = new Set<string>();
      const stop = plan.onChange((event) => {
        if (!event.local) return;
        for (const change of event.changes) if (change.actor === actor) touched.add(change.id);
      });
      let result: unknown;
      try {
        result = await dispatch(name, raw);
      } finally {
        stop();
      }
      // The time the call ended: a call that creates a task is then not older than the task.
      const at = now();
      const tool = String(name);
      const args = parsedArgs(raw);
      for (const id of namedTasks(plan, args, () => numbering(tool))) touched.add(id);
      try {
        const message = errorMessageOf(result);
        observer({
          tool,
          args,
          actor,
          at,
          outcome: errorCodeOf(result) ?? 'ok',
          ...(message ? { message } : {}),
          tasks: [...touched],
        });
      } catch {
        // Recording is a side effect: the model still gets its result.
      }
      return result;
    },
  };
}

function parsedArgs(raw: unknown): unknown {
  if (typeof raw !== 'string') return raw ?? {};
  if (raw.trim() === '') return {};
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

function errorCodeOf(result: unknown): ErrorCode | null {
  if (typeof result !== 'object' || result === null || !('error' in result)) return null;
  const code = (result as { error?: { code?: unknown } }).error?.code;
  return typeof code === 'string' ? (code as ErrorCode) : 'internal';
}

function errorMessageOf(result: unknown): string | null {
  if (typeof result !== 'object' || result === null || !('error' in result)) return null;
  const message = (result as { error?: { message?: unknown } }).error?.message;
  return typeof message === 'string' ? message : null;
}

/**
 * Ids of existing tasks named anywhere in the arguments (bounded walk: arguments can be large): by id, by number
 * in the numbering of the tool's family (the plan's alias, or seed 001's task number), or by the goal of an open
 * conversation task (set_ongoing_task names its task so), so that even a refused call is tied to its task.
 */
function namedTasks(plan: Plan, args: unknown, numberingOf: () => Numbering | null): string[] {
  const found = new Set<string>();
  let numbering: Numbering | null | undefined;
  let goals: Map<string, string> | null = null;
  const byGoal = (text: string): string | undefined => {
    if (goals === null) {
      goals = new Map();
      // Newest first, so a goal shared by two open tasks names the newest, as set_ongoing_task picks it.
      for (const task of openConversationTasks(plan)) {
        if (!goals.has(goalKey(task.title))) goals.set(goalKey(task.title), task.id);
      }
    }
    return goals.get(goalKey(text));
  };
  let budget = 2000;
  const walk = (value: unknown): void => {
    if (budget-- <= 0) return;
    if (typeof value === 'string') {
      if (value.length <= 64 && plan.has(value)) found.add(value);
      else if (value.length <= 1000) {
        const id = byGoal(value);
        if (id) found.add(id);
      }
    } else if (typeof value === 'number') {
      if (Number.isInteger(value) && value > 0) {
        // Worked out once per call, and only for a call with integers in it.
        if (numbering === undefined) numbering = numberingOf();
        const task = numbering?.byNumber(value);
        if (task) found.add(task.id);
      }
    } else if (Array.isArray(value)) {
      for (const item of value) walk(item);
    } else if (typeof value === 'object' && value !== null) {
      for (const item of Object.values(value)) walk(item);
    }
  };
  walk(args);
  return [...found];
}

/** A goal whatever its case and spacing (as set_ongoing_task matches it). */
function goalKey(text: string): string {
  return text.trim().replace(/\s+/g, ' ').toLowerCase();
}
