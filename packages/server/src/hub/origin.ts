// The transaction origins of a room's doc, read as the core TransactionOrigin extensions see, with the room's
// own connections named: one place decides what a connection's, a server-side writer's, a stored and a relayed
// update look like.
import { readOrigin, type TransactionOrigin } from '@cairn/core/protocol';
import { Connection } from './connection.js';
import type { RoomConnection } from './extension.js';

/** Origin of the transaction that applies stored updates: never stored again, never relayed. */
export const LOAD_ORIGIN = Symbol('cairn:load');

/** Reads a Yjs transaction origin (not LOAD_ORIGIN) as extensions see it. */
export function originOf(origin: unknown): TransactionOrigin<RoomConnection> {
  if (origin instanceof Connection) return { source: 'connection', connection: origin };
  const read = readOrigin(origin);
  // Only this hub's connections write to a room's doc: any other connection is no one the hub knows.
  return read.source === 'connection' ? { source: 'unknown' } : read;
}
