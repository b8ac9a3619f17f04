// Keyword search over a plan's tasks, closed ones included: every query word must match the start of a word in
// the title, next step, note or context values. Deliberately lexical (seed 001: tasks are indexed for keyword
// search but never vectorised, so a finished booking does not resurface by similarity weeks later).
import type { Plan } from './plan.js';
import { isOpenStatus, type Json, type ListFilter, type TaskSnapshot } from './schema.js';
import { markParsed } from './validate.js';

export interface SearchOptions {
  /** Which tasks to search: `all` (default), `open` or `closed`. */
  state?: 'open' | 'closed' | 'all';
  /** At most this many hits (default 20). */
  limit?: number;
}

export interface SearchHit {
  task: TaskSnapshot;
  /**
   * Higher is better: title matches weigh more than matches elsewhere, a whole word twice a word's start, and a
   * title holding the query's words in a row (or being exactly them) more still.
   */
  score: number;
  /** The fields that matched at least one query word. */
  fields: Array<'title' | 'nextStep' | 'note' | 'context'>;
}

const WEIGHTS = { title: 3, nextStep: 2, note: 1, context: 1 } as const;
type Field = keyof typeof WEIGHTS;

/** Lower-cased words without diacritics, so "Café" matches "cafe". */
export function searchWords(text: string): string[] {
  return (
    text
      .normalize('NFKD')
      .replace(/\p{M}+/gu, '')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? []
  );
}

const PHRASE_BONUS = 5;
const EXACT_TITLE_BONUS = 10;

/** Tasks matching every word of `query`, best first (score, then open before closed, then most recent). */
export function searchTasks(plan: Plan, query: string, options: SearchOptions = {}): SearchHit[] {
  const terms = [...new Set(searchWords(query))];
  if (terms.length === 0) return [];
  const state = options.state ?? 'all';
  const hits: SearchHit[] = [];
  for (const task of plan.list(stateFilter(state))) {
    const words: Record<Field, string[]> = {
      title: searchWords(task.title),
      nextStep: searchWords(task.nextStep ?? ''),
      note: searchWords(task.note),
      context: searchWords(contextText(task.context)),
    };
    let score = 0;
    const fields = new Set<Field>();
    let all = true;
    for (const term of terms) {
      let best = 0;
      for (const field of Object.keys(WEIGHTS) as Field[]) {
        // "1" is a whole word of "Task number 1" and only the start of one in "Task number 19".
        const match = words[field].some((w) => w === term)
          ? 2
          : words[field].some((w) => w.startsWith(term))
            ? 1
            : 0;
        if (match > 0) {
          fields.add(field);
          best = Math.max(best, WEIGHTS[field] * match);
        }
      }
      if (best === 0) {
        all = false;
        break;
      }
      score += best;
    }
    if (!all) continue;
    if (words.title.join(' ') === terms.join(' ')) score += EXACT_TITLE_BONUS;
    else if (inARow(words.title, terms)) score += PHRASE_BONUS;
    hits.push({ task, score, fields: [...fields] });
  }
  hits.sort(
    (a, b) =>
      b.score - a.score ||
      Number(isOpenStatus(b.task.status)) - Number(isOpenStatus(a.task.status)) ||
      b.task.updatedAt - a.task.updatedAt ||
      (a.task.id < b.task.id ? -1 : 1),
  );
  return hits.slice(0, options.limit ?? 20);
}

/** Whether `terms` appear as whole words one after another in `words`. */
function inARow(words: readonly string[], terms: readonly string[]): boolean {
  for (let i = 0; i + terms.length <= words.length; i++) {
    if (terms.every((term, j) => words[i + j] === term)) return true;
  }
  return false;
}

function contextText(context: Record<string, Json>): string {
  const parts: string[] = [];
  const walk = (value: Json): void => {
    if (value === null) return;
    if (Array.isArray(value)) value.forEach(walk);
    else if (typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) {
        parts.push(key);
        walk(inner);
      }
    } else parts.push(String(value));
  };
  walk(context);
  return parts.join(' ');
}

const STATE_FILTERS = new Map<unknown, ListFilter>(
  (['open', 'closed', 'all'] as const).map((state) => [state, markParsed(Object.freeze({ state }))]),
);

/** The list filter for a state: a known one as built here (nothing to parse); anything else for the plan to refuse. */
function stateFilter(state: unknown): ListFilter {
  return STATE_FILTERS.get(state) ?? ({ state } as ListFilter);
}
