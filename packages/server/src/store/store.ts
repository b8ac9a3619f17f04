// The contract between the sync hub and durable storage, so another backend (SQLite, a cloud store) can follow
// the disk one. The hub owns one Y.Doc per loaded plan; the store keeps its updates.

export interface PlanStore {
  /**
   * Takes ownership of a plan until `release` and returns its stored updates, oldest first (empty for a new plan).
   * `snapshot` returns the plan's whole current state (everything appended so far): the store calls it when it
   * compacts. Rejects with CairnError `storage` or `locked` (the plan is held by another process).
   */
  load(planId: string, snapshot: () => Uint8Array): Promise<Uint8Array[]>;
  /**
   * Stores one update of a loaded plan, in order. For the disk store the update survives `kill -9` once this
   * returns; `flush` makes it survive power loss. Throws CairnError `storage`; a failed append is repaired by the
   * next compaction, and until then `flush` rejects.
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
  /** Counters and gauges for /metrics. */
  metrics(): StoreMetrics;
  /** Plans whose log was found damaged and refused (until an operator repairs it); /healthz shows the count. */
  damagedLogs?(): DamagedLog[];
  /** Errors the store hits in the background (a scheduled fsync or compaction); returns an unsubscribe. */
  onError?(listener: (error: Error, planId: string) => void): () => void;
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
  /** When this store first refused it (ISO 8601). */
  since: string;
}
