// The byte adapter of a Durable Object: documents' records in the object's own SQLite (`ctx.storage.sql`), each
// row with its CRC-32, so the one persistence layer (StoredLog) decides batching, compaction, snapshots and errors
// here as for every other store. Tables and their upgrade from schema 1: docs/STORAGE.md, decision 050.
import { CairnError } from '@cairn/core';
import {
  type ByteLock,
  crc32,
  type ImmediateByteAdapter,
  type RecordKey,
  type StoredRecord,
} from '@cairn/core/protocol';
import type { DurableObjectStorage } from './workers-types.js';

/** Bumped when the tables below change; an object written by a newer version is refused, never rewritten. */
export const SQLITE_SCHEMA_VERSION = 2;

/** Where damage is reported: the table, as a path the operator can look at with SQL. */
export const SQLITE_LOG_PATH = 'sqlite:cairn_updates';
export const SQLITE_SNAPSHOT_PATH = 'sqlite:cairn_snapshots';

export interface SqliteByteAdapterOptions {
  /**
   * The document an object of schema 1 holds (its plan id): that schema kept one document per object with no
   * name, so the upgrade to schema 2 names its rows and snapshot after it. An object of schema 1 opened without
   * it is refused, never guessed at.
   */
  schema1Document?: string;
}

interface Row extends Record<string, unknown> {
  seq: number;
  data: ArrayBuffer;
  crc: number;
}

/**
 * Keeps each document's records as rows of `cairn_updates` (`seq` is the record key, growing for the object's
 * life) and its first-read snapshot in `cairn_snapshots`. SQL calls are synchronous: `append` has written its
 * rows when it returns, so StoredLog hands it each update within the edit (`appendNow`); `sync` resolves
 * once they are durable (`ctx.storage.sync()`). A Durable Object is the one writer of its storage: `lock` grants at
 * once, and holders share the records (`replace` removes exactly the keys it is given).
 */
export class SqliteByteAdapter implements ImmediateByteAdapter {
  /** Opens the tables, creating them or upgrading schema 1 in one transaction; refuses another version. */
  constructor(
    private readonly storage: DurableObjectStorage,
    options: SqliteByteAdapterOptions = {},
  ) {
    const sql = storage.sql;
    sql.exec('CREATE TABLE IF NOT EXISTS cairn_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)');
    const version = sql
      .exec<{ value: string }>("SELECT value FROM cairn_meta WHERE key = 'schema'")
      .toArray()[0]?.value;
    if (version === undefined) {
      storage.transactionSync(() => {
        sql.exec(
          'CREATE TABLE cairn_updates (seq INTEGER PRIMARY KEY AUTOINCREMENT, data BLOB NOT NULL, crc INTEGER NOT NULL, doc TEXT NOT NULL)',
        );
        createSchema2(storage);
      });
    } else if (version === '1') {
      upgradeSchema1(storage, options.schema1Document);
    } else if (Number(version) !== SQLITE_SCHEMA_VERSION) {
      throw new CairnError(
        'storage',
        `This Durable Object's storage has schema version ${version}; this version of Cairn reads ${SQLITE_SCHEMA_VERSION}.`,
        { schema: version },
      );
    }
  }

  async lock(_name: string): Promise<ByteLock> {
    return { release: async () => {} };
  }

  async read(name: string): Promise<StoredRecord[]> {
    return this.checkedRecords(name);
  }

  /**
   * Every record of `name` in order, each checked against its CRC: synchronous, for a read that answers before
   * the log is opened. Throws CairnError `storage` with `details.damage` at the first row that fails it.
   */
  checkedRecords(name: string): StoredRecord[] {
    const rows = this.storage.sql
      .exec<Row>('SELECT seq, data, crc FROM cairn_updates WHERE doc = ? ORDER BY seq', name)
      .toArray();
    return rows.map((row, index) => {
      const bytes = new Uint8Array(row.data);
      if (crc32(bytes) !== row.crc >>> 0) throw damaged(name, row.seq, index, rows.length, bytes);
      return { key: row.seq, bytes };
    });
  }

  /** The key of the last record of `name`, unchecked; undefined for a document never written. */
  lastKey(name: string): RecordKey | undefined {
    return (
      this.storage.sql
        .exec<{ seq: number | null }>('SELECT MAX(seq) AS seq FROM cairn_updates WHERE doc = ?', name)
        .one().seq ?? undefined
    );
  }

  async append(name: string, records: readonly Uint8Array[]): Promise<RecordKey[]> {
    return this.appendNow(name, records);
  }

  appendNow(name: string, records: readonly Uint8Array[]): RecordKey[] {
    return this.storage.transactionSync(() => records.map((bytes) => this.insert(name, bytes)));
  }

  async replace(name: string, keys: readonly RecordKey[], record: Uint8Array): Promise<RecordKey> {
    return this.storage.transactionSync(() => {
      // One bound parameter whatever the count (a Durable Object limits bindings per query).
      this.storage.sql.exec(
        'DELETE FROM cairn_updates WHERE doc = ? AND seq IN (SELECT value FROM json_each(?))',
        name,
        JSON.stringify(keys),
      );
      return this.insert(name, record);
    });
  }

  /** The object's writes commit on their own; this resolves once they are on disk. */
  async sync(_name: string): Promise<void> {
    await this.storage.sync();
  }

  async readSnapshot(name: string): Promise<Uint8Array | null> {
    return this.snapshot(name);
  }

  /** The stored first-read snapshot of `name`, synchronous (see `checkedRecords`). */
  snapshot(name: string): Uint8Array | null {
    const row = this.storage.sql
      .exec<{ data: ArrayBuffer }>('SELECT data FROM cairn_snapshots WHERE doc = ?', name)
      .toArray()[0];
    return row ? new Uint8Array(row.data) : null;
  }

  async writeSnapshot(name: string, snapshot: Uint8Array): Promise<void> {
    this.storage.sql.exec('INSERT OR REPLACE INTO cairn_snapshots (doc, data) VALUES (?, ?)', name, snapshot);
  }

  private insert(name: string, bytes: Uint8Array): RecordKey {
    return this.storage.sql
      .exec<{ seq: number }>(
        'INSERT INTO cairn_updates (doc, data, crc) VALUES (?, ?, ?) RETURNING seq',
        name,
        bytes,
        crc32(bytes),
      )
      .one().seq;
  }
}

/** What schema 2 adds beside `cairn_updates` (whose `doc` column names the document a row belongs to). */
function createSchema2(storage: DurableObjectStorage): void {
  const sql = storage.sql;
  sql.exec('CREATE INDEX cairn_updates_doc ON cairn_updates (doc, seq)');
  sql.exec('CREATE TABLE cairn_snapshots (doc TEXT PRIMARY KEY, data BLOB NOT NULL)');
  sql.exec(
    "INSERT OR REPLACE INTO cairn_meta (key, value) VALUES ('schema', ?)",
    String(SQLITE_SCHEMA_VERSION),
  );
}

/**
 * Schema 1 held one unnamed document: `cairn_updates` without `doc`, and `cairn_snapshot` (one row, id 1). Its
 * rows gain the document's name and keep their bytes, checksums and `seq` (a damaged row stays as damaged as it
 * was, and a snapshot at a `seq` stays valid); all of it or none of it, in one transaction.
 */
function upgradeSchema1(storage: DurableObjectStorage, document: string | undefined): void {
  if (document === undefined) {
    throw new CairnError(
      'storage',
      "This Durable Object's storage has schema version 1 (one unnamed document); open it with that document's name to upgrade it.",
      { schema: '1' },
    );
  }
  const sql = storage.sql;
  storage.transactionSync(() => {
    sql.exec("ALTER TABLE cairn_updates ADD COLUMN doc TEXT NOT NULL DEFAULT ''");
    sql.exec('UPDATE cairn_updates SET doc = ?', document);
    createSchema2(storage);
    sql.exec('INSERT INTO cairn_snapshots (doc, data) SELECT ?, data FROM cairn_snapshot', document);
    sql.exec('DROP TABLE cairn_snapshot');
  });
}

function damaged(name: string, seq: number, index: number, rows: number, bytes: Uint8Array): CairnError {
  const damage = {
    path: SQLITE_LOG_PATH,
    offset: seq,
    keptRecords: index,
    recordsAfter: rows - index - 1,
    damagedBytes: bytes.byteLength,
  };
  return new CairnError(
    'storage',
    `"${name}" is refused: its stored log is damaged at record ${seq} (checksum mismatch).`,
    { name, damage },
  );
}
