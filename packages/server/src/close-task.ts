// Closing a conversation's task from outside the agent's tools (the dashboard's PATCH, auto-close) closes its
// open steps with it: a booking marked done leaves no "Confirm with the user" step pending under it, hidden with
// its closed task. They become `skipped` (not claimed as done, no longer to do), in the same validated write.
import { isOpenStatus, type Plan, type TaskPatch, type TaskSnapshot, type TaskUpdate } from '@cairn/core';

export function updateClosingSteps(plan: Plan, id: string, patch: TaskPatch): TaskSnapshot {
  const closing = patch.status !== undefined && !isOpenStatus(patch.status);
  const steps: TaskUpdate[] = [];
  const walk = (parent: string) => {
    for (const step of plan.children(parent)) {
      if (isOpenStatus(step.status)) steps.push({ id: step.id, patch: { status: 'skipped' } });
      walk(step.id);
    }
  };
  if (closing) walk(id);
  const results = plan.updateMany([...steps, { id, patch }]);
  return results.at(-1)!.task;
}
