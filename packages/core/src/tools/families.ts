// The six tool families by name, and the toolkit that takes families by name. Naming a family at run time (a
// server's route, an MCP option) needs them all at hand, so this module carries every family's code; a page that
// knows its families imports them from @cairn/core/tools and calls `createToolkitOf` instead.
import { CairnError } from '../errors.js';
import type { Plan } from '../plan.js';
import { cairnFamily } from './cairn.js';
import { cairnCompactFamily } from './cairn-compact.js';
import { ongoingTaskFamily } from './ongoing-task.js';
import { taskGraphFamily } from './task-graph.js';
import { taskManageFamily } from './task-manage.js';
import { todoFamily } from './todo.js';
import { FAMILY_NAMES, type FamilyName, type ToolFamily } from './tool.js';
import { createToolkitOf, type Toolkit, type ToolkitOptions } from './toolkit.js';

export const FAMILIES: Readonly<Record<FamilyName, ToolFamily>> = {
  cairn: cairnFamily,
  task_manage: taskManageFamily,
  todo: todoFamily,
  task_graph: taskGraphFamily,
  ongoing_task: ongoingTaskFamily,
  cairn_compact: cairnCompactFamily,
};

/**
 * The tools of the families named in `options.families` (default `['cairn']`) over a plan (docs/TOOLS.md): each
 * call validated, written as `options.actor`, answered with a result or an error the model can act on. It carries
 * all six families' code; `createToolkitOf` from `@cairn/core/tools` takes only the families a page imports.
 */
export function createToolkit(plan: Plan, options: ToolkitOptions = {}): Toolkit {
  const { families: names = ['cairn'], ...rest } = options;
  for (const name of names) {
    if (!(FAMILY_NAMES as readonly string[]).includes(name)) {
      throw new CairnError(
        'invalid_argument',
        `Unknown tool family "${name}"; families: ${FAMILY_NAMES.join(', ')}.`,
        {
          valid: [...FAMILY_NAMES],
        },
      );
    }
  }
  return createToolkitOf(
    plan,
    names.map((name) => FAMILIES[name]),
    rest,
  );
}
