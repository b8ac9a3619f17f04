// Reading and re-encoding awareness updates, so the hub can drop entries a connection may not speak for
// before they reach the shared Awareness. Same layout as y-protocols/awareness.
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';

export interface AwarenessEntry {
  clientId: number;
  clock: number;
  /** The state as JSON text, `null` for "this client left". */
  json: string;
  removed: boolean;
}

/**
 * Throws on a truncated update, a state that is not JSON, or more than `maxEntries` entries (checked before any
 * entry is read, so a huge frame costs nothing to refuse).
 */
export function decodeAwarenessUpdate(
  update: Uint8Array,
  maxEntries = Number.POSITIVE_INFINITY,
): AwarenessEntry[] {
  const decoder = decoding.createDecoder(update);
  const count = decoding.readVarUint(decoder);
  if (count > maxEntries)
    throw new Error(`${count} entries; at most ${maxEntries} are accepted in one message`);
  const entries: AwarenessEntry[] = [];
  for (let i = 0; i < count; i++) {
    const clientId = decoding.readVarUint(decoder);
    const clock = decoding.readVarUint(decoder);
    const json = decoding.readVarString(decoder);
    const state: unknown = JSON.parse(json);
    entries.push({ clientId, clock, json, removed: state === null });
  }
  return entries;
}

export function encodeAwarenessEntries(entries: readonly AwarenessEntry[]): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, entries.length);
  for (const entry of entries) {
    encoding.writeVarUint(encoder, entry.clientId);
    encoding.writeVarUint(encoder, entry.clock);
    encoding.writeVarString(encoder, entry.json);
  }
  return encoding.toUint8Array(encoder);
}
