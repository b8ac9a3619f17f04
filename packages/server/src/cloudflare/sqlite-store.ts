// The PlanStore of a Durable Object: its plan's log in the object's own SQLite through SqliteByteAdapter, under the
// one persistence layer (StoredLog) as the disk and memory stores, so compaction, snapshots, the first read and
// the flush-error rule are decided there. What is kept here is the object's: one plan, damage it reports.
import { CairnError, isCairnError } from '@cairn/core';
import {
  type CompactionPolicy,
  currentSnapshot,
  type DecodedSnapshot,
  type RecordKey,
  StoredLog,
  snapshotAhead,
} from '@cairn/core/protocol';
import * as Y from 'yjs';
import { LogStore } from '../store/log-store.js';
import type { DamagedLog, PlanStore, StoreMetrics } from '../store/store.js';
import { SQLITE_LOG_PATH, SQLITE_SNAPSHOT_PATH, SqliteByteAdapter } from './sqlite-adapter.js';
import type { DurableObjectStorage } from './workers-types.js';

export interface SqlitePlanStoreOptions {
  /** When to replace the log by one row of the whole state. Default `{ records: 500, minBytes: 256 KiB }`. */
  compaction?: CompactionPolicy | false;
  /** The most bytes one row holds (`SqliteByteAdapterOptions.chunkBytes`). Default 1 MiB. */
  chunkBytes?: number;
}

/** See SqlitePlanStoreOptions.compaction: a row per record, so fewer rows than a file's records. */
const COMPACTION: CompactionPolicy = { records: 500, minBytes: 256 * 1024 };

/** A snapshot's position in this store: the `seq` of the last row it reflects (as schema 1 wrote it). */
const snapshotAt = (seq: RecordKey): unknown => seq;

export class SqlitePlanStore extends LogStore implements PlanStore {
  private readonly adapter: SqliteByteAdapter;
  private damaged: DamagedLog | null = null;

  /** Opens the object's tables (upgrading an object written with schema 1 or 2); throws on another version. */
  constructor(
    storage: DurableObjectStorage,
    /** The one document this object holds. */
    readonly planId: string,
    private readonly options: SqlitePlanStoreOptions = {},
  ) {
    super();
    this.adapter = new SqliteByteAdapter(storage, {
      schema1Document: planId,
      chunkBytes: options.chunkBytes,
    });
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

  /**
   * True once the plan was written: it has rows, or a snapshot (rows lost beside it are damage, refused at the
   * load, never a plan "never written"). A plan with neither is unknown: reads answer 404.
   */
  holdsPlan(): boolean {
    return this.adapter.lastKey(this.planId) !== undefined || this.adapter.snapshot(this.planId) !== null;
  }

  async load(planId: string, snapshot: () => Uint8Array, doc?: Y.Doc): Promise<Uint8Array[]> {
    this.validatePlanId(planId);
    if (this.plans.has(planId)) {
      throw new CairnError('locked', `Plan "${planId}" is already loaded.`, { planId });
    }
    let log: StoredLog;
    try {
      log = await StoredLog.open(this.adapter, planId, {
        state: snapshot,
        compaction: this.options.compaction ?? COMPACTION,
        doc,
        snapshotAt,
        onError: this.logErrors(planId),
      });
    } catch (error) {
      this.counters.errors++;
      const damage = isCairnError(error) ? error.details.damage : undefined;
      if (damage) this.refuse(planId, damage as Omit<DamagedLog, 'planId' | 'since'>);
      throw error;
    }
    this.damaged = null; // a load that succeeds ends a refusal (an operator repaired the rows)
    this.plans.set(planId, log);
    const records = log.takeLoaded();
    queueMicrotask(() => log.compactIfDue());
    return records;
  }

  /** The snapshot checks the store (decisions/035): a log that lacks what its snapshot saw has lost data. */
  verifyLoaded(planId: string, doc: Y.Doc): void {
    const log = this.plans.get(planId);
    const stored = log?.storedSnapshot;
    const ahead = stored && snapshotAhead(stored.stateVector, Y.encodeStateVector(doc));
    if (!log || !ahead) return;
    this.plans.delete(planId);
    void log.release().catch(() => undefined); // refused: holds nothing, writes nothing
    const { records } = log.stats();
    const damage = this.refuse(planId, {
      path: SQLITE_LOG_PATH,
      offset: this.adapter.lastKey(planId) ?? 0,
      keptRecords: records,
      recordsAfter: 0,
      damagedBytes: 0,
      snapshot: { path: SQLITE_SNAPSHOT_PATH, ...ahead },
    });
    throw new CairnError(
      'storage',
      `Plan "${planId}" is refused: its stored log is damaged at record ${damage.offset} (it lacks what its first-read snapshot saw).`,
      { planId, damage },
    );
  }

  async close(): Promise<void> {
    await this.releaseAll();
  }

  /** The core's first read, before the plan is loaded: only while every row's checksum holds (the load reports). */
  firstRead(planId: string): DecodedSnapshot | null {
    if (planId !== this.planId || this.damaged || this.plans.get(planId)?.behind) return null;
    try {
      const last = this.adapter.checkedRecords(planId).at(-1)?.key;
      return currentSnapshot(this.adapter.snapshot(planId), last, snapshotAt);
    } catch {
      return null;
    }
  }

  metrics(): StoreMetrics {
    return this.metricsWith((_planId, log) => log.stats().bytes, this.damaged ? 1 : 0);
  }

  damagedLogs(): DamagedLog[] {
    return this.damaged ? [this.damaged] : [];
  }

  private refuse(planId: string, damage: Omit<DamagedLog, 'planId' | 'since'>): DamagedLog {
    this.damaged = { planId, ...damage, since: new Date().toISOString() };
    return this.damaged;
  }
}
