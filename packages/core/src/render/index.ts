// renderPlan: the plan as the text a model sees in its context, in one of the seeds' formats or Cairn's own,
// within a token budget. An empty result means there is nothing to show, so a section can be skipped.
import { CairnError } from '../errors.js';
import type { Plan } from '../plan.js';
import type { Actor } from '../schema.js';
import { type BudgetOptions, renderWithin } from './budget.js';
import { checklistFormat } from './checklist.js';
import { nativeFormat } from './native.js';
import { openTasksFormat } from './open-tasks.js';
import type { FormatRenderer } from './page.js';
import { reminderFormat } from './reminder.js';
import { PlanView, type Presence } from './view.js';

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
export interface RenderOptions extends BudgetOptions {
  /** `checklist` (seed 000), `reminder` (seed 003), `open-tasks` (seed 001) or `native`. */
  format: RenderFormat;
  /** Who reads it: their claims show as "yours" and they are left out of "Here now". Default: the plan's actor. */
  actor?: Actor;
  /** Who is connected and on what, from awareness. Default: unknown (nothing is said about presence). */
  presence?: Iterable<Presence> | null;
  /**
   * The time (ms since the epoch) for ages and the done window, rounded down to its quarter hour (`renderClock`),
   * so rendering an unchanged plan twice within a quarter hour gives the same bytes. Default: `Date.now()`.
   */
  now?: number;
  /**
   * How actors are named to the reader (assignees, who is here), e.g. the display names a page shows. Default:
   * the actor ids. Only the native format names actors.
   */
  nameOf?: (actor: Actor) => string;
  /** Native format: show each task's number (`num`, as a page shows it) before its title. Default false. */
  numbers?: boolean;
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
  if (options.maxTokens !== undefined && !(Number.isInteger(options.maxTokens) && options.maxTokens > 0)) {
    throw new CairnError('invalid_argument', 'maxTokens must be a positive integer.');
  }
  const view = new PlanView(plan, options);
  return renderWithin(format, view, options);
}
