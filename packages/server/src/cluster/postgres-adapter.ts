// The byte contract over the `cairn_updates` table (docs/STORAGE.md): one row per record, its `id` the record's
// key. Every instance of a cluster holds a plan at once (the lock is shared), so `replace` deletes exactly the ids
// it is given and rows another instance wrote stay. Merging is done where the rows are, on a worker thread with
// its own connection, under the plan's advisory lock (compaction-worker.ts).
import { CairnError } from '@cairn/core';
import type {
  ByteLock,
  MergedRecords,
  MergingByteAdapter,
  RecordKey,
  StoredRecord,
} from '@cairn/core/protocol';
import type pg from 'pg';
import type { CompactionWorker } from './compaction-worker.js';
import { redactUrl } from './urls.js';

const SHARED: ByteLock = { release: async () => undefined };

export class PostgresByteAdapter implements MergingByteAdapter {
  constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
    private readonly compactor: CompactionWorker,
  ) {}

  /** Shared: instances on one database each keep what the others write (a cluster's relay keeps them in step). */
  async lock(): Promise<ByteLock> {
    return SHARED;
  }

  async read(name: string): Promise<StoredRecord[]> {
    const { rows } = await this.query<{ id: string; data: Buffer }>(
      name,
      'SELECT id, data FROM cairn_updates WHERE plan_id = $1 ORDER BY id',
      [name],
      'cairn_read',
    );
    return rows.map((row) => ({ key: Number(row.id), bytes: bytesOf(row.data) }));
  }

  async append(name: string, records: readonly Uint8Array[]): Promise<RecordKey[]> {
    if (records.length === 1) {
      // The usual batch under load is one update: sent as a binary parameter, where an array goes as hex text
      // that both sides encode and parse.
      const { rows } = await this.query<{ id: string }>(
        name,
        'INSERT INTO cairn_updates (plan_id, data) VALUES ($1, $2) RETURNING id',
        [name, Buffer.from(records[0]!.buffer, records[0]!.byteOffset, records[0]!.byteLength)],
        'cairn_append_one',
      );
      return [Number(rows[0]?.id)];
    }
    // One INSERT for the batch; the ids are drawn in the order of the array, so sorted they are its keys.
    const { rows } = await this.query<{ id: string }>(
      name,
      'INSERT INTO cairn_updates (plan_id, data) SELECT $1, unnest($2::bytea[]) RETURNING id',
      [name, records.map((record) => Buffer.from(record))],
      'cairn_append_many',
    );
    return rows.map((row) => Number(row.id)).sort((a, b) => a - b);
  }

  async replace(name: string, keys: readonly RecordKey[], record: Uint8Array): Promise<RecordKey> {
    // One statement, so one transaction: the old rows or the new one, never neither.
    const { rows } = await this.query<{ id: string }>(
      name,
      `WITH removed AS (DELETE FROM cairn_updates WHERE plan_id = $1 AND id = ANY($2::bigint[]))
       INSERT INTO cairn_updates (plan_id, data) VALUES ($1, $3) RETURNING id`,
      [name, [...keys], Buffer.from(record)],
    );
    return Number(rows[0]?.id);
  }

  async mergeRecords(name: string, atLeast: number): Promise<MergedRecords | { stored: number }> {
    let outcome: Awaited<ReturnType<CompactionWorker['compact']>>;
    try {
      outcome = await this.compactor.compact(name, atLeast);
    } catch (error) {
      throw this.failure(name, error);
    }
    if (outcome.kind === 'compacted') return outcome;
    // `busy`: the holder of the lock is merging them; counted again from nothing.
    return { stored: outcome.kind === 'few' ? outcome.rows : 0 };
  }

  /**
   * `statement` names the statements run on every edit or load: each pooled connection then parses and plans them
   * once, not on every call (a third of PostgreSQL's CPU for a one-row INSERT, measured on its own).
   */
  private async query<R extends pg.QueryResultRow>(
    name: string,
    text: string,
    values: unknown[],
    statement?: string,
  ) {
    try {
      return await this.pool.query<R>(statement ? { name: statement, text, values } : { text, values });
    } catch (error) {
      throw this.failure(name, error);
    }
  }

  private failure(name: string, error: unknown): CairnError {
    if (error instanceof CairnError) return error;
    const message = error instanceof Error ? error.message : String(error);
    return new CairnError(
      'storage',
      `PostgreSQL at ${redactUrl(this.url)} failed for plan "${name}": ${message}`,
      { planId: name },
      { cause: error },
    );
  }
}

function bytesOf(data: Buffer): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}
