// Cursors: where a reader left off in a plan's document, as an opaque string it hands back later ("what is new
// since?"). Inside, a cursor is the document's Yjs state vector, base64url-encoded; it is exact across merges,
// since a chat message or task edit is new exactly when its Yjs item was created past the reader's vector.
import * as Y from 'yjs';
import { CairnError } from './errors.js';

/** The cursor of a document as it is now. */
export function cursorOf(doc: Y.Doc): string {
  return toBase64Url(Y.encodeStateVector(doc));
}

/** The state vector inside a cursor; a malformed cursor is an `invalid_argument` that says what a cursor is. */
export function readCursor(cursor: string): Uint8Array {
  const bad = () =>
    new CairnError(
      'invalid_argument',
      `"${cursor.length > 40 ? `${cursor.slice(0, 39)}…` : cursor}" is not a cursor. A cursor is the opaque ` +
        'string an earlier answer gave (its "cursor" field or Cairn-Cursor header); leave it out to read everything.',
      { field: 'since' },
    );
  if (!/^[A-Za-z0-9_-]{1,4096}$/.test(cursor)) throw bad();
  try {
    const bytes = fromBase64Url(cursor);
    Y.decodeStateVector(bytes);
    return bytes;
  } catch {
    throw bad();
  }
}

/**
 * Whether the document has seen everything a cursor's vector names. A cursor from another document (or another
 * server's copy that had edits this one lacks) is not: what changed since it cannot be told, only the whole.
 */
export function cursorKnown(doc: Y.Doc, since: Uint8Array): boolean {
  const have = Y.decodeStateVector(Y.encodeStateVector(doc));
  for (const [client, clock] of Y.decodeStateVector(since)) if ((have.get(client) ?? 0) < clock) return false;
  return true;
}

// btoa and atob rather than Buffer: the root entry runs in browsers and workers too.
function toBase64Url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64Url(text: string): Uint8Array {
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}
