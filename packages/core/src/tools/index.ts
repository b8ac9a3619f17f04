/**
 * @cairn/core/tools: the tool families one by one, so a page ships only the families it offers. `createToolkitOf`
 * takes the families themselves (`createToolkitOf(plan, [cairnFamily])`); the root's `createToolkit` takes them
 * by name and so carries all six (docs/TOOLS.md, docs/decisions/048).
 *
 * @packageDocumentation
 */

export { cairnFamily } from './cairn.js';
export { cairnCompactFamily } from './cairn-compact.js';
export { ongoingTaskFamily } from './ongoing-task.js';
export { taskGraphFamily } from './task-graph.js';
export { taskManageFamily } from './task-manage.js';
export { todoFamily } from './todo.js';
export type { ToolFamily } from './tool.js';
export type { ToolkitOfOptions } from './toolkit.js';
export { createToolkitOf } from './toolkit.js';
