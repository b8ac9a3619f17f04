// Transaction origins as one tagged union, read in one place. Yjs hands every observer the origin a writer
// passed to `transact`/`applyUpdate`; Cairn writes pass the actor (a string), a Plan's undo manager replays with
// itself as origin, adapters and connections pass themselves, and a relay between servers passes a `remoteOrigin`.
// `readOrigin` says which it was; the sync server hands the same union to its extensions.
import type { Actor } from './schema.js';

/**
 * Where a transaction came from. `Connection` is what a host knows of a sync connection (the server's
 * `RoomConnection`; the client's own provider here).
 */
export type TransactionOrigin<Connection = unknown> =
  /** A write through a Plan or a Chat (or the server's own code): the origin is its actor. */
  | { readonly source: 'local'; readonly actor: Actor }
  /** A Plan's undo manager replaying (undo or redo) a write of its actor. */
  | { readonly source: 'undo'; readonly actor: Actor }
  /** A storage adapter applying what it loaded. */
  | { readonly source: 'store' }
  /** A sync connection applying a peer's update. */
  | { readonly source: 'connection'; readonly connection: Connection }
  /**
   * An update brought in from outside, such as another server of a cluster (`via: 'redis'`): whoever brought it
   * leaves it out of what it sends on, so it never echoes. `stored`: durable already where it entered, so a store
   * does not store it again.
   */
  | { readonly source: 'remote'; readonly via: string; readonly stored: boolean }
  /** Anything else (a caller's own origin, or none). */
  | { readonly source: 'unknown' };

const registered = new WeakMap<object, TransactionOrigin>();

/** Declares what an object used as a transaction origin stands for (an undo manager, an adapter). */
export function registerOrigin(value: object, origin: TransactionOrigin): void {
  registered.set(value, origin);
}

/** A fresh transaction origin for an update brought in `via` a relay: reads back as `remote`. */
export function remoteOrigin(via: string, stored: boolean): object {
  const origin = {};
  registerOrigin(origin, { source: 'remote', via, stored });
  return origin;
}

export function readOrigin(origin: unknown): TransactionOrigin {
  if (typeof origin === 'string') return { source: 'local', actor: origin };
  if (typeof origin === 'object' && origin !== null) {
    const known = registered.get(origin);
    if (known) return known;
  }
  return { source: 'unknown' };
}

/** The actor a local transaction was made for, when its origin names one. */
export function originActor(origin: unknown): Actor | null {
  const read = readOrigin(origin);
  return read.source === 'local' || read.source === 'undo' ? read.actor : null;
}
