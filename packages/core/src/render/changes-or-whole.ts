// What a reader holding a cursor is told: what changed since it, or the whole plan in its place when the cursor is
// not one of this plan's, or so old that telling every change costs more tokens than the whole plan. One rule for
// the HTTP context route and MCP's plan_changes, each marking which answer it gave.
import { cursorKnown } from '../cursor.js';
import type { Plan } from '../plan.js';
import { type DeltaOptions, renderDelta } from './delta.js';
import { defaultTokenizer, type Tokenizer } from './tokenizer.js';

/** The whole plan, what changed since the cursor, or the whole plan in its place (and why). */
export type ContextKind = 'full' | 'delta' | 'full_unknown_cursor' | 'full_old_cursor';

/** Said before the whole plan when it stands in for what changed since a cursor. */
export const CURSOR_NOTES: Readonly<Partial<Record<ContextKind, string>>> = {
  full_unknown_cursor:
    "(The cursor given is not one of this plan's, so this is the whole plan rather than what changed.)\n\n",
  full_old_cursor:
    '(So much changed since the cursor given that the whole plan is shorter, so this is the whole plan rather ' +
    'than what changed.)\n\n',
};

export interface ChangesOrWholeOptions extends Omit<DeltaOptions, 'since' | 'tokenizer'> {
  /** The reader's cursor (readCursor), or null for the whole plan. */
  since: Uint8Array | null;
  /** Whether the document holds everything the cursor names. Default: asked of the plan's document. */
  known?: boolean;
  /** The whole plan as this reader gets it. Called only when it is needed. */
  whole: () => string;
  tokenizer?: Tokenizer;
}

export function changesOrWhole(
  plan: Plan,
  options: ChangesOrWholeOptions,
): { kind: ContextKind; text: string } {
  const { since, whole, known: knownOption, tokenizer = defaultTokenizer, ...delta } = options;
  if (since === null) return { kind: 'full', text: whole() };
  const known = knownOption ?? cursorKnown(plan.doc, since);
  if (!known) return { kind: 'full_unknown_cursor', text: whole() };
  const text = renderDelta(plan, { ...delta, since, tokenizer });
  if (text === '') return { kind: 'delta', text };
  const all = whole();
  return tokenizer.count(text) > tokenizer.count(all)
    ? { kind: 'full_old_cursor', text: all }
    : { kind: 'delta', text };
}
