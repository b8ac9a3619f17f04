// The steps a close skipped: closing a task closes its open steps, at any depth, as `skipped` in the same write
// (the plan's rule, docs/decisions/022). A result that closes a task names them, so none is closed unsaid.
import type { Plan } from './plan.js';
import { isOpenStatus } from './schema.js';

export interface SkippedStep {
  id: string;
  title: string;
}

/**
 * Called before a write that may close task `id`: a function that, after the write, lists the steps under it
 * that were open before and are `skipped` now, in plan order.
 */
export function watchSkippedSteps(plan: Plan, id: string): () => SkippedStep[] {
  const open: SkippedStep[] = [];
  const walk = (parent: string) => {
    for (const step of plan.children(parent)) {
      if (isOpenStatus(step.status)) open.push({ id: step.id, title: step.title });
      walk(step.id);
    }
  };
  walk(id);
  return () => open.filter((s) => plan.get(s.id)?.status === 'skipped');
}
