import type { Plan } from '../plan.js';

/**
 * Resolves once `test(plan)` holds: checked now, then after every change the plan sees (local or synced in).
 * For tests and scripts that wait for a peer's edit to arrive.
 */
export function until(plan: Plan, test: (plan: Plan) => boolean): Promise<void> {
  if (test(plan)) return Promise.resolve();
  return new Promise((resolve) => {
    const stop = plan.onChange(() => {
      if (!test(plan)) return;
      stop();
      resolve();
    });
  });
}
