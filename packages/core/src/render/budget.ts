// Fitting a rendered plan into a token budget, in a fixed order of what to give up: finished tasks (oldest
// first), then finished steps, then whole step lists (summarised), and only then open tasks, from the end of
// the list. Whatever is left out is counted in a closing note, so no open task ever disappears silently.
import { isOpenStatus, type TaskSnapshot } from '../schema.js';
import { type FormatRenderer, Page } from './page.js';
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
  const { tops, omit } = page;
  hideByPolicy(view, tops, omit, options.done);
  const text = () => page.text();
  const max = options.maxTokens;
  if (max === undefined) return text();
  const tokenizer = options.tokenizer ?? defaultTokenizer;
  const fits = () => tokenizer.count(text()) <= max;
  if (fits()) return text();

  const shown = () => tops.filter((t) => !omit.hidden.has(t.id));
  const fromEnd = (list: TaskSnapshot[]) => [...list].reverse().map((t) => t.id);
  const stages: Array<[() => string[], Set<string>]> = [
    [
      () =>
        shown()
          .filter((t) => !isOpenStatus(t.status))
          .sort((a, b) => a.updatedAt - b.updatedAt || (a.id < b.id ? -1 : 1))
          .map((t) => t.id),
      omit.hidden,
    ],
    [
      () => fromEnd(shown().filter((t) => view.descendants(t.id).some((s) => !isOpenStatus(s.status)))),
      omit.closedStepsHidden,
    ],
    [() => fromEnd(shown().filter((t) => view.children(t.id).length > 0)), omit.collapsed],
    [() => fromEnd(shown()), omit.hidden],
  ];
  for (const [candidates, set] of stages) {
    if (giveUp(candidates(), set, fits)) break;
  }
  return text();
}

/** Adds the fewest of `candidates` (in order) to `set` for the text to fit; all of them if it never does. */
function giveUp(candidates: string[], set: Set<string>, fits: () => boolean): boolean {
  const apply = (k: number) => {
    candidates.forEach((id, i) => {
      if (i < k) set.add(id);
      else set.delete(id);
    });
  };
  if (candidates.length === 0) return false;
  apply(candidates.length);
  if (!fits()) return false;
  let lo = 1;
  let hi = candidates.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    apply(mid);
    if (fits()) hi = mid;
    else lo = mid + 1;
  }
  apply(lo);
  return true;
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
