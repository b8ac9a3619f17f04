// Writing a whole string into a Y.Text as the smallest edit (common prefix and suffix kept), so a title that
// two people edit at once merges character by character instead of one overwrite winning.
import type * as Y from 'yjs';

/** Writes `next` into `ytext` as one delete and one insert between the common prefix and suffix. */
export function setText(ytext: Y.Text, next: string): void {
  const prev = ytext.toString();
  if (prev === next) return;
  let start = 0;
  const max = Math.min(prev.length, next.length);
  while (start < max && prev.charCodeAt(start) === next.charCodeAt(start)) start++;
  let endPrev = prev.length;
  let endNext = next.length;
  while (
    endPrev > start &&
    endNext > start &&
    prev.charCodeAt(endPrev - 1) === next.charCodeAt(endNext - 1)
  ) {
    endPrev--;
    endNext--;
  }
  if (endPrev > start) ytext.delete(start, endPrev - start);
  if (endNext > start) ytext.insert(start, next.slice(start, endNext));
}
