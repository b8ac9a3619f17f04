// Fitting a rendered plan into a token budget, in a fixed order of what to give up: finished tasks (oldest
// first), then finished steps, then whole step lists (summarised), and only then open tasks, from the end of
// the list. Whatever is left out is counted in a closing note, so no open task ever disappears silently.
//
// A budget is small next to a large plan (2,000 tokens is about 100 lines of a 1,000-task plan), so the search
// reads only what can fit. It moves through the order of giving up one task at a time on an estimate that
// adds up each block's size, measured once (tally.ts), rejecting a stage as soon as what it shows is over; then
// it counts the text it arrives at whole, and steps until that count, not the estimate, decides.
import { isOpenStatus, type TaskSnapshot } from '../schema.js';
import { type FormatRenderer, Page } from './page.js';
import { Pieces, Tally } from './tally.js';
import { defaultTokenizer, type Tokenizer } from './tokenizer.js';
import type { Omissions, PlanView } from './view.js';

export interface DonePolicy {
  /** Show at most this many finished top-level tasks (the most recently closed). */
  keep?: number;
  /** Show only finished tasks closed within this many milliseconds. */
  withinMs?: number;
}

export interface BudgetOptions {
  /** Fit the text into this many tokens (as `tokenizer` counts them). Default: no limit. */
  maxTokens?: number;
  /** Default: `defaultTokenizer` (an estimate; pass `cl100kTokenizer` from `@cairn/core/tokenizer` to count exactly). */
  tokenizer?: Tokenizer;
  /** Which finished tasks to show at all, budget or not. Default: all. */
  done?: DonePolicy;
}

/**
 * Renders with `format`, applying the done policy, then giving things up in order until the text fits. If even
 * the headings and the note do not fit, the smallest text is returned; a caller that must stay under a hard
 * cap should check the count.
 */
export function renderWithin(format: FormatRenderer, view: PlanView, options: BudgetOptions): string {
  const page = new Page(format, view);
  hideByPolicy(view, page.tops, page.omit, options.done);
  const max = options.maxTokens;
  if (max === undefined) return page.text();
  const tokenizer = options.tokenizer ?? defaultTokenizer;
  const order = new GiveUpOrder(page);
  estimate(page, order, new Pieces(page, tokenizer), max);
  return settle(page, order, tokenizer, max);
}

/**
 * Moves `order` to the fewest give-ups that fit by the estimate: past every stage that does not fit even
 * when given up in full, then back within the first that does while it still fits. Only the blocks that can
 * fit are rendered and counted: a stage far over the budget is rejected as soon as its shown part is over.
 */
function estimate(page: Page, order: GiveUpOrder, pieces: Pieces, max: number): void {
  let tally = Tally.fitting(page, pieces, max);
  while (!tally && order.toStageEnd()) tally = Tally.fitting(page, pieces, max);
  if (!tally) return;
  for (let top = order.back(); top !== null; top = order.back()) {
    tally.update(top);
    if (tally.total() > max) {
      order.forward();
      return;
    }
  }
}

/**
 * Counts the text whole where the estimate ended and moves a give-up at a time until it is exact: forward
 * while over the budget, back while one fewer still fits. The estimate is close, so this is two counts or a few.
 */
function settle(page: Page, order: GiveUpOrder, tokenizer: Tokenizer, max: number): string {
  let text = page.text();
  if (tokenizer.count(text) > max) {
    while (order.forward()) {
      text = page.text();
      if (tokenizer.count(text) <= max) return text;
    }
    return text;
  }
  while (order.back() !== null) {
    const more = page.text();
    if (tokenizer.count(more) > max) {
      order.forward();
      break;
    }
    text = more;
  }
  return text;
}

interface Stage {
  /** Where giving a task up is recorded. */
  set(omit: Omissions): Set<string>;
  /** The top-level tasks to give up, in order, chosen with every earlier stage given up in full. */
  candidates(page: Page): TaskSnapshot[];
}

const shownTops = (page: Page) => page.tops.filter((t) => page.shown(t));
const fromEnd = (tops: TaskSnapshot[]) => tops.reverse();

const STAGES: readonly Stage[] = [
  {
    set: (omit) => omit.hidden,
    candidates: (page) =>
      shownTops(page)
        .filter((t) => !isOpenStatus(t.status))
        .sort((a, b) => a.updatedAt - b.updatedAt || (a.id < b.id ? -1 : 1)),
  },
  // The next two stages name every shown task, without reading its steps: a plan far over the budget would
  // otherwise be read whole to choose tasks that are then left out anyway. Hiding the finished steps of a task
  // that has none changes nothing, and the page makes a collapse only where the summary is shorter than the
  // steps it replaces (never for a task without steps), deciding that for the tasks it shows, when it shows them.
  {
    set: (omit) => omit.closedStepsHidden,
    candidates: (page) => fromEnd(shownTops(page)),
  },
  {
    set: (omit) => omit.collapsed,
    candidates: (page) => fromEnd(shownTops(page)),
  },
  { set: (omit) => omit.hidden, candidates: (page) => fromEnd(shownTops(page)) },
];

/**
 * A position in the order of giving up, moved one top-level task at a time. Each stage's candidates are
 * chosen when it is first reached; coming back to that point, the page is the same, so they are kept.
 */
class GiveUpOrder {
  private readonly lists: TaskSnapshot[][];
  private stage = 0;
  /** How many of the current stage's candidates are given up; every earlier stage is given up in full. */
  private given = 0;

  constructor(private readonly page: Page) {
    this.lists = [STAGES[0]!.candidates(page)];
  }

  /** Gives up one more; false when everything is given up. */
  forward(): boolean {
    while (this.given === this.lists[this.stage]!.length) {
      if (this.stage === STAGES.length - 1) return false;
      this.stage++;
      this.lists[this.stage] ??= STAGES[this.stage]!.candidates(this.page);
      this.given = 0;
    }
    const top = this.lists[this.stage]![this.given++]!;
    STAGES[this.stage]!.set(this.page.omit).add(top.id);
    return true;
  }

  /** Takes back the last give-up and returns its task; null when nothing is given up. */
  back(): TaskSnapshot | null {
    while (this.given === 0) {
      if (this.stage === 0) return null;
      this.stage--;
      this.given = this.lists[this.stage]!.length;
    }
    const top = this.lists[this.stage]![--this.given]!;
    STAGES[this.stage]!.set(this.page.omit).delete(top.id);
    return top;
  }

  /** Gives up the rest of the current stage, or all of the next when it is done; false when none is left. */
  toStageEnd(): boolean {
    if (!this.forward()) return false;
    while (this.given < this.lists[this.stage]!.length) this.forward();
    return true;
  }
}

function hideByPolicy(
  view: PlanView,
  tops: readonly TaskSnapshot[],
  omit: Omissions,
  policy?: DonePolicy,
): void {
  if (!policy || (policy.keep === undefined && policy.withinMs === undefined)) return;
  const closed = tops.filter((t) => !isOpenStatus(t.status)).sort((a, b) => b.updatedAt - a.updatedAt);
  closed.forEach((task, i) => {
    const tooMany = policy.keep !== undefined && i >= policy.keep;
    const tooOld = policy.withinMs !== undefined && view.now - task.updatedAt > policy.withinMs;
    if (tooMany || tooOld) omit.hidden.add(task.id);
  });
}
