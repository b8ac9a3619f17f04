// Whether an update would change a document, without applying it: a read-only client's sync step 2 normally
// repeats what the server has (Yjs always sends the whole delete set), and only a real change counts as a write.
import * as Y from 'yjs';

export type DecodedUpdate = ReturnType<typeof Y.decodeUpdate>;

export function changesDoc(doc: Y.Doc, update: DecodedUpdate): boolean {
  for (const struct of update.structs) {
    if (struct instanceof Y.Skip) continue;
    if (struct.id.clock + struct.length > Y.getState(doc.store, struct.id.client)) return true;
  }
  if (update.ds.clients.size === 0) return false;
  const have = Y.createDeleteSetFromStructStore(doc.store);
  for (const [client, ranges] of update.ds.clients) {
    const mine = have.clients.get(client) ?? [];
    for (const range of ranges) if (!covered(mine, range.clock, range.len)) return true;
  }
  return false;
}

// `ranges` is sorted and merged (createDeleteSetFromStructStore joins adjacent deleted structs).
function covered(ranges: readonly { clock: number; len: number }[], clock: number, len: number): boolean {
  let lo = 0;
  let hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = ranges[mid]!;
    if (r.clock + r.len <= clock) lo = mid + 1;
    else if (r.clock > clock) hi = mid - 1;
    else return clock + len <= r.clock + r.len;
  }
  return false;
}
