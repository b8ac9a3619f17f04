// @cairn/core/indexeddb: browser persistence in y-indexeddb's database layout, with what y-indexeddb lacks:
// write errors reach onError and reject flush(), flush() waits for committed writes, and growth is bounded.
import * as Y from 'yjs';
import { CairnError } from '../errors.js';
import { type StoredPlan, storedPlan } from '../first-read.js';
import type { CreatePlanOptions } from '../plan.js';
import { type DecodedSnapshot, decodeSnapshot, encodeSnapshot, snapshotAhead } from '../snapshot.js';
import { applyStored, type DocPersistence } from '../storage.js';

/** y-indexeddb 9's layout: one database per plan, updates in an auto-increment store, a key-value store beside. */
const UPDATES = 'updates';
const CUSTOM = 'custom';
/**
 * Key in `custom` of the first-read snapshot (see snapshot.ts), whose position is `{ key }`: the key of the last
 * record in `updates` it reflects. Keys only grow, so any record added after it (by any writer) makes it stale.
 */
export const SNAPSHOT_KEY = 'cairn:first-read';

/** When to merge the stored updates into one record: the fs log's rule (see its CompactionPolicy). */
export interface IndexedDBCompactionPolicy {
  /** Fewest records after the snapshot that trigger a compaction (more for a large plan). Default 500. */
  records?: number;
  /** Bytes after the snapshot that trigger one, if more than the snapshot itself. Default 16 KiB. */
  minBytes?: number;
}

export interface IndexedDBPersistenceOptions {
  /** The IndexedDB factory; default `globalThis.indexedDB` (pass fake-indexeddb's in Node). */
  indexedDB?: IDBFactory;
  /** Prefix of each plan's database name; default '' (the plan name itself, as y-indexeddb does). */
  prefix?: string;
  /**
   * Transaction durability. Default 'default' (the browser's choice, which may report a commit before it reached
   * the disk: safe against a tab or browser crash, not always against an OS crash). 'strict' asks for the flush.
   */
  durability?: IDBTransactionDurability;
  /** Default `{ records: 500, minBytes: 16384 }`; `false` never compacts (except to recover from a failure). */
  compaction?: IndexedDBCompactionPolicy | false;
}

export interface IndexedDBStats {
  dbName: string;
  /** Records and bytes this instance knows are stored (another tab's writes are counted once compacted). */
  records: number;
  bytes: number;
  snapshotBytes: number;
  compactions: number;
}

export interface IndexedDBPersistence extends DocPersistence {
  readonly name: string;
  readonly dbName: string;
  stats(): IndexedDBStats;
  /** Merges every stored record (this instance's and others') into one, now. */
  compact(): Promise<void>;
}

export type OpenIndexedDBPersistence = (name: string, doc: Y.Doc) => IndexedDBPersistence;

/**
 * IndexedDB persistence: `openIndexedDBPersistence()(name, doc)` loads the plan into `doc` and stores every later
 * update. Two instances of one plan (two tabs) may be open at once: both write to the same store and each
 * compaction keeps the other's records, so a reopen sees both. The database layout is y-indexeddb's, so data
 * written by a plain `IndexeddbPersistence` loads here and the other way round.
 */
export function openIndexedDBPersistence(
  options: IndexedDBPersistenceOptions = {},
): OpenIndexedDBPersistence {
  return (name, doc) => new IndexedDBPersistenceImpl(name, doc, options, false);
}

/**
 * Opens a stored plan for a fast first read: in the transaction that reads the stored records, the snapshot in
 * `custom` is checked first (it must reflect the last record) and `firstRead` answers from it while the records
 * load into a fresh doc. Writes wait for `whenHydrated`.
 */
export function openIndexedDBPlan(
  name: string,
  options: IndexedDBPersistenceOptions & { plan?: Omit<CreatePlanOptions, 'doc'> } = {},
): StoredPlan<IndexedDBPersistence> {
  const doc = new Y.Doc();
  const persistence = new IndexedDBPersistenceImpl(name, doc, options, true);
  return storedPlan(persistence, doc, persistence.firstSnapshot, options.plan);
}

const DEFAULT_POLICY: Required<IndexedDBCompactionPolicy> = { records: 500, minBytes: 16 * 1024 };

class IndexedDBPersistenceImpl implements IndexedDBPersistence {
  readonly name: string;
  readonly dbName: string;
  readonly whenLoaded: Promise<void>;

  private readonly doc: Y.Doc;
  private readonly durability: IDBTransactionDurability;
  private readonly policy: Required<IndexedDBCompactionPolicy> | null;
  private db: IDBDatabase | null = null;
  /** Set when the connection was closed under us (another connection deleted or upgraded the database). */
  private lost: CairnError | null = null;
  private loadFailure: CairnError | null = null;
  private closed = false;
  private closing: Promise<void> | null = null;
  private readonly listeners = new Set<(error: CairnError) => void>();
  private unflushed: CairnError[] = [];

  /** Updates not yet handed to a transaction. */
  private pending: Uint8Array[] = [];
  /** A failed write left a gap: the next write stores the whole state instead of the batch. */
  private rewriteNeeded = false;
  private queue: Promise<unknown> = Promise.resolve();
  private writeQueued = false;
  private compactionQueued = false;

  private records = 0;
  private bytes = 0;
  private snapshotBytes = 0;
  private compactions = 0;
  /** Keys of the records this instance knows its doc holds: the close writes a snapshot only if these are all. */
  private knownKeys = new Set<IDBValidKey>();
  /** The valid snapshot found by the load (only looked for when opened for a first read). */
  readonly firstSnapshot: Promise<DecodedSnapshot | null>;
  private readonly wantSnapshot: boolean;
  private tellSnapshot: (snapshot: DecodedSnapshot | null) => void = () => undefined;

  constructor(name: string, doc: Y.Doc, options: IndexedDBPersistenceOptions, firstRead: boolean) {
    if (typeof name !== 'string' || name.length === 0) {
      throw new CairnError(
        'invalid_argument',
        'A plan name must be a non-empty string, e.g. "biz:42:conv:7".',
        {
          field: 'name',
        },
      );
    }
    this.name = name;
    this.dbName = `${options.prefix ?? ''}${name}`;
    this.doc = doc;
    this.durability = options.durability ?? 'default';
    this.policy = options.compaction === false ? null : { ...DEFAULT_POLICY, ...options.compaction };
    // Registered before the first await: edits made while the database opens are queued, not lost.
    doc.on('update', this.onUpdate);
    doc.on('destroy', this.onDestroy);
    if (doc.store.clients.size > 0) this.pending.push(Y.encodeStateAsUpdate(doc));
    const factory = options.indexedDB ?? (globalThis as { indexedDB?: IDBFactory }).indexedDB;
    this.wantSnapshot = firstRead;
    this.firstSnapshot = new Promise((resolve) => {
      this.tellSnapshot = resolve;
    });
    this.whenLoaded = this.load(factory);
    this.whenLoaded.finally(() => this.tellSnapshot(null)).catch(() => undefined);
    this.whenLoaded.catch(() => undefined); // a caller that only awaits flush() sees the failure there
  }

  private async load(factory: IDBFactory | undefined): Promise<void> {
    try {
      if (!factory) {
        throw new CairnError(
          'storage',
          'IndexedDB is not available here. In Node pass `indexedDB` (e.g. from fake-indexeddb) or use @cairn/core/fs.',
        );
      }
      const db = await openDatabase(factory, this.dbName);
      db.onversionchange = () => this.loseConnection(db);
      const hasCustom = db.objectStoreNames.contains(CUSTOM);
      const tx = db.transaction(hasCustom ? [UPDATES, CUSTOM] : [UPDATES], 'readonly');
      // Requests complete in order: the snapshot, then the record keys (the snapshot is checked against the last
      // and the first read served), then the records. One transaction, so all see the same stored state.
      // Read at every open, not only for a first read: the records are checked against it before they load.
      const snapshot = hasCustom ? tx.objectStore(CUSTOM).get(SNAPSHOT_KEY) : null;
      const keys = tx.objectStore(UPDATES).getAllKeys();
      if (snapshot && this.wantSnapshot)
        keys.addEventListener('success', () => this.checkSnapshot(snapshot.result, keys.result));
      const request = tx.objectStore(UPDATES).getAll();
      await done(tx);
      const stored = request.result as Uint8Array[];
      this.knownKeys = new Set(keys.result);
      if (this.closed) {
        db.close();
        return;
      }
      // Our listener is off while the stored state is applied (see applyStored); what others wrote in reaction
      // to the load is queued like any edit.
      this.doc.off('update', this.onUpdate);
      let reaction: Uint8Array | null;
      try {
        reaction = applyStored(this.doc, stored, this);
        this.refuseIfBehindSnapshot(snapshot?.result, stored.length);
      } catch (error) {
        db.close(); // refused: hold no connection (it would block another tab's upgrade or delete)
        throw error;
      } finally {
        this.doc.on('update', this.onUpdate);
      }
      if (reaction) this.pending.push(reaction);
      this.records = stored.length;
      this.bytes = stored.reduce((sum, update) => sum + update.byteLength, 0);
      this.snapshotBytes = stored[0]?.byteLength ?? 0;
      this.db = db;
      if (this.shouldCompact()) this.queueCompaction();
      this.queueWrite();
    } catch (error) {
      this.loadFailure = asStorageError(error, `Could not load plan "${this.name}" from IndexedDB`);
      this.detach();
      throw this.loadFailure;
    }
  }

  /**
   * Refuses records that lack what the stored snapshot saw (every record cleared, the newest or one in the middle
   * deleted): loaded, they would pass for the whole plan, and the next compaction would make it so for good.
   * Checked on the loaded doc (its state vector, which leaves out updates waiting for a lost one), so it costs no
   * second load; the doc then holds what the records gave, and nothing is ever stored from it.
   */
  private refuseIfBehindSnapshot(bytes: unknown, records: number): void {
    const decoded = bytes instanceof Uint8Array ? decodeSnapshot(bytes) : null;
    if (!decoded) return;
    const ahead = snapshotAhead(decoded.stateVector, Y.encodeStateVector(this.doc));
    if (!ahead) return;
    const damage = {
      database: this.dbName,
      keptRecords: records,
      snapshot: { key: SNAPSHOT_KEY, ...ahead },
    };
    throw new CairnError(
      'storage',
      `The IndexedDB database "${this.dbName}" is damaged: its ${records} records lack what its first-read ` +
        `snapshot saw (${ahead.operations} operations of ${ahead.clients} writers). The plan is not opened, so ` +
        'nothing overwrites the snapshot or the records; the snapshot stays in the "custom" store under ' +
        `"${SNAPSHOT_KEY}" (its content as plain data). A client that still holds the plan can sync it back.`,
      { database: this.dbName, damage },
    );
  }

  /** Tells the first read the stored snapshot, if it sits at the last stored record (else null). */
  private checkSnapshot(bytes: unknown, keys: IDBValidKey[]): void {
    const decoded = bytes instanceof Uint8Array ? decodeSnapshot(bytes) : null;
    const last = keys.at(-1);
    const at = decoded?.at as { key?: unknown } | undefined;
    this.tellSnapshot(decoded && last !== undefined && at?.key === last ? decoded : null);
  }

  private readonly onUpdate = (update: Uint8Array, origin: unknown): void => {
    if (origin === this || this.closed || this.loadFailure) return;
    if (this.lost) {
      this.rewriteNeeded = true; // nothing can be stored; flush() keeps saying so
      return;
    }
    this.pending.push(update);
    if (this.db) this.queueWrite();
  };

  private readonly onDestroy = (): void => {
    this.close().catch((error: unknown) => this.report(error));
  };

  async flush(): Promise<void> {
    await this.whenLoaded;
    if (!this.closed) {
      if (this.rewriteNeeded && !this.lost) this.queueCompaction();
      else this.queueWrite();
      await this.queue;
      if (this.lost && (this.rewriteNeeded || this.pending.length > 0) && this.unflushed.length === 0) {
        this.unflushed.push(this.lost);
      }
    }
    const [first] = this.unflushed;
    this.unflushed = [];
    if (first) throw first;
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    let error: unknown = null;
    if (!this.loadFailure) {
      try {
        await this.flush();
        await this.writeSnapshot();
      } catch (caught) {
        error = caught;
      }
    }
    this.closed = true;
    this.detach();
    this.db?.close();
    this.db = null;
    if (error) throw error;
  }

  onError(listener: (error: CairnError) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stats(): IndexedDBStats {
    return {
      dbName: this.dbName,
      records: this.records,
      bytes: this.bytes,
      snapshotBytes: this.snapshotBytes,
      compactions: this.compactions,
    };
  }

  async compact(): Promise<void> {
    await this.whenLoaded;
    if (this.closed) return;
    this.queueCompaction();
    await this.queue;
    const [first] = this.unflushed;
    if (first) throw first;
  }

  /**
   * Stores the first-read snapshot of the doc at close, if the doc holds exactly what is stored: every record in
   * the store is one this instance loaded or wrote, and nothing waits to be written. Otherwise the old snapshot
   * stays, stale (a newer record exists), and is ignored.
   */
  private async writeSnapshot(): Promise<void> {
    const db = this.db;
    if (!db || this.lost || this.rewriteNeeded || !db.objectStoreNames.contains(CUSTOM)) return;
    const tx = db.transaction([UPDATES, CUSTOM], 'readwrite', { durability: this.durability });
    const keys = tx.objectStore(UPDATES).getAllKeys();
    keys.onsuccess = () => {
      const all = keys.result;
      if (all.length === 0 || this.pending.length > 0 || !all.every((key) => this.knownKeys.has(key))) return;
      const snapshot = encodeSnapshot(this.doc, { key: all.at(-1) });
      if (snapshot) tx.objectStore(CUSTOM).put(snapshot, SNAPSHOT_KEY);
    };
    await done(tx);
  }

  private shouldCompact(): boolean {
    if (!this.policy) return false;
    const tailRecords = this.records - 1;
    const tailBytes = this.bytes - this.snapshotBytes;
    return (
      tailRecords >= Math.max(this.policy.records, this.snapshotBytes / 256) ||
      tailBytes >= Math.max(this.policy.minBytes, this.snapshotBytes)
    );
  }

  // One write job per batch: every update that arrived before the job starts goes into one merged record.
  private queueWrite(): void {
    if (this.writeQueued || this.pending.length === 0) return;
    this.writeQueued = true;
    this.enqueue(async () => {
      this.writeQueued = false;
      if (this.rewriteNeeded) return this.compactNow();
      const batch = this.pending;
      this.pending = [];
      if (batch.length === 0) return;
      const db = this.connection();
      const update = batch.length === 1 ? batch[0]! : Y.mergeUpdates(batch);
      try {
        const tx = db.transaction([UPDATES], 'readwrite', { durability: this.durability });
        const added = tx.objectStore(UPDATES).add(update);
        await done(tx);
        this.knownKeys.add(added.result);
      } catch (error) {
        this.rewriteNeeded = true; // the batch is still in the doc: the next write stores the whole state
        throw error;
      }
      this.records++;
      this.bytes += update.byteLength;
      if (this.shouldCompact()) this.queueCompaction();
    });
  }

  private queueCompaction(): void {
    if (this.compactionQueued) return;
    this.compactionQueued = true;
    this.enqueue(async () => {
      this.compactionQueued = false;
      await this.compactNow();
    });
  }

  /**
   * Replaces every stored record by one: the doc's state merged with whatever is stored (another tab's writes
   * included), in one readwrite transaction, so no concurrent write falls between the read and the clear.
   */
  private async compactNow(): Promise<void> {
    const db = this.connection();
    let state: Uint8Array | null = null;
    let key: IDBValidKey | null = null;
    const hasCustom = db.objectStoreNames.contains(CUSTOM);
    try {
      const tx = db.transaction(hasCustom ? [UPDATES, CUSTOM] : [UPDATES], 'readwrite', {
        durability: this.durability,
      });
      const store = tx.objectStore(UPDATES);
      const request = store.getAll();
      // Synchronous inside the success callback: the transaction stays active only while a request is handled.
      request.onsuccess = () => {
        this.pending = []; // the doc's state below covers them
        const merged = new Y.Doc();
        Y.applyUpdate(merged, Y.encodeStateAsUpdate(this.doc));
        for (const update of request.result as Uint8Array[]) Y.applyUpdate(merged, update);
        state = Y.encodeStateAsUpdate(merged);
        store.clear();
        const added = store.add(state);
        // The first-read snapshot goes in the same transaction as the record it reflects.
        added.onsuccess = () => {
          key = added.result;
          const snapshot = hasCustom ? encodeSnapshot(merged, { key }) : null;
          if (snapshot) tx.objectStore(CUSTOM).put(snapshot, SNAPSHOT_KEY);
          merged.destroy();
        };
      };
      await done(tx);
    } catch (error) {
      this.rewriteNeeded = true;
      throw error;
    }
    const size = (state as Uint8Array | null)?.byteLength ?? 0;
    this.knownKeys = new Set(key === null ? [] : [key]);
    this.rewriteNeeded = false;
    this.records = 1;
    this.bytes = size;
    this.snapshotBytes = size;
    this.compactions++;
  }

  private connection(): IDBDatabase {
    if (this.lost) throw this.lost;
    if (!this.db) throw new CairnError('storage', `IndexedDB for plan "${this.name}" is not open.`);
    return this.db;
  }

  private loseConnection(db: IDBDatabase): void {
    db.close(); // not closing would block the other connection's delete or upgrade forever
    this.db = null;
    if (this.closed) return;
    this.lost = new CairnError(
      'storage',
      `IndexedDB database "${this.dbName}" was deleted or upgraded by another connection (another tab?) and closed ` +
        'here; edits to this plan are no longer stored. Reopen the plan to store them again.',
      { dbName: this.dbName },
    );
    if (this.pending.length > 0) this.rewriteNeeded = true;
    this.pending = [];
    this.report(this.lost);
  }

  private enqueue(job: () => Promise<void>): void {
    const run = this.queue.then(job).catch((error: unknown) => {
      if (error !== this.lost) this.report(error); // a lost connection was reported once, when it happened
    });
    this.queue = run;
  }

  private report(error: unknown): void {
    const err = asStorageError(error, `Could not store plan "${this.name}" in IndexedDB`);
    this.unflushed.push(err);
    queueMicrotask(() => {
      if (this.listeners.size === 0) {
        console.error(`[cairn] plan "${this.name}": ${err.message}`);
        return;
      }
      for (const listener of this.listeners) {
        try {
          listener(err);
        } catch {
          // A throwing listener must not hide the error from the others.
        }
      }
    });
  }

  private detach(): void {
    this.doc.off('update', this.onUpdate);
    this.doc.off('destroy', this.onDestroy);
  }
}

function openDatabase(factory: IDBFactory, name: string): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = factory.open(name);
    request.onupgradeneeded = () => {
      const db = request.result;
      if (!db.objectStoreNames.contains(UPDATES)) db.createObjectStore(UPDATES, { autoIncrement: true });
      if (!db.objectStoreNames.contains(CUSTOM)) db.createObjectStore(CUSTOM);
    };
    request.onsuccess = () => {
      const db = request.result;
      if (!db.objectStoreNames.contains(UPDATES)) {
        db.close();
        reject(
          new CairnError(
            'storage',
            `IndexedDB database "${name}" exists but has no "${UPDATES}" store: it is not a plan. Use another name or prefix.`,
            { dbName: name },
          ),
        );
        return;
      }
      resolve(db);
    };
    request.onerror = () => reject(request.error);
    request.onblocked = () => undefined; // waits for the other connections to close, then succeeds
  });
}

/** Resolves when the transaction commits; rejects when it aborts or fails. */
function done(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new Error('transaction aborted'));
  });
}

function asStorageError(error: unknown, context: string): CairnError {
  if (error instanceof CairnError) return error;
  const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return new CairnError('storage', `${context}: ${reason}`, {}, { cause: error });
}
