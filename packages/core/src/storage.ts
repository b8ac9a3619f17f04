// The storage contract every persistence adapter meets (fs, IndexedDB, the server's store).
// An adapter binds one Y.Doc to durable storage; the shared acceptance suite in ./testing checks it.
import * as Y from 'yjs';
import type { CairnError } from './errors.js';
import { registerOrigin } from './origins.js';

/** A Y.Doc bound to durable storage, as returned by an adapter's `open` function. */
export interface DocPersistence {
  /** Resolves once the stored state has been applied to the doc; rejects with a CairnError (`storage`, `locked`). */
  readonly whenLoaded: Promise<void>;
  /** Resolves once every update the doc has seen so far is durably stored; rejects if a write failed. */
  flush(): Promise<void>;
  /** Flushes, then releases files, locks and connections. The doc stays usable but is no longer stored. */
  close(): Promise<void>;
  /** Write errors after the load; each one also rejects the next `flush()`. Returns an unsubscribe function. */
  onError(listener: (error: CairnError) => void): () => void;
}

/** Opens the plan stored under `name` into `doc`. Adapters apply loaded updates with themselves as origin. */
export type OpenPersistence = (name: string, doc: Y.Doc) => DocPersistence;

/**
 * Applies a plan's stored updates to `doc` in one transaction with `origin` (the adapter). The caller keeps its
 * own 'update' listener off meanwhile: with one attached, Yjs encodes the whole loaded state once more only for
 * the listener to ignore it. What other code writes in reaction to the load (an observer, such as a Plan
 * repairing an integer alias after a merge) would then go unseen, so it is returned, for the caller to store.
 */
export function applyStored(doc: Y.Doc, stored: readonly Uint8Array[], origin: object): Uint8Array | null {
  registerOrigin(origin, { source: 'store' });
  let loaded: Uint8Array | null = null;
  let othersWrote = false;
  const watch = (transaction: Y.Transaction) => {
    if (transaction.origin !== origin) othersWrote = true;
  };
  doc.on('afterTransaction', watch);
  try {
    Y.transact(
      doc,
      () => {
        for (const update of stored) Y.applyUpdate(doc, update, origin);
        loaded = Y.encodeStateVector(doc);
      },
      origin,
    );
  } finally {
    doc.off('afterTransaction', watch);
  }
  return othersWrote && loaded ? Y.encodeStateAsUpdate(doc, loaded) : null;
}
