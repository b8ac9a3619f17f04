// A PlanStore in PostgreSQL, shared by every instance of a cluster: the byte adapter over `cairn_updates`
// (postgres-adapter.ts) under the one persistence layer (StoredLog), as the disk store is over its files. Several
// instances may load one plan at once: each keeps the others' writes (docs/STORAGE.md). One instance at a time
// compacts a plan (a PostgreSQL advisory lock), on a worker thread (compaction-worker.ts).
import { CairnError } from '@cairn/core';
import { StoredLog } from '@cairn/core/protocol';
import pg from 'pg';
import type * as Y from 'yjs';
import { LogStore } from '../store/log-store.js';
import type { DamagedLog, PlanStore, StoreMetrics } from '../store/store.js';
import { CompactionWorker } from './compaction-worker.js';
import { PostgresByteAdapter } from './postgres-adapter.js';
import { redactUrl } from './urls.js';

/** The schema this code writes; a database with a newer one is refused (docs/STORAGE.md). */
export const POSTGRES_SCHEMA_VERSION = 1;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS cairn_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS cairn_updates (
  id bigserial PRIMARY KEY,
  plan_id text NOT NULL,
  data bytea NOT NULL,
  written_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS cairn_updates_plan ON cairn_updates (plan_id, id);
`;

/**
 * How the database is used, recorded by its first server: `cluster` (instances sharing plans through Redis) or
 * `single` (one server, no Redis). A server of the other kind is refused: without the relay, instances on one
 * database would each keep their own copy of a plan's latest edits.
 */
export type PostgresMode = 'cluster' | 'single';

export interface PostgresStoreOptions {
  /** Default `single`. */
  mode?: PostgresMode;
  /**
   * Merge a plan's rows into one once it has this many (more for a large plan: one per 256 bytes of its merged
   * row, StoredLog's policy): checked when the rows this instance loaded or wrote since reach it, and then against
   * the table (another instance may have compacted meanwhile). Default 500.
   */
  compactAfter?: number;
  /** Connections in the pool. Default 10. */
  poolSize?: number;
  /**
   * Connections opened at start and kept open however idle (at most `poolSize`). Default 4: the first edits after a
   * start or a quiet spell then find a connection ready instead of paying for its handshake (a backend process and
   * a SCRAM exchange) while they wait.
   */
  poolKept?: number;
}

/** Opens the connections the pool keeps (the caller holds one already), so the first writes find them ready. */
async function openKept(pool: pg.Pool, kept: number): Promise<void> {
  const opened = await Promise.all(Array.from({ length: Math.max(0, kept - 1) }, () => pool.connect()));
  for (const client of opened) client.release();
}

export class PostgresStore extends LogStore implements PlanStore {
  /** Plans refused because rows they need are gone (see verifyLoaded); a load that passes removes its entry. */
  private readonly damaged = new Map<string, DamagedLog>();
  private readonly compactor: CompactionWorker;
  private readonly adapter: PostgresByteAdapter;
  private closed = false;

  private constructor(
    readonly pool: pg.Pool,
    readonly url: string,
    /** This database's id (a random uuid made with its schema): names the store in Redis. */
    readonly storeId: string,
    private readonly options: PostgresStoreOptions,
  ) {
    super();
    this.compactor = new CompactionWorker(url);
    this.adapter = new PostgresByteAdapter(pool, url, this.compactor);
  }

  /** Connects, creates the schema if missing; rejects with CairnError `storage` naming the URL (no password). */
  static async connect(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const pool = new pg.Pool({
      connectionString: url,
      max: options.poolSize ?? 10,
      min: Math.min(options.poolKept ?? 4, options.poolSize ?? 10),
      connectionTimeoutMillis: 5000,
    });
    // An idle client that loses its connection must not crash the process; the next query reconnects.
    pool.on('error', () => undefined);
    try {
      const client = await pool.connect();
      try {
        await client.query('SELECT pg_advisory_lock(4242001)');
        await client.query(SCHEMA);
        await client.query(
          `INSERT INTO cairn_meta (key, value)
           VALUES ('schema', $1), ('store_id', gen_random_uuid()::text), ('mode', $2)
           ON CONFLICT (key) DO NOTHING`,
          [String(POSTGRES_SCHEMA_VERSION), options.mode ?? 'single'],
        );
        const meta = await client.query<{ key: string; value: string }>('SELECT key, value FROM cairn_meta');
        await client.query('SELECT pg_advisory_unlock(4242001)');
        const values = new Map(meta.rows.map((r) => [r.key, r.value]));
        const schema = Number(values.get('schema'));
        if (schema > POSTGRES_SCHEMA_VERSION) {
          throw new CairnError(
            'storage',
            `PostgreSQL at ${redactUrl(url)} holds Cairn schema ${schema}; this server reads up to ${POSTGRES_SCHEMA_VERSION}. Upgrade the server.`,
          );
        }
        const mode = values.get('mode');
        if (mode !== (options.mode ?? 'single')) {
          throw new CairnError(
            'invalid_argument',
            mode === 'cluster'
              ? `PostgreSQL at ${redactUrl(url)} is the store of a cluster: start this server with --redis too.`
              : `PostgreSQL at ${redactUrl(url)} is the store of a single server (no Redis): it cannot join a cluster.`,
          );
        }
        await openKept(pool, Math.min(options.poolKept ?? 4, options.poolSize ?? 10));
        return new PostgresStore(pool, url, values.get('store_id') ?? '', options);
      } finally {
        client.release();
      }
    } catch (error) {
      await pool.end().catch(() => undefined);
      if (error instanceof CairnError) throw error;
      throw new CairnError(
        'storage',
        `Could not reach PostgreSQL at ${redactUrl(url)}: ${(error as Error).message || String(error)}`,
        {},
        { cause: error },
      );
    }
  }

  async load(planId: string, snapshot: () => Uint8Array): Promise<Uint8Array[]> {
    this.assertOpen();
    if (this.plans.has(planId)) {
      throw new CairnError('locked', `Plan "${planId}" is already loaded from this store.`, { planId });
    }
    let log: StoredLog;
    try {
      log = await StoredLog.open(this.adapter, planId, {
        state: snapshot,
        // One INSERT per plan per turn of the event loop carries every update appended in it.
        batching: 'turn',
        // Counted in rows: a cold load reads every row, and a merge is checked against the table's count.
        compaction: { records: (this.options.compactAfter ?? 500) - 1, minBytes: Number.POSITIVE_INFINITY },
        onError: this.logErrors(planId),
      });
    } catch (error) {
      this.counters.errors++;
      throw error;
    }
    this.plans.set(planId, log);
    return log.takeLoaded();
  }

  /**
   * A plan whose applied rows leave updates waiting for a dependency lost rows: the server stores only what its
   * document integrated, so every dependency of a stored update was stored before it. Such a plan is refused
   * (served, it would pass for the whole plan and take writes over the gap), forgotten here, and reported.
   */
  verifyLoaded(planId: string, doc: Y.Doc): void {
    const { pendingStructs, pendingDs } = doc.store;
    if (pendingStructs === null && pendingDs === null) {
      this.damaged.delete(planId);
      return;
    }
    const log = this.plans.get(planId);
    const rows = log?.stats().records ?? 0;
    this.plans.delete(planId);
    void log?.release();
    const waiting = (pendingStructs?.update.byteLength ?? 0) + (pendingDs?.byteLength ?? 0);
    const path = `cairn_updates where plan_id = '${planId}'`;
    const damage = { path, offset: 0, keptRecords: rows, recordsAfter: 0, damagedBytes: waiting };
    if (!this.damaged.has(planId))
      this.damaged.set(planId, { planId, ...damage, since: new Date().toISOString() });
    throw new CairnError(
      'storage',
      `Plan "${planId}" is damaged in PostgreSQL: after its ${rows} rows were applied, ${waiting} bytes of ` +
        'updates still wait for rows that are gone. The plan is not opened, so nothing is written over it; ' +
        'restore the rows from a backup (or delete them to start the plan again).',
      { planId, damage },
    );
  }

  damagedLogs(): DamagedLog[] {
    return [...this.damaged.values()];
  }

  /** Every plan with stored rows (the wake-up sweeper reads them to build its index at start). */
  async listPlans(): Promise<string[]> {
    const result = await this.pool.query<{ plan_id: string }>('SELECT DISTINCT plan_id FROM cairn_updates');
    return result.rows.map((r) => r.plan_id);
  }

  /** Every row stored for a plan now, loaded or not (for tests and tools). */
  async readStored(planId: string): Promise<Uint8Array[]> {
    const result = await this.pool.query<{ data: Buffer }>(
      'SELECT data FROM cairn_updates WHERE plan_id = $1 ORDER BY id',
      [planId],
    );
    return result.rows.map((r) => new Uint8Array(r.data));
  }

  /**
   * Resolves once every update appended so far is committed; rejects while a failed insert waits for its
   * rewrite. Unlike `flush` it never retries, so a caller per update (the relay) adds no inserts while the
   * database is away.
   */
  committed(planId: string): Promise<void> {
    return this.get(planId).written();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    try {
      await this.releaseAll();
    } finally {
      this.closed = true;
      await Promise.all([this.pool.end(), this.compactor.close()]);
    }
  }

  /** Resolves when the database answers; rejects with CairnError `storage` naming the URL. */
  async ping(): Promise<void> {
    try {
      await this.pool.query('SELECT 1');
    } catch (error) {
      throw new CairnError(
        'storage',
        `PostgreSQL at ${redactUrl(this.url)} is unreachable: ${(error as Error).message}`,
      );
    }
  }

  metrics(): StoreMetrics {
    return this.metricsWith((_planId, log) => log.stats().bytes, this.damaged.size);
  }

  private assertOpen(): void {
    if (this.closed) throw new CairnError('storage', 'The PostgreSQL store is closed.');
  }
}
