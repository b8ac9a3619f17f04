// A scratch copy of a plan's live content (tasks, tombstones, meta) without its history or the chat, for
// plan.atomic's dry runs: it costs the size of the plan, not of everything the document ever recorded.
import * as Y from 'yjs';
import { DOC_KEYS } from './schema.js';

const PLAN_KEYS = [DOC_KEYS.tasks, DOC_KEYS.removed, DOC_KEYS.meta] as const;

export function scratchCopy(doc: Y.Doc): Y.Doc {
  const copy = new Y.Doc();
  copy.transact(() => {
    for (const key of PLAN_KEYS) {
      if (!doc.share.has(key)) continue;
      const target = copy.getMap<unknown>(key);
      for (const [field, value] of doc.getMap<unknown>(key)) target.set(field, copyValue(value));
    }
  });
  return copy;
}

function copyValue(value: unknown): unknown {
  if (value instanceof Y.Map) {
    const map = new Y.Map<unknown>();
    for (const [key, inner] of value) map.set(key, copyValue(inner));
    return map;
  }
  if (value instanceof Y.Text) return new Y.Text(value.toString());
  if (value instanceof Y.Array) {
    const array = new Y.Array<unknown>();
    array.push(value.toArray().map(copyValue));
    return array;
  }
  return value;
}
