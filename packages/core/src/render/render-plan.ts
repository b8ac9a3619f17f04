// renderPlan: the plan as the text a model sees in its context, in one of the seeds' formats or Cairn's own
// picked by name, within a token budget. An empty result means there is nothing to show, so a section can be
// skipped. It carries all four formats; `@cairn/core/render` offers each alone.
import { CairnError } from '../errors.js';
import type { Plan } from '../plan.js';
import { checklistFormat } from './checklist.js';
import { type FormatOptions, renderFormat } from './format-options.js';
import { nativeFormat } from './native.js';
import { openTasksFormat } from './open-tasks.js';
import type { FormatRenderer } from './page.js';
import { reminderFormat } from './reminder.js';

/** The formats `renderPlan` writes (docs/TOOLS.md, "Rendering"). */
export const RENDER_FORMATS = ['checklist', 'reminder', 'open-tasks', 'native'] as const;
/** One of `RENDER_FORMATS`. */
export type RenderFormat = (typeof RENDER_FORMATS)[number];

const FORMATS: Record<RenderFormat, FormatRenderer> = {
  checklist: checklistFormat,
  reminder: reminderFormat,
  'open-tasks': openTasksFormat,
  native: nativeFormat,
};

/** The format, reader and token budget of a render: the options of `renderPlan`. */
export interface RenderOptions extends FormatOptions {
  /** `checklist` (seed 000), `reminder` (seed 003), `open-tasks` (seed 001) or `native`. */
  format: RenderFormat;
}

/**
 * The plan as the text a model reads, in one of `RENDER_FORMATS`, within `maxTokens` (done tasks and details go
 * first when the budget is short). Stable: the same plan renders to the same bytes.
 */
export function renderPlan(plan: Plan, options: RenderOptions): string {
  const format = FORMATS[options.format];
  if (!format) {
    throw new CairnError(
      'invalid_argument',
      `Unknown render format "${String(options.format)}"; formats: ${RENDER_FORMATS.join(', ')}.`,
      { valid: [...RENDER_FORMATS] },
    );
  }
  return renderFormat(format, plan, options);
}
