// Random edits through the Plan API for the seeded property tests (incremental views, convergence): one table of
// operations, each test weighting them as it needs. An edit may be refused (a cycle, a task a peer removed): the
// caller decides what a refusal must leave behind.
import type { Plan, TaskSnapshot } from '../src/index.js';

const STATUSES = ['pending', 'in_progress', 'done', 'cancelled', 'failed', 'waiting_user'] as const;

/** With fewer tasks than this, every edit adds one, so the others have something to work on. */
const MIN_TASKS = 3;

interface EditContext {
  plan: Plan;
  tasks: TaskSnapshot[];
  random: () => number;
  pick<T>(items: readonly T[]): T | undefined;
  someId(): string | undefined;
  actors: readonly string[];
}

const OPERATIONS = {
  add: ({ plan, random, someId }: EditContext) => {
    plan.add({
      title: `task ${Math.floor(random() * 1000)}`,
      ...(random() < 0.3 ? { parent: someId() ?? null } : {}),
    });
  },
  status: ({ plan, pick, someId }: EditContext) => {
    plan.update(someId()!, { status: pick(STATUSES)! });
  },
  block: ({ plan, someId }: EditContext) => {
    plan.update(someId()!, { addBlockedBy: [someId()!] });
  },
  unblock: ({ plan, tasks, pick }: EditContext) => {
    const task = pick(tasks.filter((t) => t.blockedBy.length > 0));
    if (task) plan.update(task.id, { removeBlockedBy: [pick(task.blockedBy)!] });
  },
  move: ({ plan, random, pick, someId }: EditContext) => {
    const id = someId()!;
    const parent = random() < 0.5 ? null : (someId() ?? null);
    const siblings = plan.children(parent).filter((s) => s.id !== id);
    const after = random() < 0.3 ? null : pick(siblings)?.id;
    plan.move(id, { parent, ...(after !== undefined ? { after } : {}) });
  },
  remove: ({ plan, someId }: EditContext) => {
    plan.remove(someId()!);
  },
  /** Concurrent claims: everyone grabs tasks; a merge must still agree on one holder. */
  assign: ({ plan, pick, someId, actors }: EditContext) => {
    plan.update(someId()!, { assignee: pick(actors)! });
  },
  /** One character typed into a title, somewhere in it. */
  type: ({ plan, tasks, random, pick }: EditContext) => {
    const task = pick(tasks)!;
    const at = Math.floor(random() * (task.title.length + 1));
    plan.update(task.id, {
      title: `${task.title.slice(0, at)}${'xyz'[Math.floor(random() * 3)]}${task.title.slice(at)}`,
    });
  },
};

/** How often each kind of edit comes, relative to the others; a kind left out never comes. */
export type EditWeights = Partial<Record<keyof typeof OPERATIONS, number>>;

/** Makes one random edit to `plan`, of a kind drawn by `weights`; `actors` are who `assign` may name. */
export function randomEdit(
  plan: Plan,
  random: () => number,
  weights: EditWeights,
  actors: readonly string[] = [],
): void {
  const tasks = plan.list();
  const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(random() * items.length)];
  const context: EditContext = { plan, tasks, random, pick, someId: () => pick(tasks)?.id, actors };
  const kind = draw(weights, random());
  OPERATIONS[tasks.length < MIN_TASKS ? 'add' : kind](context);
}

/** The kind of edit a roll in [0, 1) lands on, each kind taking its share of the total weight. */
function draw(weights: EditWeights, roll: number): keyof typeof OPERATIONS {
  const entries = Object.entries(weights) as Array<[keyof typeof OPERATIONS, number]>;
  let left = roll * entries.reduce((sum, [, weight]) => sum + weight, 0);
  for (const [kind, weight] of entries) {
    left -= weight;
    if (left < 0) return kind;
  }
  return entries.at(-1)![0];
}
