// Transaction origins as one tagged union, read in one place. Yjs hands every observer the origin a writer
// passed to `transact`/`applyUpdate`; Cairn writes pass the actor (a string), a Plan's undo manager replays with
// itself as origin, and adapters and connections pass themselves. `readOrigin` says which it was.
import type { Actor } from './schema.js';

export type TransactionOrigin =
  /** A write through a Plan or a Chat: the origin is its actor. */
  | { source: 'local'; actor: Actor }
  /** A Plan's undo manager replaying (undo or redo) a write of its actor. */
  | { source: 'undo'; actor: Actor }
  /** A storage adapter applying what it loaded. */
  | { source: 'store' }
  /** A sync connection applying a peer's update. */
  | { source: 'connection' }
  /** Anything else (a caller's own origin, or none). */
  | { source: 'unknown' };

const registered = new WeakMap<object, TransactionOrigin>();

/** Declares what an object used as a transaction origin stands for (an undo manager, an adapter). */
export function registerOrigin(value: object, origin: TransactionOrigin): void {
  registered.set(value, origin);
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
