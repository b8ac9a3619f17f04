// Rewriting one list of siblings to match a whole new list (a todo list sent in full on every call), with the
// fewest edits: tasks whose title matches are kept and updated in place, so their ids, aliases and steps survive
// and a change feed shows "task 3 done" rather than five removals and five additions.
import { CairnError } from './errors.js';
import type { Plan } from './plan.js';
import { ListItemsSchema, STATUSES, type Status, type TaskPatch, type TaskSnapshot } from './schema.js';
import { markParsed, parseOnce } from './validate.js';

export interface ListItem {
  title: string;
  status?: Status;
  activeForm?: string | null;
  note?: string;
}

export interface ReconcileOptions {
  /** Whose steps to rewrite; `null` (the default) rewrites the top-level list. */
  parent?: string | null;
  /**
   * Whether a task now at `current` already counts as `wanted`, so its status is left alone. A family with
   * fewer statuses than the plan maps several onto one (todo's `completed` covers done, failed and cancelled);
   * without this, echoing back the list it was shown would turn a cancelled task into a done one.
   */
  sameStatus?: (current: Status, wanted: Status) => boolean;
}

export interface ReconcileResult {
  /** The list after the rewrite, in order. */
  tasks: TaskSnapshot[];
  added: string[];
  updated: string[];
  removed: string[];
}

/**
 * Makes the steps of `options.parent` (or the top-level tasks) equal `items`, in order, in one transaction;
 * a refused item changes nothing. Items are matched to existing siblings by exact title (trimmed), first unmatched first; matched
 * tasks get only the fields that differ, unmatched siblings are removed (with their steps), new items added.
 */
export function reconcileList(
  plan: Plan,
  items: readonly ListItem[],
  options: ReconcileOptions = {},
): ReconcileResult {
  const parent = options.parent ?? null;
  if (parent !== null) plan.require(parent);
  const same = options.sameStatus ?? ((a: Status, b: Status) => a === b);
  // Every item is checked up front, so none of the edits below can be refused halfway: a plain batch is then
  // all or nothing without the cost of plan.atomic's scratch copy (which grows with the document). What is
  // written below is built from the parsed items, so the plan does not parse it again.
  const parsed = checkListItems(items, parent);
  let result: ReconcileResult | undefined;
  plan.batch((p) => {
    const existing = p.children(parent);
    const unmatched = new Map<string, TaskSnapshot[]>();
    for (const task of existing) {
      const key = task.title.trim();
      const list = unmatched.get(key);
      if (list) list.push(task);
      else unmatched.set(key, [task]);
    }
    const matches = parsed.map((item) => unmatched.get(item.title)?.shift() ?? null);
    const kept = new Set(matches.filter((m): m is TaskSnapshot => m !== null).map((m) => m.id));
    const removed: string[] = [];
    for (const task of existing) if (!kept.has(task.id)) removed.push(...p.remove(task.id));

    const added: string[] = [];
    const updated: string[] = [];
    const order: string[] = [];
    parsed.forEach((item, i) => {
      const match = matches[i] ?? null;
      const after = i === 0 ? null : order[i - 1]!;
      if (match === null) {
        const task = p.add(markParsed({ ...item, parent, after }));
        added.push(task.id);
        order.push(task.id);
        return;
      }
      order.push(match.id);
      const patch: TaskPatch = {};
      if (item.status !== undefined && !same(match.status, item.status)) patch.status = item.status;
      if (item.activeForm !== undefined && item.activeForm !== match.activeForm)
        patch.activeForm = item.activeForm;
      if (item.note !== undefined && item.note !== match.note) patch.note = item.note;
      if (item.title !== match.title) patch.title = item.title;
      if (Object.keys(patch).length > 0) {
        p.update(match.id, markParsed(patch));
        updated.push(match.id);
      }
      // The prefix before i is already in order, so the sibling at i must be this one.
      const siblings = p.children(parent);
      if (siblings[i]?.id !== match.id) p.move(match.id, markParsed({ after }));
    });
    const tasks = p.children(parent);
    if (tasks.length !== parsed.length) {
      // Only a concurrent edit inside this transaction could cause this; refuse rather than half-apply.
      throw new CairnError('internal', 'The list changed while it was being rewritten; nothing was changed.');
    }
    result = { tasks, added, updated, removed };
  });
  return result!;
}

/**
 * Refuses items that reconcileList would refuse, before anything is written (for callers that batch more), and
 * returns them parsed (titles trimmed). Parsed once: items a tool family built from its parsed arguments are not.
 */
export function checkListItems(items: readonly ListItem[], parent: string | null): readonly ListItem[] {
  const parsed = parseOnce(ListItemsSchema, items, 'list items');
  parsed.forEach((item, i) => {
    if (item.status === 'skipped' && parent === null) {
      throw new CairnError(
        'invalid_transition',
        `List item ${i}: only a step can be skipped; use cancelled.`,
        {
          valid: STATUSES.filter((s) => s !== 'skipped'),
        },
      );
    }
  });
  return parsed;
}
