// The one contract between Cairn's persistence layer and a place that keeps bytes (a log file, IndexedDB, a
// database table, a Durable Object's SQLite). Bytes and Promises only, so it runs in Node, a browser and workerd.
// What to write and when (batching, compaction, snapshots, errors) is decided once, above it (./stored-log.ts).

/**
 * Names one stored record inside one document's log, as the adapter chose it: a file's record number, an
 * IndexedDB auto-increment key, a table's row id. Unique among the records of that document for as long as a
 * lock on it is held, and a record appended later gets a larger key than any this holder has seen. The layer
 * above never interprets a key; it only hands keys back to `replace`.
 */
export type RecordKey = number;

/** One stored record: an opaque payload (one Yjs update, to the layer above) and its key. */
export interface StoredRecord {
  readonly key: RecordKey;
  readonly bytes: Uint8Array;
}

/** A held lock on one document's log, from {@link ByteStorageAdapter.lock}. */
export interface ByteLock {
  /** Lets go of the document. Idempotent. Another holder may take it once this resolves. */
  release(): Promise<void>;
}

/**
 * Keeps, per document `name`, an ordered log of byte records. Every method may reject: with a `CairnError`
 * (`locked`, `storage`, `invalid_argument`) when the adapter can say what is wrong, otherwise with any Error,
 * which the layer above reports as `storage`. A rejected call must leave what was stored before it intact.
 *
 * A document is used in this order: `lock`, then `read` once, then any number of `append` and `replace`, then
 * the lock's `release`. The layer above never runs two `append`/`replace` calls of one document at once.
 *
 * @example An adapter in memory (a Map of arrays) is about forty lines: see `memoryByteAdapter`
 * (persistence/memory-adapter.ts), which passes the same acceptance suite (`runByteAdapterTests` in
 * `@cairn/core/testing`) as the file and IndexedDB adapters.
 */
export interface ByteStorageAdapter {
  /**
   * Takes `name` for this holder until `release`. Rejects with CairnError `locked` while another holder has it
   * (naming who, where the adapter knows), and with `invalid_argument` if the adapter cannot store this name.
   * A store that is written by one runtime at a time only (a Durable Object) may grant it at once; a store
   * shared by writers who each keep what the others wrote (IndexedDB tabs, server instances on one database)
   * grants it shared, and its `replace` then keeps every record it was not told to remove.
   */
  lock(name: string): Promise<ByteLock>;

  /**
   * Every stored record of `name`, in the order they were stored (a `replace`d record stands where the adapter
   * put it: order does not matter to Yjs). Empty for a document never written. Rejects with CairnError `storage`
   * and `details.damage` for stored bytes it cannot read back whole, changing nothing.
   */
  read(name: string): Promise<StoredRecord[]>;

  /**
   * Stores `records` after every record stored so far, in order, and resolves with their keys (one per record,
   * same order). Once it resolves they survive the process being killed; `sync` (where present) makes them
   * survive a power loss too. An adapter that writes synchronously before returning (a file's `writeSync`)
   * also survives a kill between the call and its resolution; the layer calls it within the edit for that.
   */
  append(name: string, records: readonly Uint8Array[]): Promise<RecordKey[]>;

  /**
   * Atomically removes the records with exactly these `keys` and stores `record` in their place: a crash at any
   * point leaves either all the old records or the new one, never neither, and records appended meanwhile (or by
   * another holder) stay. Resolves with the new record's key. Used for compaction: `record` holds everything the
   * removed records held.
   */
  replace(name: string, keys: readonly RecordKey[], record: Uint8Array): Promise<RecordKey>;

  /**
   * Optional: makes every record appended so far survive a power loss, for adapters whose `append` resolves
   * before that (a file written now and fsynced in batches). Absent: `append` already is that durable.
   */
  sync?(name: string): Promise<void>;

  /**
   * Optional: the first-read snapshot stored beside `name` by `writeSnapshot`, or null. Bytes from
   * `encodeSnapshot` (snapshot.ts), whose position names the key of the last record it reflects (`{ key }`, or the
   * store's own `snapshotAt`); the layer checks it against `read`'s last key, so an adapter returns what it
   * stored, unchecked.
   */
  readSnapshot?(name: string): Promise<Uint8Array | null>;

  /**
   * Optional: replaces the first-read snapshot of `name`. Only a cache: a lost or torn write costs the next open
   * its fast first read, nothing else, so it need not be atomic with the records or synced.
   */
  writeSnapshot?(name: string, snapshot: Uint8Array): Promise<void>;
}
