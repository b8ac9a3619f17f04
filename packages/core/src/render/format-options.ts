// What every format's render takes, and the one path they all go through: check the budget, read the plan into
// a view, write the format within the budget. Each format's own function (`renderNative`, …) and `renderPlan`
// (which picks one by name) share it, so a page that imports one format ships only that one.
import { CairnError } from '../errors.js';
import type { Plan } from '../plan.js';
import type { Actor } from '../schema.js';
import { type BudgetOptions, renderWithin } from './budget.js';
import type { FormatRenderer } from './page.js';
import { PlanView, type Presence } from './view.js';

/** The reader and token budget of a render in a given format: the options of `renderNative` and its siblings. */
export interface FormatOptions extends BudgetOptions {
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

/** The plan written in `format` within `options.maxTokens`. */
export function renderFormat(format: FormatRenderer, plan: Plan, options: FormatOptions): string {
  if (options.maxTokens !== undefined && !(Number.isInteger(options.maxTokens) && options.maxTokens > 0)) {
    throw new CairnError('invalid_argument', 'maxTokens must be a positive integer.');
  }
  return renderWithin(format, new PlanView(plan, options), options);
}
