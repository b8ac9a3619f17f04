// Order among siblings: a fractional index (`rank`) with the task id as tie-break. Yjs has no move, and
// delete+insert duplicates an item under concurrent moves, so order is a sortable key written like any field.
import { generateKeyBetween, generateNKeysBetween } from 'fractional-indexing';

export interface Ranked {
  id: string;
  rank: string;
}

export function compareRanked(a: Ranked, b: Ranked): number {
  if (a.rank !== b.rank) return a.rank < b.rank ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

export function rankBetween(before: string | null, after: string | null): string {
  return generateKeyBetween(before, after);
}

export function ranksBetween(before: string | null, after: string | null, n: number): string[] {
  return generateNKeysBetween(before, after, n);
}

/** A rank that fits strictly between `before` and `after` as seen in sibling order, or null when they tie. */
export function tryRankBetween(before: string | null, after: string | null): string | null {
  if (before !== null && after !== null && before >= after) return null;
  return generateKeyBetween(before, after);
}
