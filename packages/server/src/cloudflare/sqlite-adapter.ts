// The byte adapter of a Durable Object: documents' records in the object's own SQLite (`ctx.storage.sql`), each
// row with its CRC-32, so the one persistence layer (StoredLog) decides batching, compaction, snapshots and errors
// here as for every other store. A record or snapshot larger than a row may hold is split over rows of parts.
// Tables and their upgrades from schemas 1 and 2: docs/STORAGE.md, decisions 050 and 056.
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
export const SQLITE_SCHEMA_VERSION = 3;

/** Where damage is reported: the table, as a path the operator can look at with SQL. */
export const SQLITE_LOG_PATH = 'sqlite:cairn_updates';
export const SQLITE_PARTS_PATH = 'sqlite:cairn_update_parts';
export const SQLITE_SNAPSHOT_PATH = 'sqlite:cairn_snapshots';

/**
 * Cloudflare refuses a Durable Object SQLite row whose string or BLOB passes 2 MB (local workerd does not). 1 MiB
 * stays under it whether "MB" means 10^6 or 2^20 bytes, with room for the row's other columns; a smaller part
 * costs one more row per MiB of a compacted state, nothing a plan notices.
 */
export const SQLITE_DEFAULT_CHUNK_BYTES = 1024 * 1024;
/** The largest part allowed: 2 MB less 100 kB for the row's other columns (the document's name, seq, checksum). */
export const SQLITE_MAX_CHUNK_BYTES = 1_900_000;

export interface SqliteByteAdapterOptions {
  /**
   * The document an object of schema 1 holds (its plan id): that schema kept one document per object with no
   * name, so the upgrade names its rows and snapshot after it. An object of schema 1 opened without it is
   * refused, never guessed at.
   */
  schema1Document?: string;
  /**
   * The most bytes of a record or snapshot one row holds; a larger one is split over rows of parts, written in
   * one transaction and put together on read. Default {@link SQLITE_DEFAULT_CHUNK_BYTES}, at most 1,900,000.
   * Reading does not depend on it: rows written with another size read the same.
   */
  chunkBytes?: number;
}

interface Row extends Record<string, unknown> {
  seq: number;
  data: ArrayBuffer;
  crc: number;
  parts: number;
}

interface PartRow extends Record<string, unknown> {
  seq: number;
  part: number;
  data: ArrayBuffer;
  crc: number;
}

/**
 * Keeps each document's records as rows of `cairn_updates` (`seq` is the record key, growing for the object's
 * life), the parts after the first of a record too large for one row in `cairn_update_parts`, and its first-read
 * snapshot in `cairn_snapshots` (its further parts in `cairn_snapshot_parts`). SQL calls are synchronous: `append`
 * has written its rows when it returns, so StoredLog hands it each update within the edit (`appendNow`);
 * `sync` resolves once they are durable (`ctx.storage.sync()`). A Durable Object is the one writer of its storage:
 * `lock` grants at once, and holders share the records (`replace` removes exactly the keys it is given).
 */
export class SqliteByteAdapter implements ImmediateByteAdapter {
  private readonly chunkBytes: number;

  /** Opens the tables, creating them or upgrading schema 1 or 2 in one transaction; refuses another version. */
  constructor(
    private readonly storage: DurableObjectStorage,
    options: SqliteByteAdapterOptions = {},
  ) {
    const chunkBytes = options.chunkBytes ?? SQLITE_DEFAULT_CHUNK_BYTES;
    if (!Number.isInteger(chunkBytes) || chunkBytes < 1 || chunkBytes > SQLITE_MAX_CHUNK_BYTES) {
      throw new CairnError(
        'invalid_argument',
        `A row part of ${chunkBytes} bytes: give a whole number from 1 to ${SQLITE_MAX_CHUNK_BYTES} (Cloudflare refuses rows over 2 MB).`,
        { field: 'chunkBytes' },
      );
    }
    this.chunkBytes = chunkBytes;
    const sql = storage.sql;
    sql.exec('CREATE TABLE IF NOT EXISTS cairn_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)');
    const version = sql
      .exec<{ value: string }>("SELECT value FROM cairn_meta WHERE key = 'schema'")
      .toArray()[0]?.value;
    if (version === String(SQLITE_SCHEMA_VERSION)) return;
    if (version !== undefined && version !== '1' && version !== '2') {
      throw new CairnError(
        'storage',
        `This Durable Object's storage has schema version ${version}; this version of Cairn reads ${SQLITE_SCHEMA_VERSION}.`,
        { schema: version },
      );
    }
    const schema1Document = options.schema1Document;
    if (version === '1' && schema1Document === undefined) {
      throw new CairnError(
        'storage',
        "This Durable Object's storage has schema version 1 (one unnamed document); open it with that document's name to upgrade it.",
        { schema: '1' },
      );
    }
    // Each schema is the one before it and what it added: all of it or none of it, in one transaction.
    storage.transactionSync(() => {
      if (version === undefined) createSchema2(storage);
      else if (version === '1' && schema1Document !== undefined) upgradeSchema1(storage, schema1Document);
      addRowParts(storage);
      sql.exec(
        "INSERT OR REPLACE INTO cairn_meta (key, value) VALUES ('schema', ?)",
        String(SQLITE_SCHEMA_VERSION),
      );
    });
  }

  async lock(_name: string): Promise<ByteLock> {
    return { release: async () => {} };
  }

  async read(name: string): Promise<StoredRecord[]> {
    return this.checkedRecords(name);
  }

  /**
   * Every record of `name` in order, each put together from its parts and checked against their CRCs: synchronous,
   * for a read that answers before the log is opened. Throws CairnError `storage` with `details.damage` at the
   * first record that fails a checksum or lacks a part, and at parts whose first row is gone: a record is read
   * whole or refused, never shorter.
   */
  checkedRecords(name: string): StoredRecord[] {
    const sql = this.storage.sql;
    const rows = sql
      .exec<Row>('SELECT seq, data, crc, parts FROM cairn_updates WHERE doc = ? ORDER BY seq', name)
      .toArray();
    const parts = sql
      .exec<PartRow>(
        'SELECT seq, part, data, crc FROM cairn_update_parts WHERE doc = ? ORDER BY seq, part',
        name,
      )
      .toArray();
    const records: StoredRecord[] = [];
    let next = 0; // the first part row not yet put into a record
    for (const [index, row] of rows.entries()) {
      const orphan = parts[next];
      if (orphan && orphan.seq < row.seq) throw orphaned(name, orphan.seq, index, rows.length - index);
      const own: PartRow[] = [];
      for (let stored = parts[next]; stored?.seq === row.seq; stored = parts[++next]) own.push(stored);
      const chunks = [row.data, ...own.map((stored) => stored.data)].map((data) => new Uint8Array(data));
      const bytes = chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0);
      const flaw = flawOf(row, own);
      if (flaw) {
        const damage = {
          path: flaw.path,
          offset: row.seq,
          keptRecords: index,
          recordsAfter: rows.length - index - 1,
          damagedBytes: bytes,
        };
        throw damaged(name, damage, flaw.why);
      }
      records.push({ key: row.seq, bytes: joined(chunks, bytes) });
    }
    const orphan = parts[next];
    if (orphan) throw orphaned(name, orphan.seq, rows.length, 0);
    return records;
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
      const list = JSON.stringify(keys);
      const sql = this.storage.sql;
      sql.exec(
        'DELETE FROM cairn_updates WHERE doc = ? AND seq IN (SELECT value FROM json_each(?))',
        name,
        list,
      );
      sql.exec(
        'DELETE FROM cairn_update_parts WHERE doc = ? AND seq IN (SELECT value FROM json_each(?))',
        name,
        list,
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

  /**
   * The stored first-read snapshot of `name`, put together from its parts, synchronous (see `checkedRecords`).
   * One that lacks a part is a corrupt snapshot (docs/STORAGE.md: it checks nothing and is rebuilt): null, never
   * the parts that are left. Damaged bytes fail the snapshot's own checksum, so the reader ignores it as well.
   */
  snapshot(name: string): Uint8Array | null {
    const sql = this.storage.sql;
    const row = sql
      .exec<{ data: ArrayBuffer; parts: number }>(
        'SELECT data, parts FROM cairn_snapshots WHERE doc = ?',
        name,
      )
      .toArray()[0];
    if (!row) return null;
    if (row.parts === 1) return new Uint8Array(row.data);
    const parts = sql
      .exec<{ part: number; data: ArrayBuffer }>(
        'SELECT part, data FROM cairn_snapshot_parts WHERE doc = ? ORDER BY part',
        name,
      )
      .toArray();
    if (parts.length !== row.parts - 1 || parts.some((stored, i) => stored.part !== i + 1)) return null;
    const chunks = [row.data, ...parts.map((stored) => stored.data)].map((data) => new Uint8Array(data));
    return joined(
      chunks,
      chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0),
    );
  }

  /** Replaces the snapshot and all its parts in one transaction, so no part of an older one outlives it. */
  async writeSnapshot(name: string, snapshot: Uint8Array): Promise<void> {
    const sql = this.storage.sql;
    const chunks = this.split(snapshot);
    this.storage.transactionSync(() => {
      sql.exec('DELETE FROM cairn_snapshot_parts WHERE doc = ?', name);
      sql.exec(
        'INSERT OR REPLACE INTO cairn_snapshots (doc, data, parts) VALUES (?, ?, ?)',
        name,
        chunks[0],
        chunks.length,
      );
      for (const [part, chunk] of chunks.entries()) {
        if (part === 0) continue;
        sql.exec('INSERT INTO cairn_snapshot_parts (doc, part, data) VALUES (?, ?, ?)', name, part, chunk);
      }
    });
  }

  /** One record: its first part a row of `cairn_updates` (whose `seq` is the key), the others beside it. */
  private insert(name: string, bytes: Uint8Array): RecordKey {
    const sql = this.storage.sql;
    const chunks = this.split(bytes);
    const first = chunks[0];
    const seq = sql
      .exec<{ seq: number }>(
        'INSERT INTO cairn_updates (doc, data, crc, parts) VALUES (?, ?, ?, ?) RETURNING seq',
        name,
        first,
        crc32(first),
        chunks.length,
      )
      .one().seq;
    for (const [part, chunk] of chunks.entries()) {
      if (part === 0) continue;
      sql.exec(
        'INSERT INTO cairn_update_parts (doc, seq, part, data, crc) VALUES (?, ?, ?, ?, ?)',
        name,
        seq,
        part,
        chunk,
        crc32(chunk),
      );
    }
    return seq;
  }

  /** `bytes` in parts of at most `chunkBytes` (views, not copies); one part, maybe empty, when it fits. */
  private split(bytes: Uint8Array): [Uint8Array, ...Uint8Array[]] {
    const chunks: [Uint8Array, ...Uint8Array[]] = [bytes.subarray(0, this.chunkBytes)];
    for (let at = this.chunkBytes; at < bytes.byteLength; at += this.chunkBytes) {
      chunks.push(bytes.subarray(at, at + this.chunkBytes));
    }
    return chunks;
  }
}

/** The parts of one value, in order, as one array (the one part itself when there is no other). */
function joined(chunks: Uint8Array[], byteLength: number): Uint8Array {
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const out = new Uint8Array(byteLength);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

/** Schema 2 from nothing: `cairn_updates` (its `doc` column names the document a row belongs to) and the snapshots. */
function createSchema2(storage: DurableObjectStorage): void {
  storage.sql.exec(
    'CREATE TABLE cairn_updates (seq INTEGER PRIMARY KEY AUTOINCREMENT, data BLOB NOT NULL, crc INTEGER NOT NULL, doc TEXT NOT NULL)',
  );
  addSchema2Tables(storage);
}

/** What schema 2 adds beside `cairn_updates` (once it has `doc`). */
function addSchema2Tables(storage: DurableObjectStorage): void {
  const sql = storage.sql;
  sql.exec('CREATE INDEX cairn_updates_doc ON cairn_updates (doc, seq)');
  sql.exec('CREATE TABLE cairn_snapshots (doc TEXT PRIMARY KEY, data BLOB NOT NULL)');
}

/**
 * Schema 1 held one unnamed document: `cairn_updates` without `doc`, and `cairn_snapshot` (one row, id 1). Its
 * rows gain the document's name and keep their bytes, checksums and `seq` (a damaged row stays as damaged as it
 * was, and a snapshot at a `seq` stays valid). Runs within the caller's transaction.
 */
function upgradeSchema1(storage: DurableObjectStorage, document: string): void {
  const sql = storage.sql;
  sql.exec("ALTER TABLE cairn_updates ADD COLUMN doc TEXT NOT NULL DEFAULT ''");
  sql.exec('UPDATE cairn_updates SET doc = ?', document);
  addSchema2Tables(storage);
  sql.exec('INSERT INTO cairn_snapshots (doc, data) SELECT ?, data FROM cairn_snapshot', document);
  sql.exec('DROP TABLE cairn_snapshot');
}

/**
 * Schema 3: a value may span rows. A row of `cairn_updates` or `cairn_snapshots` holds its first part and the
 * count (`parts`, 1 for every row written before, which stays as it was); the others are rows of their own.
 */
function addRowParts(storage: DurableObjectStorage): void {
  const sql = storage.sql;
  sql.exec('ALTER TABLE cairn_updates ADD COLUMN parts INTEGER NOT NULL DEFAULT 1');
  sql.exec(
    'CREATE TABLE cairn_update_parts (doc TEXT NOT NULL, seq INTEGER NOT NULL, part INTEGER NOT NULL, data BLOB NOT NULL, crc INTEGER NOT NULL, PRIMARY KEY (doc, seq, part))',
  );
  sql.exec('ALTER TABLE cairn_snapshots ADD COLUMN parts INTEGER NOT NULL DEFAULT 1');
  sql.exec(
    'CREATE TABLE cairn_snapshot_parts (doc TEXT NOT NULL, part INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (doc, part))',
  );
}

/**
 * What is wrong with the stored rows of one record (its row and the part rows of its `seq`, in order), or null
 * when every part is there, once, and holds its checksum.
 */
function flawOf(row: Row, parts: readonly PartRow[]): { path: string; why: string } | null {
  if (crc32(new Uint8Array(row.data)) !== row.crc >>> 0)
    return { path: SQLITE_LOG_PATH, why: 'checksum mismatch' };
  for (let part = 1; part < row.parts; part++) {
    const stored = parts[part - 1];
    const which = `part ${part} of ${row.parts}`;
    if (stored?.part !== part) return { path: SQLITE_PARTS_PATH, why: `${which} is missing` };
    if (crc32(new Uint8Array(stored.data)) !== stored.crc >>> 0) {
      return { path: SQLITE_PARTS_PATH, why: `${which}: checksum mismatch` };
    }
  }
  if (parts.length > Math.max(0, row.parts - 1)) {
    return { path: SQLITE_PARTS_PATH, why: `more parts than the ${row.parts} it was written in` };
  }
  return null;
}

interface DamageAt {
  path: string;
  offset: number;
  keptRecords: number;
  recordsAfter: number;
  /** The bytes of the damaged record that are there. */
  damagedBytes: number;
}

function damaged(name: string, damage: DamageAt, why: string): CairnError {
  return new CairnError(
    'storage',
    `"${name}" is refused: its stored log is damaged at record ${damage.offset} (${why}).`,
    { name, damage },
  );
}

/** Parts whose record's first row is gone: that record is lost, so the log is damaged where it stood. */
function orphaned(name: string, seq: number, kept: number, after: number): CairnError {
  const damage = {
    path: SQLITE_PARTS_PATH,
    offset: seq,
    keptRecords: kept,
    recordsAfter: after,
    damagedBytes: 0,
  };
  return damaged(name, damage, 'its parts are there but its first row is not');
}
