/**
 * @cairn/core/render: each render format alone, so a page ships only the one it shows a model
 * (`renderNative(plan, { maxTokens: 2000 })`). The root's `renderPlan` picks a format by name and so carries all
 * four (docs/TOOLS.md, "Rendering"; docs/decisions/048).
 *
 * @packageDocumentation
 */

import type { Plan } from '../plan.js';
import { checklistFormat } from './checklist.js';
import { type FormatOptions, renderFormat } from './format-options.js';
import { nativeFormat } from './native.js';
import { openTasksFormat } from './open-tasks.js';
import { reminderFormat } from './reminder.js';

export type { FormatOptions } from './format-options.js';

/** The plan in Cairn's own format, as `renderPlan(plan, { format: 'native', ...options })` writes it. */
export function renderNative(plan: Plan, options: FormatOptions = {}): string {
  return renderFormat(nativeFormat, plan, options);
}

/** The plan as seed 000's checklist, as `renderPlan(plan, { format: 'checklist', ...options })` writes it. */
export function renderChecklist(plan: Plan, options: FormatOptions = {}): string {
  return renderFormat(checklistFormat, plan, options);
}

/** The plan as seed 003's reminder, as `renderPlan(plan, { format: 'reminder', ...options })` writes it. */
export function renderReminder(plan: Plan, options: FormatOptions = {}): string {
  return renderFormat(reminderFormat, plan, options);
}

/** The plan as seed 001's open tasks, as `renderPlan(plan, { format: 'open-tasks', ...options })` writes it. */
export function renderOpenTasks(plan: Plan, options: FormatOptions = {}): string {
  return renderFormat(openTasksFormat, plan, options);
}
