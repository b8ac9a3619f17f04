// The disk PlanStore: one checksummed append log per plan (the UpdateLog of @cairn/core/fs, so a data directory
// of the server and of an agent's fs persistence hold the same files), a lock per plan and one for the directory.
import * as nodeFs from 'node:fs';
import { join, resolve } from 'node:path';
import { CairnError, isCairnError, toCairnError } from '@cairn/core';
import {
  acquireLock,
  type CompactionPolicy,
  type Durability,
  describeRecovery,
  type FileLock,
  type LogDamage,
  type LogRecovery,
  planFiles,
  UpdateLog,
} from '@cairn/core/fs';
import type { DamagedLog, PlanStore, StoreMetrics } from './store.js';

export interface DiskStoreOptions {
  /**
   * `batched` (default): an append is written before it returns (survives kill -9) and fsynced within
   * `fsyncDelayMs` and on every flush (so an acknowledged write survives power loss too).
   * `fsync-every-write`: every append is fsynced before it returns.
   */
  durability?: Durability;
  /** Default 5 ms. */
  fsyncDelayMs?: number;
  /** When to replace a plan's history by a snapshot. Default `{ records: 1000, minBytes: 16384 }`. */
  compaction?: CompactionPolicy | false;
  /** Told when the load cut an incomplete last record off a log (also reported through `onError`). */
  onRecover?: (recovery: LogRecovery & { planId: string; path: string }) => void;
  /** File system calls; node:fs by default (tests wrap it to inject failures). */
  fs?: typeof nodeFs;
}

interface OpenPlan {
  log: UpdateLog;
  lock: FileLock;
  snapshot: () => Uint8Array;
  compacting: Promise<void> | null;
  retryAt: number;
  retryDelay: number;
}

/** The directory lock's name: a plan's files never start with a dot (names.ts encodes a leading one). */
const DIR_LOCK = '.cairn-server.lock';
const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5_000;

export class DiskStore implements PlanStore {
  readonly dir: string;
  private readonly fs: typeof nodeFs;
  private readonly plans = new Map<string, OpenPlan>();
  private readonly listeners = new Set<(error: Error, planId: string) => void>();
  private readonly counters = { appends: 0, appendedBytes: 0, compactions: 0, errors: 0, tornTails: 0 };
  /** Plans refused because their log is damaged; a load that succeeds (after a repair) removes its entry. */
  private readonly damaged = new Map<string, DamagedLog>();
  private dirLock: FileLock | null;

  /**
   * Opens (creating it if needed) a data directory. Throws CairnError `locked` if another server process holds
   * it, `storage` if it cannot be created.
   */
  static open(dir: string, options: DiskStoreOptions = {}): DiskStore {
    const fs = options.fs ?? nodeFs;
    const full = resolve(dir);
    try {
      fs.mkdirSync(full, { recursive: true });
    } catch (error) {
      throw new CairnError(
        'storage',
        `Could not create the data directory ${full}: ${toCairnError(error).message}`,
        {
          path: full,
        },
      );
    }
    let lock: FileLock;
    try {
      lock = acquireLock(join(full, DIR_LOCK), fs);
    } catch (error) {
      const cause = toCairnError(error);
      if (cause.code !== 'locked') throw cause;
      throw new CairnError(
        'locked',
        `The data directory ${full} is used by another Cairn server (pid ${String(cause.details.pid)}). ` +
          'Stop it, or choose another --data directory.',
        cause.details,
        { cause },
      );
    }
    return new DiskStore(full, lock, options);
  }

  private constructor(
    dir: string,
    lock: FileLock,
    private readonly options: DiskStoreOptions,
  ) {
    this.dir = dir;
    this.dirLock = lock;
    this.fs = options.fs ?? nodeFs;
  }

  validatePlanId(planId: string): void {
    planFiles(this.dir, planId);
  }

  async load(planId: string, snapshot: () => Uint8Array): Promise<Uint8Array[]> {
    if (!this.dirLock)
      throw new CairnError('storage', `The store in ${this.dir} is closed.`, { path: this.dir });
    const files = planFiles(this.dir, planId);
    const lock = acquireLock(files.lock, this.fs);
    let log: UpdateLog;
    try {
      log = UpdateLog.open(files.log, {
        durability: this.options.durability,
        fsyncDelayMs: this.options.fsyncDelayMs,
        compaction: this.options.compaction,
        fs: this.fs,
        onError: (error) => this.report(error, planId),
      });
    } catch (error) {
      lock.release();
      this.counters.errors++;
      const damage = isCairnError(error) ? (error.details.damage as LogDamage | undefined) : undefined;
      if (damage) this.refuseDamaged(planId, damage);
      throw error;
    }
    this.damaged.delete(planId);
    if (log.recovery) this.tellRecovery(planId, log.recovery);
    const plan: OpenPlan = { log, lock, snapshot, compacting: null, retryAt: 0, retryDelay: 0 };
    this.plans.set(planId, plan);
    const records = log.takeLoadedRecords();
    if (log.shouldCompact()) queueMicrotask(() => this.scheduleCompaction(planId, plan));
    return records;
  }

  append(planId: string, update: Uint8Array): void {
    const plan = this.get(planId);
    try {
      plan.log.append(update);
    } catch (error) {
      this.counters.errors++;
      this.scheduleCompaction(planId, plan);
      throw error;
    }
    this.counters.appends++;
    this.counters.appendedBytes += update.byteLength;
    if (plan.log.shouldCompact()) this.scheduleCompaction(planId, plan);
  }

  async flush(planId: string): Promise<void> {
    const plan = this.get(planId);
    if (plan.compacting) await plan.compacting;
    // A failed write left a hole in the file: only a rewrite of the whole state makes it whole again.
    if (plan.log.needsRewrite) await this.compactNow(plan);
    try {
      await plan.log.sync();
    } catch (error) {
      this.counters.errors++;
      throw error;
    }
  }

  async compact(planId: string): Promise<void> {
    const plan = this.get(planId);
    if (plan.compacting) await plan.compacting;
    await this.compactNow(plan);
  }

  async release(planId: string): Promise<void> {
    const plan = this.plans.get(planId);
    if (!plan) return;
    try {
      await this.flush(planId);
    } finally {
      this.plans.delete(planId);
      try {
        await plan.log.close();
      } finally {
        plan.lock.release();
      }
    }
  }

  async close(): Promise<void> {
    const results = await Promise.allSettled([...this.plans.keys()].map((id) => this.release(id)));
    this.dirLock?.release();
    this.dirLock = null;
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  metrics(): StoreMetrics {
    let bytes = 0;
    for (const plan of this.plans.values()) bytes += plan.log.stats().bytes;
    return { plans: this.plans.size, bytes, damagedLogs: this.damaged.size, ...this.counters };
  }

  damagedLogs(): DamagedLog[] {
    return [...this.damaged.values()];
  }

  onError(listener: (error: Error, planId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private get(planId: string): OpenPlan {
    const plan = this.plans.get(planId);
    if (!plan) throw new CairnError('storage', `Plan "${planId}" is not loaded in this store.`, { planId });
    return plan;
  }

  private async compactNow(plan: OpenPlan): Promise<void> {
    try {
      await plan.log.compact(plan.snapshot);
      this.counters.compactions++;
    } catch (error) {
      this.counters.errors++;
      throw error;
    }
  }

  private scheduleCompaction(planId: string, plan: OpenPlan): void {
    if (plan.compacting || Date.now() < plan.retryAt || this.plans.get(planId) !== plan) return;
    plan.compacting = this.compactNow(plan)
      .then(
        () => {
          plan.retryDelay = 0;
        },
        (error: unknown) => {
          // Back off, so a full disk is not hit with a whole-state rewrite on every update.
          plan.retryDelay = Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, plan.retryDelay * 2));
          plan.retryAt = Date.now() + plan.retryDelay;
          this.emit(toCairnError(error), planId);
        },
      )
      .finally(() => {
        plan.compacting = null;
      });
  }

  // The hub logs each refused load (the error names the file and what is left); this keeps it for /healthz.
  private refuseDamaged(planId: string, damage: LogDamage): void {
    if (this.damaged.has(planId)) return;
    const { path, offset, keptRecords, recordsAfter, damagedBytes } = damage;
    const since = new Date().toISOString();
    this.damaged.set(planId, { planId, path, offset, keptRecords, recordsAfter, damagedBytes, since });
  }

  private tellRecovery(planId: string, recovery: LogRecovery): void {
    const path = planFiles(this.dir, planId).log;
    this.counters.tornTails++;
    this.emit(new CairnError('storage', describeRecovery(path, recovery), { path, recovery }), planId);
    this.options.onRecover?.({ ...recovery, planId, path });
  }

  private report(error: Error, planId: string): void {
    this.counters.errors++;
    this.emit(error, planId);
  }

  private emit(error: Error, planId: string): void {
    for (const listener of this.listeners) {
      try {
        listener(error, planId);
      } catch {
        // One listener's failure must not hide the error from the others.
      }
    }
  }
}
