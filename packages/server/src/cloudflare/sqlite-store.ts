// The PlanStore of a Durable Object: one plan's update log and first-read snapshot in the object's own SQLite
// (`ctx.storage.sql`), with the rules of docs/STORAGE.md: a checksum per record, compaction into one record of the
// whole state, a first-read snapshot valid only at the log position it names, and damage refused and reported.
import { CairnError } from '@cairn/core';
import {
  crc32,
  type DecodedSnapshot,
  decodeSnapshot,
  encodeSnapshot,
  snapshotAhead,
} from '@cairn/core/protocol';
import * as Y from 'yjs';
import type { DamagedLog, PlanStore, StoreMetrics } from '../store/store.js';
import type { DurableObjectStorage } from './workers-types.js';

/** Bumped when the tables below change; an object written by a newer version is refused, never rewritten. */
export const SQLITE_SCHEMA_VERSION = 1;

export interface SqlitePlanStoreOptions {
  /** Compact once the log holds this many records. Default 500. */
  compactAfterUpdates?: number;
  /** Compact once the log holds this many bytes (beyond its last compaction). Default 4 MiB. */
  compactAfterBytes?: number;
}

type Listener = (error: Error, planId: string, what?: 'append') => void;

interface UpdateRow extends Record<string, unknown> {
  seq: number;
  data: ArrayBuffer;
  crc: number;
}

/** Where the damage is reported: the table, as a path the operator can look at with SQL. */
const LOG_PATH = 'sqlite:cairn_updates';

export class SqlitePlanStore implements PlanStore {
  private readonly compactAfterUpdates: number;
  private readonly compactAfterBytes: number;
  private snapshotOf: (() => Uint8Array) | null = null;
  private doc: Y.Doc | null = null;
  private records = 0;
  private bytes = 0;
  private lastSeq = 0;
  /** A write that failed: every flush rejects until a compaction has rewritten the whole state. */
  private failure: Error | null = null;
  private compactionQueued = false;
  private damaged: DamagedLog | null = null;
  private readonly listeners = new Set<Listener>();
  private readonly counters = { appends: 0, appendedBytes: 0, compactions: 0, errors: 0 };

  constructor(
    private readonly storage: DurableObjectStorage,
    /** The one document this object holds. */
    readonly planId: string,
    options: SqlitePlanStoreOptions = {},
  ) {
    this.compactAfterUpdates = options.compactAfterUpdates ?? 500;
    this.compactAfterBytes = options.compactAfterBytes ?? 4 * 1024 * 1024;
    const sql = storage.sql;
    sql.exec('CREATE TABLE IF NOT EXISTS cairn_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)');
    sql.exec(
      'CREATE TABLE IF NOT EXISTS cairn_updates (seq INTEGER PRIMARY KEY AUTOINCREMENT, data BLOB NOT NULL, crc INTEGER NOT NULL)',
    );
    sql.exec(
      'CREATE TABLE IF NOT EXISTS cairn_snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), data BLOB NOT NULL)',
    );
    const version = sql
      .exec<{ value: string }>("SELECT value FROM cairn_meta WHERE key = 'schema'")
      .toArray()[0]?.value;
    if (version === undefined) {
      sql.exec("INSERT INTO cairn_meta (key, value) VALUES ('schema', ?)", String(SQLITE_SCHEMA_VERSION));
    } else if (Number(version) !== SQLITE_SCHEMA_VERSION) {
      throw new CairnError(
        'storage',
        `This Durable Object's storage has schema version ${version}; this version of Cairn reads ${SQLITE_SCHEMA_VERSION}.`,
        { planId },
      );
    }
  }

  validatePlanId(planId: string): void {
    if (planId !== this.planId) {
      throw new CairnError(
        'invalid_argument',
        `This Durable Object holds "${this.planId}" only; "${planId}" lives in the object of its own name.`,
        { field: 'planId' },
      );
    }
  }

  async load(planId: string, snapshot: () => Uint8Array, doc?: Y.Doc): Promise<Uint8Array[]> {
    this.validatePlanId(planId);
    if (this.snapshotOf) throw new CairnError('locked', `Plan "${planId}" is already loaded.`, { planId });
    const rows = this.storage.sql
      .exec<UpdateRow>('SELECT seq, data, crc FROM cairn_updates ORDER BY seq')
      .toArray();
    const updates: Uint8Array[] = [];
    let bytes = 0;
    for (const [index, row] of rows.entries()) {
      const data = new Uint8Array(row.data);
      if (crc32(data) !== row.crc >>> 0) {
        const after = rows.slice(index);
        throw this.refuse({
          planId,
          path: LOG_PATH,
          offset: row.seq,
          keptRecords: index,
          recordsAfter: after.length - 1,
          damagedBytes: data.byteLength,
          since: new Date().toISOString(),
        });
      }
      updates.push(data);
      bytes += data.byteLength;
    }
    this.damaged = null; // a load that succeeds ends a refusal (an operator repaired the rows)
    this.records = rows.length;
    this.bytes = bytes;
    this.lastSeq = rows.at(-1)?.seq ?? 0;
    this.snapshotOf = snapshot;
    this.doc = doc ?? null;
    return updates;
  }

  /** The snapshot checks the store (decisions/035): a log that lacks what its snapshot saw has lost data. */
  verifyLoaded(planId: string, doc: Y.Doc): void {
    const stored = this.readSnapshot();
    const ahead = stored && snapshotAhead(stored.stateVector, Y.encodeStateVector(doc));
    if (!ahead) return;
    this.snapshotOf = null;
    this.doc = null;
    throw this.refuse({
      planId,
      path: LOG_PATH,
      offset: this.lastSeq,
      keptRecords: this.records,
      recordsAfter: 0,
      damagedBytes: 0,
      snapshot: { path: 'sqlite:cairn_snapshot', ...ahead },
      since: new Date().toISOString(),
    });
  }

  append(planId: string, update: Uint8Array): void {
    this.assertLoaded(planId);
    try {
      const cursor = this.storage.sql.exec<{ seq: number }>(
        'INSERT INTO cairn_updates (data, crc) VALUES (?, ?) RETURNING seq',
        update,
        crc32(update),
      );
      this.lastSeq = cursor.one().seq;
    } catch (error) {
      this.fail(error, 'append');
      return;
    }
    this.records++;
    this.bytes += update.byteLength;
    this.counters.appends++;
    this.counters.appendedBytes += update.byteLength;
    if (this.records >= this.compactAfterUpdates || this.bytes >= this.compactAfterBytes)
      this.queueCompaction();
  }

  async flush(planId: string): Promise<void> {
    this.assertLoaded(planId);
    if (this.failure) await this.compact(planId);
    // The object's writes commit on their own; sync() resolves once they are on disk, so an acknowledgement
    // (sent after this) never reports an edit the storage could still lose.
    await this.storage.sync();
  }

  async compact(planId: string): Promise<void> {
    this.assertLoaded(planId);
    this.compactNow();
    if (this.failure) {
      throw new CairnError('storage', `Plan "${planId}" could not be stored: ${this.failure.message}`, {
        planId,
      });
    }
  }

  async release(planId: string): Promise<void> {
    if (!this.snapshotOf || planId !== this.planId) return;
    await this.flush(planId);
    this.writeFirstRead();
    await this.storage.sync();
    this.snapshotOf = null;
    this.doc = null;
  }

  async close(): Promise<void> {
    await this.release(this.planId);
  }

  /** Only from a snapshot at the log's last row, and only while every row's checksum holds (as the disk store). */
  firstRead(planId: string): DecodedSnapshot | null {
    if (planId !== this.planId || this.damaged) return null;
    const snapshot = this.readSnapshot();
    if (!snapshot) return null;
    let last = 0;
    for (const row of this.storage.sql.exec<UpdateRow>(
      'SELECT seq, data, crc FROM cairn_updates ORDER BY seq',
    )) {
      if (crc32(new Uint8Array(row.data)) !== row.crc >>> 0) return null; // the load reports it
      last = row.seq;
    }
    return snapshot.at === last ? snapshot : null;
  }

  metrics(): StoreMetrics {
    return {
      plans: this.snapshotOf ? 1 : 0,
      bytes: this.bytes,
      damagedLogs: this.damaged ? 1 : 0,
      tornTails: 0,
      ...this.counters,
    };
  }

  damagedLogs(): DamagedLog[] {
    return this.damaged ? [this.damaged] : [];
  }

  onError(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private readSnapshot(): DecodedSnapshot | null {
    const row = this.storage.sql
      .exec<{ data: ArrayBuffer }>('SELECT data FROM cairn_snapshot WHERE id = 1')
      .toArray()[0];
    return row ? decodeSnapshot(new Uint8Array(row.data)) : null;
  }

  /** After the plan loaded (or a compaction): the first read of the next wake answers from here. */
  private writeFirstRead(): void {
    if (!this.doc) return;
    const bytes = encodeSnapshot(this.doc, this.lastSeq);
    try {
      if (bytes)
        this.storage.sql.exec('INSERT OR REPLACE INTO cairn_snapshot (id, data) VALUES (1, ?)', bytes);
      else this.storage.sql.exec('DELETE FROM cairn_snapshot');
    } catch (error) {
      this.fail(error); // only a cache: reads wait for the load until the next one is written
    }
  }

  private queueCompaction(): void {
    if (this.compactionQueued) return;
    this.compactionQueued = true;
    // Not on the relay's path: the updates of this turn are all in before the state is encoded.
    queueMicrotask(() => {
      this.compactionQueued = false;
      if (this.snapshotOf) this.compactNow();
    });
  }

  /** Replaces the log by one record of the whole state, in one transaction: all of it or none of it. */
  private compactNow(): void {
    const snapshot = this.snapshotOf;
    if (!snapshot) return;
    const state = snapshot();
    try {
      this.storage.transactionSync(() => {
        this.storage.sql.exec('DELETE FROM cairn_updates');
        this.lastSeq = this.storage.sql
          .exec<{ seq: number }>(
            'INSERT INTO cairn_updates (data, crc) VALUES (?, ?) RETURNING seq',
            state,
            crc32(state),
          )
          .one().seq;
        this.writeFirstRead();
      });
    } catch (error) {
      this.fail(error);
      return;
    }
    this.records = 1;
    this.bytes = state.byteLength;
    this.failure = null;
    this.counters.compactions++;
  }

  private fail(error: unknown, what?: 'append'): void {
    const failure = error instanceof Error ? error : new Error(String(error));
    this.failure = failure;
    this.counters.errors++;
    for (const listener of this.listeners) listener(failure, this.planId, what);
  }

  private refuse(damage: DamagedLog): CairnError {
    this.damaged = damage;
    return new CairnError(
      'storage',
      `Plan "${damage.planId}" is refused: its stored log is damaged at record ${damage.offset}` +
        (damage.snapshot ? ' (it lacks what its first-read snapshot saw).' : ' (checksum mismatch).'),
      { planId: damage.planId, damage },
    );
  }

  private assertLoaded(planId: string): void {
    if (!this.snapshotOf || planId !== this.planId) {
      throw new CairnError('storage', `Plan "${planId}" is not loaded in this store.`, { planId });
    }
  }
}
