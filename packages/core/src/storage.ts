// The storage contract every persistence adapter meets (fs, IndexedDB, the server's store).
// An adapter binds one Y.Doc to durable storage; the shared acceptance suite in ./testing checks it.
import type * as Y from 'yjs';
import type { CairnError } from './errors.js';

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
