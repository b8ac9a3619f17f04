// @cairn/core/indexeddb: browser persistence in y-indexeddb's database layout, with what y-indexeddb lacks:
// write errors reach onError and reject flush(), flush() waits for committed writes, and growth is bounded.
import * as Y from 'yjs';
import { CairnError } from '../errors.js';
import { type StoredPlan, storedPlan } from '../first-read.js';
import type { ByteLock, ByteStorageAdapter, RecordKey, StoredRecord } from '../persistence/adapter.js';
import { BoundDoc } from '../persistence/bound-doc.js';
import { StoredLog } from '../persistence/stored-log.js';
import type { CreatePlanOptions } from '../plan.js';
import type { DecodedSnapshot } from '../snapshot.js';
import type { DocPersistence } from '../storage.js';

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
  /** Fewest records after the compacted state that trigger a compaction (more for a large plan). Default 500. */
  records?: number;
  /** Bytes after the compacted state that trigger one, if more than the state itself. Default 16 KiB. */
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
  /** Bytes of the first record: the plan's whole state (`Y.encodeStateAsUpdate`) once it was compacted. */
  stateBytes: number;
  /**
   * @deprecated The same number as `stateBytes`, under a name that also meant the first-read snapshot; it will be
   * removed in a later minor version.
   */
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

class IndexedDBPersistenceImpl extends BoundDoc implements IndexedDBPersistence {
  readonly name: string;
  readonly dbName: string;
  /** The valid snapshot found by the load (only looked for when opened for a first read). */
  readonly firstSnapshot: Promise<DecodedSnapshot | null>;

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
    const dbName = `${options.prefix ?? ''}${name}`;
    const describeError = (error: unknown) =>
      asStorageError(error, `Could not store plan "${name}" in IndexedDB`);
    let opened: (log: StoredLog) => void = () => undefined;
    const whenOpened = new Promise<StoredLog>((resolve) => {
      opened = resolve;
    });
    const adapter = new IndexedDBByteAdapter({
      ...options,
      // Told once, when it happens, though nothing waits to be written: edits from now on are not stored.
      onLost: (error) => void whenOpened.then((log) => log.report(error, 'append')),
    });
    super(doc, {
      label: `plan "${name}"`,
      deferLoad: firstRead, // after the caller's first read, as the fs adapter does
      opened,
      describeError: (error) =>
        error instanceof CairnError
          ? error
          : asStorageError(error, `Could not load plan "${name}" from IndexedDB`),
      behindSnapshot: (ahead, records) => behindSnapshotError(dbName, ahead, records),
      open: ({ state, onError }) =>
        StoredLog.open(adapter, name, {
          state,
          onError,
          doc,
          shared: true,
          mergeBatch: true,
          compaction: options.compaction === false ? false : { ...DEFAULT_POLICY, ...options.compaction },
          describeError,
        }),
    });
    this.name = name;
    this.dbName = dbName;
    this.firstSnapshot = firstRead
      ? Promise.race([whenOpened.then((log) => log.firstSnapshot), this.whenLoaded.then(() => null)])
      : Promise.resolve(null);
    this.firstSnapshot.catch(() => undefined);
  }

  stats(): IndexedDBStats {
    const stats = this.log?.stats();
    return {
      dbName: this.dbName,
      records: stats?.records ?? 0,
      bytes: stats?.bytes ?? 0,
      stateBytes: stats?.firstBytes ?? 0,
      snapshotBytes: stats?.firstBytes ?? 0,
      compactions: stats?.compactions ?? 0,
    };
  }

  async compact(): Promise<void> {
    await this.whenLoaded;
    await this.log?.compact();
  }
}

function behindSnapshotError(
  dbName: string,
  ahead: { clients: number; operations: number },
  records: number,
) {
  const damage = { database: dbName, keptRecords: records, snapshot: { key: SNAPSHOT_KEY, ...ahead } };
  return new CairnError(
    'storage',
    `The IndexedDB database "${dbName}" is damaged: its ${records} records lack what its first-read ` +
      `snapshot saw (${ahead.operations} operations of ${ahead.clients} writers). The plan is not opened, so ` +
      'nothing overwrites the snapshot or the records; the snapshot stays in the "custom" store under ' +
      `"${SNAPSHOT_KEY}" (its content as plain data). A client that still holds the plan can sync it back.`,
    { database: dbName, damage },
  );
}

export interface IndexedDBByteAdapterOptions {
  /** The IndexedDB factory; default `globalThis.indexedDB` (pass fake-indexeddb's in Node). */
  indexedDB?: IDBFactory;
  /** Prefix of each document's database name; default ''. */
  prefix?: string;
  /** Transaction durability; default 'default'. */
  durability?: IDBTransactionDurability;
  /** Told when another connection deleted or upgraded a database this adapter holds (it closed it). */
  onLost?: (error: CairnError, name: string) => void;
}

/**
 * IndexedDB as a ByteStorageAdapter, in y-indexeddb's layout: a database per document, records in `updates`
 * (auto-increment keys), the first-read snapshot in `custom`. Its lock is shared: two tabs hold one plan at once,
 * and a `replace` removes only the records it names, so neither drops the other's.
 */
export class IndexedDBByteAdapter implements ByteStorageAdapter {
  private readonly open = new Map<string, { db: IDBDatabase | null; lost: CairnError | null }>();

  constructor(private readonly options: IndexedDBByteAdapterOptions = {}) {}

  async lock(name: string): Promise<ByteLock> {
    const factory = this.options.indexedDB ?? (globalThis as { indexedDB?: IDBFactory }).indexedDB;
    if (!factory) {
      throw new CairnError(
        'storage',
        'IndexedDB is not available here. In Node pass `indexedDB` (e.g. from fake-indexeddb) or use @cairn/core/fs.',
      );
    }
    const dbName = `${this.options.prefix ?? ''}${name}`;
    const db = await openDatabase(factory, dbName);
    const held: { db: IDBDatabase | null; lost: CairnError | null } = { db, lost: null };
    this.open.set(name, held);
    db.onversionchange = () => {
      db.close(); // not closing would block the other connection's delete or upgrade forever
      held.db = null;
      held.lost = new CairnError(
        'storage',
        `IndexedDB database "${dbName}" was deleted or upgraded by another connection (another tab?) and closed ` +
          'here; edits to this plan are no longer stored. Reopen the plan to store them again.',
        { dbName },
      );
      this.options.onLost?.(held.lost, name);
    };
    return {
      release: async () => {
        if (this.open.get(name) === held) this.open.delete(name);
        held.db?.close();
        held.db = null;
      },
    };
  }

  async read(name: string): Promise<StoredRecord[]> {
    const tx = this.db(name).transaction([UPDATES], 'readonly');
    const keys = tx.objectStore(UPDATES).getAllKeys();
    const values = tx.objectStore(UPDATES).getAll();
    await done(tx);
    const all = values.result as Uint8Array[];
    return keys.result.map((key, i) => ({ key: key as RecordKey, bytes: all[i]! }));
  }

  async append(name: string, records: readonly Uint8Array[]): Promise<RecordKey[]> {
    const tx = this.db(name).transaction([UPDATES], 'readwrite', { durability: this.durability });
    const added = records.map((record) => tx.objectStore(UPDATES).add(record));
    await done(tx);
    return added.map((request) => request.result as RecordKey);
  }

  async replace(name: string, keys: readonly RecordKey[], record: Uint8Array): Promise<RecordKey> {
    const tx = this.db(name).transaction([UPDATES], 'readwrite', { durability: this.durability });
    const store = tx.objectStore(UPDATES);
    for (const key of keys) store.delete(key);
    const added = store.add(record);
    await done(tx);
    return added.result as RecordKey;
  }

  async readSnapshot(name: string): Promise<Uint8Array | null> {
    const db = this.db(name);
    if (!db.objectStoreNames.contains(CUSTOM)) return null;
    const tx = db.transaction([CUSTOM], 'readonly');
    const request = tx.objectStore(CUSTOM).get(SNAPSHOT_KEY);
    await done(tx);
    return request.result instanceof Uint8Array ? request.result : null;
  }

  async writeSnapshot(name: string, snapshot: Uint8Array): Promise<void> {
    const db = this.db(name);
    if (!db.objectStoreNames.contains(CUSTOM)) return;
    const tx = db.transaction([CUSTOM], 'readwrite', { durability: this.durability });
    tx.objectStore(CUSTOM).put(snapshot, SNAPSHOT_KEY);
    await done(tx);
  }

  private get durability(): IDBTransactionDurability {
    return this.options.durability ?? 'default';
  }

  private db(name: string): IDBDatabase {
    const held = this.open.get(name);
    if (held?.lost) throw held.lost;
    if (!held?.db) throw new CairnError('storage', `IndexedDB for plan "${name}" is not open.`);
    return held.db;
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
