// The contract between the sync hub and durable storage, so another backend (SQLite, a cloud store) can follow
// the disk one. The hub owns one Y.Doc per loaded plan; the store keeps its updates.
import type { DecodedSnapshot } from '@cairn/core/protocol';
import type * as Y from 'yjs';

export interface PlanStore {
  /**
   * Takes ownership of a plan until `release` and returns its stored updates, oldest first (empty for a new plan).
   * `snapshot` returns the plan's whole current state (everything appended so far): the store calls it when it
   * compacts. `doc` is the plan's document, for the store to read (never write): the disk store keeps a
   * first-read snapshot of its content. Rejects with CairnError `storage` or `locked` (the plan is held by
   * another process).
   */
  load(planId: string, snapshot: () => Uint8Array, doc?: Y.Doc): Promise<Uint8Array[]>;
  /**
   * Stores one update of a loaded plan, in order. Must not wait on the disk: the hub calls it on the relay's
   * path. The disk store writes the updates of one turn of the event loop together at its end (they survive
   * `kill -9` from then on); `flush` writes what waits at once and makes it survive power loss. A failed write is
   * reported through `onError` and repaired by the next compaction, and until then `flush` rejects.
   */
  append(planId: string, update: Uint8Array): void;
  /** Resolves once every update appended before the call is durably stored; rejects with CairnError `storage`. */
  flush(planId: string): Promise<void>;
  /** Replaces the plan's history by one snapshot now (the store also does it on its own as history grows). */
  compact(planId: string): Promise<void>;
  /** Flushes, then lets go of the plan (files, locks, memory). */
  release(planId: string): Promise<void>;
  /** Releases every plan and the store itself. */
  close(): Promise<void>;
  /** Throws CairnError `invalid_argument` if this store cannot hold a plan with this id (checked before a load). */
  validatePlanId?(planId: string): void;
  /**
   * The content of a plan that is not loaded from this store, from a snapshot that reflects exactly what the
   * store holds (decisions/019): null when there is none, or it is stale or corrupt. Cheap (no history is read),
   * so a read can answer before the plan loads.
   */
  firstRead?(planId: string): DecodedSnapshot | null;
  /**
   * Checks a plan once its stored updates are applied to `doc` (for a store that keeps nothing to check them
   * against before): throws CairnError `storage` with `details.damage` to refuse the plan (the store then holds
   * nothing of it, and lists it in `damagedLogs` until a load succeeds).
   */
  verifyLoaded?(planId: string, doc: Y.Doc): void;
  /** Counters and gauges for /metrics. */
  metrics(): StoreMetrics;
  /** Plans whose log was found damaged and refused (until an operator repairs it); /healthz shows the count. */
  damagedLogs?(): DamagedLog[];
  /**
   * Errors the store hits in the background: writing appended updates (`what: 'append'`), a scheduled fsync or
   * a compaction. Returns an unsubscribe.
   */
  onError?(listener: (error: Error, planId: string, what?: 'append') => void): () => void;
}

export interface StoreMetrics {
  /** Plans currently loaded. */
  plans: number;
  appends: number;
  appendedBytes: number;
  compactions: number;
  /** Failed appends, fsyncs and compactions since start. */
  errors: number;
  /** Bytes currently held for loaded plans (on disk or in memory). */
  bytes: number;
  /** Plans refused because their log is damaged, not yet repaired. */
  damagedLogs: number;
  /** Incomplete last records cut off logs at load (writes a crash cut short) since start. */
  tornTails: number;
}

/** A plan the store refuses to load because its log is damaged: what is left, and where. */
export interface DamagedLog {
  planId: string;
  path: string;
  /** Offset of the first damaged byte. */
  offset: number;
  /** Intact records before the damage and after it. */
  keptRecords: number;
  recordsAfter: number;
  /** Bytes that hold no intact record: what is lost unless a client still holds those edits. */
  damagedBytes: number;
  /**
   * Set when the log lacks what the plan's first-read snapshot saw (emptied, deleted, cut): the snapshot file and
   * the operations (of how many writers) it reflects that the log does not hold.
   */
  snapshot?: { path: string; clients: number; operations: number };
  /** When this store first refused it (ISO 8601). */
  since: string;
}
