// Moving a task among its siblings (keyboard and buttons) and by drag and drop, through plan.move, which rewrites
// only the moved task's rank: concurrent moves by others never duplicate or drop a task.
import type { Plan } from '@cairn/core';

/** Moves a task one place up (-1) or down (+1) among its siblings. Returns false at either end. */
export function moveBy(plan: Plan, id: string, delta: -1 | 1): boolean {
  const task = plan.require(id);
  const siblings = plan.children(plan.effectiveParent(task));
  const index = siblings.findIndex((s) => s.id === id);
  const neighbour = siblings[index + delta];
  if (index === -1 || !neighbour) return false;
  plan.move(id, delta < 0 ? { before: neighbour.id } : { after: neighbour.id });
  return true;
}

/** Drops `id` just before or after `target`, among the target's siblings (so a drag can also re-parent). */
export function moveNextTo(plan: Plan, id: string, target: string, where: 'before' | 'after'): void {
  if (id === target) return;
  const parent = plan.effectiveParent(plan.require(target));
  plan.move(id, { parent, [where]: target });
}
