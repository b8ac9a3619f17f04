// The disk PlanStore: one checksummed append log per plan (the UpdateLog of @cairn/core/fs, so a data directory
// of the server and of an agent's fs persistence hold the same files), a lock per plan and one for the directory.
import * as nodeFs from 'node:fs';
import { join, resolve } from 'node:path';
import { CairnError, isCairnError } from '@cairn/core';
import {
  acquireLock,
  type CompactionPolicy,
  type Durability,
  describeRecovery,
  type FileLock,
  type LogDamage,
  type LogRecovery,
  planFiles,
  readValidSnapshot,
  SnapshotWriter,
  UpdateLog,
} from '@cairn/core/fs';
import { type DecodedSnapshot, toCairnError } from '@cairn/core/protocol';
import type * as Y from 'yjs';
import type { DamagedLog, PlanStore, StoreMetrics } from './store.js';

export interface DiskStoreOptions {
  /**
   * `batched` (default): the updates appended in one turn of the event loop are written together at its end
   * (they survive kill -9 from then on), fsynced within `fsyncDelayMs` and on every flush, which writes what is
   * waiting at once (so an acknowledged write survives power loss too).
   * `fsync-every-write`: each such group is fsynced as it is written.
   */
  durability?: Durability;
  /**
   * Delay of the background fsync after a group is written, when no flush asks for one sooner. It bounds what a
   * power loss can take of unacknowledged edits (their clients still hold them and resend them when they
   * reconnect); an acknowledgement never waits for it. Default 1000 ms: each plan being written costs one fsync
   * per delay, which under many busy plans is a measurable share of the server's CPU (decision 024).
   */
  fsyncDelayMs?: number;
  /**
   * When to replace a plan's history by a snapshot. Default `{ records: 1000, minBytes: 256 KiB }`: a busy small
   * plan compacts every 1000 edits rather than every few hundred, and a cold load still applies at most about
   * 1000 records after the snapshot (a few ms).
   */
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
  /** The hub's document of the plan, read for the first-read snapshot (none: the store keeps no snapshot). */
  doc: Y.Doc | null;
  /** The plan's snapshot file (rewritten only when the log has moved). */
  snapshots: SnapshotWriter;
  /** Appended, not yet written: written together at the end of the event loop's turn, or by a flush. */
  pending: Uint8Array[];
  compacting: Promise<void> | null;
  retryAt: number;
  retryDelay: number;
}

/** The directory lock's name: a plan's files never start with a dot (names.ts encodes a leading one). */
const DIR_LOCK = '.cairn-server.lock';
/** See DiskStoreOptions.fsyncDelayMs and .compaction. */
const FSYNC_DELAY_MS = 1_000;
const COMPACTION: CompactionPolicy = { records: 1000, minBytes: 256 * 1024 };
const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5_000;

export class DiskStore implements PlanStore {
  readonly dir: string;
  private readonly fs: typeof nodeFs;
  private readonly plans = new Map<string, OpenPlan>();
  private readonly listeners = new Set<(error: Error, planId: string, what?: 'append') => void>();
  private readonly counters = { appends: 0, appendedBytes: 0, compactions: 0, errors: 0, tornTails: 0 };
  /** Plans refused because their log is damaged; a load that succeeds (after a repair) removes its entry. */
  private readonly damaged = new Map<string, DamagedLog>();
  /** Plans with pending updates, written by one `setImmediate` per turn of the event loop. */
  private readonly unwritten = new Map<string, OpenPlan>();
  private writeScheduled = false;
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

  async load(planId: string, snapshot: () => Uint8Array, doc?: Y.Doc): Promise<Uint8Array[]> {
    if (!this.dirLock)
      throw new CairnError('storage', `The store in ${this.dir} is closed.`, { path: this.dir });
    const files = planFiles(this.dir, planId);
    const lock = acquireLock(files.lock, this.fs);
    let log: UpdateLog;
    try {
      log = UpdateLog.open(files.log, {
        durability: this.options.durability,
        fsyncDelayMs: this.options.fsyncDelayMs ?? FSYNC_DELAY_MS,
        compaction: this.options.compaction ?? COMPACTION,
        fs: this.fs,
        snapshotPath: files.snapshot,
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
    const plan: OpenPlan = {
      log,
      lock,
      snapshot,
      doc: doc ?? null,
      snapshots: new SnapshotWriter(this.fs, files.snapshot),
      pending: [],
      compacting: null,
      retryAt: 0,
      retryDelay: 0,
    };
    this.plans.set(planId, plan);
    const records = log.takeLoadedRecords();
    if (log.shouldCompact()) queueMicrotask(() => this.scheduleCompaction(planId, plan));
    return records;
  }

  // Group commit: the relay of an update to its peers runs before this, and no disk call happens here. The
  // updates of one turn of the event loop (many clients, many plans) are written once per plan at its end;
  // an acknowledgement's flush writes what waits at once and then fsyncs, so it still follows durability.
  append(planId: string, update: Uint8Array): void {
    const plan = this.get(planId);
    plan.pending.push(update);
    this.counters.appends++;
    this.counters.appendedBytes += update.byteLength;
    this.unwritten.set(planId, plan);
    if (this.writeScheduled) return;
    this.writeScheduled = true;
    setImmediate(this.writeUnwritten);
  }

  private readonly writeUnwritten = (): void => {
    this.writeScheduled = false;
    for (const [planId, plan] of this.unwritten) this.writePending(planId, plan);
  };

  /** Writes what the plan has pending (one write); a failure is reported and repaired by the next compaction. */
  private writePending(planId: string, plan: OpenPlan): void {
    this.unwritten.delete(planId);
    if (plan.pending.length === 0) return;
    const updates = plan.pending;
    plan.pending = [];
    try {
      plan.log.appendMany(updates);
    } catch (error) {
      this.counters.errors++;
      this.scheduleCompaction(planId, plan);
      this.emit(toCairnError(error), planId, 'append');
      return;
    }
    if (plan.log.shouldCompact()) this.scheduleCompaction(planId, plan);
  }

  async flush(planId: string): Promise<void> {
    const plan = this.get(planId);
    this.writePending(planId, plan);
    if (plan.compacting) await plan.compacting;
    // A failed write left a hole in the file: only a rewrite of the whole state makes it whole again.
    if (plan.log.needsRewrite) await this.compactNow(planId, plan);
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
    await this.compactNow(planId, plan);
  }

  async release(planId: string): Promise<void> {
    const plan = this.plans.get(planId);
    if (!plan) return;
    try {
      await this.flush(planId);
      // The next load of the plan (or a read of it before that) finds its content here.
      this.writeSnapshot(planId, plan);
    } finally {
      this.plans.delete(planId);
      this.writePending(planId, plan); // anything appended while the flush ran; close() syncs it
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

  firstRead(planId: string): DecodedSnapshot | null {
    // Refused as damaged: stays refused until repaired. Held open (still loading, or being released): valid only
    // while the log holds everything the store was given, which the snapshot's position check then proves.
    if (this.damaged.has(planId)) return null;
    const open = this.plans.get(planId);
    if (open && (open.pending.length > 0 || open.log.needsRewrite)) return null;
    let files: ReturnType<typeof planFiles>;
    try {
      files = planFiles(this.dir, planId);
    } catch {
      return null;
    }
    // The whole log is checked too: a plan whose log was damaged since is refused, as its load would be.
    return readValidSnapshot(this.fs, files.snapshot, files.log, 'log');
  }

  metrics(): StoreMetrics {
    let bytes = 0;
    for (const plan of this.plans.values()) bytes += plan.log.stats().bytes;
    return { plans: this.plans.size, bytes, damagedLogs: this.damaged.size, ...this.counters };
  }

  damagedLogs(): DamagedLog[] {
    return [...this.damaged.values()];
  }

  onError(listener: (error: Error, planId: string, what?: 'append') => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private get(planId: string): OpenPlan {
    const plan = this.plans.get(planId);
    if (!plan) throw new CairnError('storage', `Plan "${planId}" is not loaded in this store.`, { planId });
    return plan;
  }

  private async compactNow(planId: string, plan: OpenPlan): Promise<void> {
    this.writePending(planId, plan);
    try {
      await plan.log.compact(plan.snapshot);
      this.counters.compactions++;
    } catch (error) {
      this.counters.errors++;
      throw error;
    }
    this.writeSnapshot(planId, plan);
  }

  /**
   * Writes the plan's first-read snapshot where the log holds exactly what the document holds: after a
   * compaction and at release. A failure is reported in the background, never to a flush: it is only a cache,
   * and the stale one on disk is never served (its position no longer matches the log).
   */
  private writeSnapshot(planId: string, plan: OpenPlan): void {
    const position = plan.doc && plan.pending.length === 0 ? plan.log.position() : null;
    if (!plan.doc || !position) return;
    try {
      plan.snapshots.write(plan.doc, position);
    } catch (error) {
      this.report(toCairnError(error), planId);
    }
  }

  private scheduleCompaction(planId: string, plan: OpenPlan): void {
    if (plan.compacting || Date.now() < plan.retryAt || this.plans.get(planId) !== plan) return;
    plan.compacting = this.compactNow(planId, plan)
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
    const { path, offset, keptRecords, recordsAfter, damagedBytes, snapshot } = damage;
    const since = new Date().toISOString();
    const entry: DamagedLog = { planId, path, offset, keptRecords, recordsAfter, damagedBytes, since };
    if (snapshot) entry.snapshot = snapshot;
    this.damaged.set(planId, entry);
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

  private emit(error: Error, planId: string, what?: 'append'): void {
    for (const listener of this.listeners) {
      try {
        listener(error, planId, what);
      } catch {
        // One listener's failure must not hide the error from the others.
      }
    }
  }
}
