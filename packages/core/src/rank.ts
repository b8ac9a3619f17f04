// Order among siblings: a fractional index (`rank`) with the task id as tie-break. Yjs has no move, and
// delete+insert duplicates an item under concurrent moves, so order is a sortable key written like any field.
import { generateNKeysBetween } from 'fractional-indexing';

export interface Ranked {
  id: string;
  rank: string;
}

export function compareRanked(a: Ranked, b: Ranked): number {
  if (a.rank !== b.rank) return a.rank < b.rank ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** `n` ranks in a row after `last` (null: an empty list). */
export function freshRanksAfter(last: string | null, n: number): string[] {
  return generateNKeysBetween(last, null, n);
}

/**
 * `n` ranks after `rank`, or null when `rank` is not a well-formed key (the one test of validity: fractional-indexing
 * refuses to build after a malformed key). The check and the new keys in one pass, for appending after the last
 * valid sibling.
 */
export function ranksAfterIfValid(rank: string, n: number): string[] | null {
  if (rank === '') return null;
  try {
    return generateNKeysBetween(rank, null, n);
  } catch {
    return null;
  }
}

/** `n` fresh ranks for a whole sibling list, in order. */
export function freshRanks(n: number): string[] {
  return generateNKeysBetween(null, null, n);
}

/**
 * Whether a stored rank is a well-formed key. A rank can be missing for a moment when updates arrive out of
 * order (the delete of the old value applies before the insert of the new one), or malformed in a document
 * written by someone else; such siblings are skipped when computing a new position.
 */
export function isValidRank(rank: string): boolean {
  return ranksAfterIfValid(rank, 1) !== null;
}

/**
 * `n` ranks for new positions in a row before `siblings[index]` (siblings in display order), or null when the
 * valid neighbours tie and the siblings need new ranks.
 */
export function ranksAt(siblings: readonly Ranked[], index: number, n = 1): string[] | null {
  let prev: string | null = null;
  for (let i = index - 1; i >= 0 && prev === null; i--)
    if (isValidRank(siblings[i]!.rank)) prev = siblings[i]!.rank;
  let next: string | null = null;
  for (let i = index; i < siblings.length && next === null; i++) {
    if (isValidRank(siblings[i]!.rank)) next = siblings[i]!.rank;
  }
  if (prev !== null && next !== null && prev >= next) return null;
  return generateNKeysBetween(prev, next, n);
}
