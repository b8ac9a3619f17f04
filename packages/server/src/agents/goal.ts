// Splitting a goal into a dependency graph without a model: tasks in phases (each waits on one or two tasks of the
// phase before), each with steps to report progress into. Reproducible for a given random source.
import type { TaskInput } from '@cairn/core';

const PHASES = [
  { verb: 'Research', doing: 'Researching', steps: ['Collect sources', 'Write down findings'] },
  { verb: 'Design', doing: 'Designing', steps: ['Sketch options', 'Pick one and say why'] },
  { verb: 'Build', doing: 'Building', steps: ['Write the first version', 'Make it pass its checks'] },
  { verb: 'Test', doing: 'Testing', steps: ['Write the cases', 'Run them and fix what fails'] },
  { verb: 'Document', doing: 'Documenting', steps: ['Draft', 'Review the draft'] },
  { verb: 'Ship', doing: 'Shipping', steps: ['Prepare the release', 'Announce it'] },
];

/** `count` top-level tasks (1 to 200) for `goal`, keyed `t1`..`tN`, with `blockedBy` naming keys. */
export function splitGoal(goal: string, count: number, random: () => number): TaskInput[] {
  const phases = Math.min(PHASES.length, Math.max(1, Math.ceil(count / 3)));
  // Phase sizes as even as possible; later phases take the remainder.
  const sizes = Array.from({ length: phases }, (_, i) => Math.floor((count + i) / phases));
  const tasks: TaskInput[] = [];
  let previous: string[] = [];
  let n = 0;
  for (const [phase, size] of sizes.entries()) {
    const { verb, doing, steps } = PHASES[phase]!;
    const current: string[] = [];
    for (let i = 0; i < size; i++) {
      const key = `t${++n}`;
      const blockers = pick(previous, previous.length === 0 ? 0 : 1 + Math.floor(random() * 2), random);
      tasks.push({
        key,
        title: `${verb}: ${goal} (part ${i + 1} of ${size})`,
        activeForm: `${doing} part ${i + 1}`,
        ...(blockers.length > 0 ? { blockedBy: blockers } : {}),
        steps: steps.map((title) => ({ title })),
      });
      current.push(key);
    }
    previous = current;
  }
  return tasks;
}

function pick<T>(items: readonly T[], count: number, random: () => number): T[] {
  const pool = [...items];
  const out: T[] = [];
  while (out.length < count && pool.length > 0)
    out.push(pool.splice(Math.floor(random() * pool.length), 1)[0]!);
  return out;
}
