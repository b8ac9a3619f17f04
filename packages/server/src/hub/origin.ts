// The transaction origins of a room's doc, read as the tagged UpdateOrigin extensions see: one place decides
// what a connection's, a server-side writer's, a stored and a relayed update look like.
import { readOrigin } from '@cairn/core/protocol';
import { Connection } from './connection.js';
import type { UpdateOrigin } from './extension.js';

/** Origin of the transaction that applies stored updates: never stored again, never relayed. */
export const LOAD_ORIGIN = Symbol('cairn:load');

/** The Yjs origin of an update an extension brought in from outside (`PlanRoom.applyRemote`). */
export class RemoteOrigin {
  readonly source = 'remote';
  constructor(
    readonly via: string,
    /** Durable already where it entered: not stored again here. */
    readonly stored: boolean,
  ) {}
}

/** Reads a Yjs transaction origin (not LOAD_ORIGIN) as an UpdateOrigin. */
export function originOf(origin: unknown): UpdateOrigin {
  if (origin instanceof Connection) return { source: 'connection', connection: origin };
  if (origin instanceof RemoteOrigin) return origin;
  // Everything else is server-side code; core reads which actor it wrote (or undid) for.
  const local = readOrigin(origin);
  return { source: 'local', actor: local.source === 'local' || local.source === 'undo' ? local.actor : null };
}
