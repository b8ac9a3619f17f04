// A PlanStore in PostgreSQL, shared by every instance of a cluster: one row per stored update, appended in
// batches, compacted in a transaction that replaces exactly the rows it merged (another instance's rows written
// meanwhile stay). Several instances may load one plan at once: each keeps the others' writes (docs/STORAGE.md).
// One instance at a time compacts a plan (a PostgreSQL advisory lock), on a worker thread (compaction-worker.ts).
import { CairnError } from '@cairn/core';
import pg from 'pg';
import type { PlanStore, StoreMetrics } from '../store/store.js';
import { type CompactionOutcome, CompactionWorker } from './compaction-worker.js';
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
   * Merge a plan's rows into one once it has this many: checked when the rows this instance loaded or wrote since
   * reach it, and then against the table (another instance may have compacted meanwhile). Default 500.
   */
  compactAfter?: number;
  /** Connections in the pool. Default 10. */
  poolSize?: number;
}

interface LoadedPlan {
  /** Appended, not yet handed to an insert. */
  queued: Uint8Array[];
  /** The insert chain: resolves once everything handed to it is stored (or kept in `failed`). */
  tail: Promise<void>;
  /** Updates whose insert failed, retried by the next write or flush. */
  failed: Uint8Array[];
  lastError: Error | null;
  /** Rows loaded, or counted at the last compaction check, plus those this instance wrote since. */
  rows: number;
  bytes: number;
  compacting: Promise<void> | null;
}

export class PostgresStore implements PlanStore {
  private readonly plans = new Map<string, LoadedPlan>();
  private readonly counters = { appends: 0, appendedBytes: 0, compactions: 0, errors: 0 };
  private readonly errorListeners = new Set<(error: Error, planId: string) => void>();
  private readonly compactor: CompactionWorker;
  private closed = false;

  private constructor(
    readonly pool: pg.Pool,
    readonly url: string,
    /** This database's id (a random uuid made with its schema): names the store in Redis. */
    readonly storeId: string,
    private readonly options: PostgresStoreOptions,
  ) {
    this.compactor = new CompactionWorker(url);
  }

  /** Connects, creates the schema if missing; rejects with CairnError `storage` naming the URL (no password). */
  static async connect(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const pool = new pg.Pool({
      connectionString: url,
      max: options.poolSize ?? 10,
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

  async load(planId: string): Promise<Uint8Array[]> {
    this.assertOpen();
    if (this.plans.has(planId)) {
      throw new CairnError('locked', `Plan "${planId}" is already loaded from this store.`, { planId });
    }
    const result = await this.query<{ data: Buffer }>(
      planId,
      'SELECT data FROM cairn_updates WHERE plan_id = $1 ORDER BY id',
      [planId],
    );
    const updates = result.rows.map(
      (r) => new Uint8Array(r.data.buffer, r.data.byteOffset, r.data.byteLength),
    );
    this.plans.set(planId, {
      queued: [],
      tail: Promise.resolve(),
      failed: [],
      lastError: null,
      rows: updates.length,
      bytes: updates.reduce((n, u) => n + u.byteLength, 0),
      compacting: null,
    });
    return updates;
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

  append(planId: string, update: Uint8Array): void {
    const plan = this.loadedPlan(planId);
    plan.queued.push(update);
    this.counters.appends++;
    this.counters.appendedBytes += update.byteLength;
    // One insert per turn of the event loop carries every update appended in it.
    if (plan.queued.length === 1) plan.tail = plan.tail.then(() => this.insertQueued(planId, plan));
  }

  async flush(planId: string): Promise<void> {
    const plan = this.loadedPlan(planId);
    await plan.tail;
    if (plan.failed.length > 0) {
      // Try again now: a flush after the database came back succeeds without waiting for another write.
      plan.tail = plan.tail.then(() => this.insertQueued(planId, plan));
      await plan.tail;
    }
    if (plan.failed.length > 0) throw this.notStored(planId, plan);
  }

  /**
   * Resolves once every update appended so far is committed; rejects when an insert failed. Unlike `flush` it
   * never retries, so a caller per update (the relay) adds no inserts while the database is away.
   */
  async committed(planId: string): Promise<void> {
    const plan = this.loadedPlan(planId);
    await plan.tail;
    if (plan.failed.length > 0) throw this.notStored(planId, plan);
  }

  /** Compacts the plan now, unless another instance is compacting it (then that one does). */
  compact(planId: string): Promise<void> {
    return this.compactOnce(planId, true);
  }

  private compactOnce(planId: string, always: boolean): Promise<void> {
    const plan = this.loadedPlan(planId);
    plan.compacting ??= this.compactNow(planId, plan, always).finally(() => {
      plan.compacting = null;
    });
    return plan.compacting;
  }

  async release(planId: string): Promise<void> {
    if (!this.plans.has(planId)) return;
    try {
      await this.flush(planId);
      await this.plans.get(planId)?.compacting;
    } finally {
      this.plans.delete(planId);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    const results = await Promise.allSettled([...this.plans.keys()].map((id) => this.release(id)));
    this.closed = true;
    await Promise.all([this.pool.end(), this.compactor.close()]);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
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
    let bytes = 0;
    for (const plan of this.plans.values()) bytes += plan.bytes;
    return { plans: this.plans.size, bytes, damagedLogs: 0, tornTails: 0, ...this.counters };
  }

  onError(listener: (error: Error, planId: string) => void): () => void {
    this.errorListeners.add(listener);
    return () => this.errorListeners.delete(listener);
  }

  private async insertQueued(planId: string, plan: LoadedPlan): Promise<void> {
    const batch = [...plan.failed, ...plan.queued];
    plan.failed = [];
    plan.queued = [];
    if (batch.length === 0) return;
    try {
      await this.pool.query('INSERT INTO cairn_updates (plan_id, data) SELECT $1, unnest($2::bytea[])', [
        planId,
        batch.map((u) => Buffer.from(u.buffer, u.byteOffset, u.byteLength)),
      ]);
      plan.lastError = null;
      plan.rows += batch.length;
      plan.bytes += batch.reduce((n, u) => n + u.byteLength, 0);
      if (plan.rows >= this.compactAfter && !plan.compacting) {
        this.compactOnce(planId, false).catch((error: Error) => this.report(error, planId));
      }
    } catch (error) {
      // Kept in order for the next try; acknowledgements fail until it succeeds.
      plan.failed = batch;
      plan.lastError = error as Error;
      this.report(error as Error, planId);
    }
  }

  private get compactAfter(): number {
    return this.options.compactAfter ?? 500;
  }

  /**
   * Merges the plan's rows into one on the worker thread, in a transaction holding the plan's advisory lock: an
   * instance that does not get it leaves the work to the one that has it. Unless `always`, the rows are counted
   * first and merged only when they still reach `compactAfter` (another instance may just have compacted). Every
   * update this instance holds is in the rows (it flushes first, and what it read from other instances they had
   * committed), so the rows alone are merged.
   */
  private async compactNow(planId: string, plan: LoadedPlan, always: boolean): Promise<void> {
    await this.flush(planId);
    const before = plan.rows;
    let outcome: CompactionOutcome;
    try {
      outcome = await this.compactor.compact(planId, always ? 2 : this.compactAfter);
    } catch (error) {
      throw this.storageError(planId, error as Error);
    }
    // Rows this instance wrote during the compaction are not in it.
    const since = plan.rows - before;
    if (outcome.kind === 'compacted') {
      plan.rows = 1 + since;
      plan.bytes = outcome.bytes;
      this.counters.compactions++;
    } else {
      // Counted again from here: `busy`, the compactor at work resets the table; `few`, it was just compacted.
      plan.rows = (outcome.kind === 'few' ? outcome.rows : 0) + since;
    }
  }

  private notStored(planId: string, plan: LoadedPlan): CairnError {
    return new CairnError(
      'storage',
      `Could not store updates of plan "${planId}" in PostgreSQL at ${redactUrl(this.url)}: ${plan.lastError?.message}`,
      { planId },
    );
  }

  private async query<R extends pg.QueryResultRow>(planId: string, text: string, values: unknown[]) {
    try {
      return await this.pool.query<R>(text, values);
    } catch (error) {
      throw this.storageError(planId, error as Error);
    }
  }

  private storageError(planId: string, error: Error): CairnError {
    this.counters.errors++;
    if (error instanceof CairnError) return error;
    return new CairnError(
      'storage',
      `PostgreSQL at ${redactUrl(this.url)} failed for plan "${planId}": ${error.message}`,
      { planId },
      { cause: error },
    );
  }

  private report(error: Error, planId: string): void {
    this.counters.errors++;
    for (const listener of this.errorListeners) listener(error, planId);
  }

  private loadedPlan(planId: string): LoadedPlan {
    const plan = this.plans.get(planId);
    if (!plan) throw new CairnError('storage', `Plan "${planId}" is not loaded in this store.`, { planId });
    return plan;
  }

  private assertOpen(): void {
    if (this.closed) throw new CairnError('storage', 'The PostgreSQL store is closed.');
  }
}
