// Chat turns a connection may write. A `system` turn is the one a model trusts most (wake-up notices, "since your
// last call"): over HTTP it needs an admin token (POST /api/plans/:plan/chat), and so over WebSocket. A client's
// update that sets a chat map's `role` to "system" is refused whole, before it is applied, so it is neither stored
// nor relayed (docs/decisions/034). Reading a role that is not one of the chat's roles as `user` (core's chat.ts)
// leaves "system" the only value to refuse.
import * as Y from 'yjs';
import { includesBytes } from '../bytes.js';

const SYSTEM = 'system';
const SYSTEM_BYTES = new TextEncoder().encode(SYSTEM);

/** Whether `update` writes the value "system" under a map key `role`, judged against what `doc` already holds. */
export function writesSystemRole(doc: Y.Doc, update: Uint8Array): boolean {
  // Any encoding of the string (a JSON value, a map entry) holds its UTF-8 bytes: most updates stop here.
  if (!includesBytes(update, SYSTEM_BYTES)) return false;
  const items = Y.decodeUpdate(update).structs.filter((s): s is Y.Item => s instanceof Y.Item);
  const byId = new Map(items.map((item) => [idKey(item.id), item]));
  // An entry written over an earlier one of its key names that one as its origin, not its key: follow it, in
  // this update or in the document. An origin found in neither (still missing) counts as the key `role`.
  const keyOf = (item: Y.Item): string | null | undefined => {
    for (let at: Y.Item | undefined = item, hops = 0; at && hops <= items.length; hops++) {
      if (at.parentSub !== null) return at.parentSub;
      if (!at.origin) return null;
      const next: Y.Item | undefined = byId.get(idKey(at.origin));
      if (next) {
        at = next;
        continue;
      }
      return storedKeyOf(doc, at.origin);
    }
    return undefined;
  };
  return items.some((item) => {
    if (!holdsSystem(item.content)) return false;
    const key = keyOf(item);
    return key === 'role' || key === undefined;
  });
}

function holdsSystem(content: Y.Item['content']): boolean {
  return (
    (content instanceof Y.ContentAny || content instanceof Y.ContentJSON) &&
    content.getContent().includes(SYSTEM)
  );
}

/** The key of a stored map entry; null for anything else; undefined when the document does not hold it. */
function storedKeyOf(doc: Y.Doc, id: Y.ID): string | null | undefined {
  if (id.clock >= Y.getState(doc.store, id.client)) return undefined;
  const struct = Y.getItem(doc.store, id);
  return struct instanceof Y.Item ? struct.parentSub : null;
}

function idKey(id: Y.ID): string {
  return `${id.client}:${id.clock}`;
}
