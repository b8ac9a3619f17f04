// @cairn/core/fs: Node disk persistence for an agent running alone. One append-only log of Yjs updates per plan,
// written synchronously on each edit (survives kill -9), fsynced in batches, compacted by atomic rename, locked.
import * as nodeFs from 'node:fs';
import { join, resolve } from 'node:path';
import * as Y from 'yjs';
import { CairnError, toCairnError } from '../errors.js';
import { type StoredPlan, storedPlan } from '../first-read.js';
import type { CreatePlanOptions } from '../plan.js';
import type { DecodedSnapshot } from '../snapshot.js';
import { applyStored, type DocPersistence } from '../storage.js';
import { acquireLock, type FileLock } from './fs/lock.js';
import { encodePlanName } from './fs/names.js';
import { readValidSnapshot, SnapshotWriter } from './fs/snapshot-file.js';
import {
  type CompactionPolicy,
  type Durability,
  describeRecovery,
  type LogRecovery,
  UpdateLog,
  type UpdateLogStats,
} from './fs/update-log.js';

export type { StoredPlan } from '../first-read.js';
export type { BadTail, LogScan, ParsedLog, ScannedRecord } from './fs/format.js';
export { encodeRecord, parseRecords, scanLog } from './fs/format.js';
export type { FileLock } from './fs/lock.js';
export { acquireLock } from './fs/lock.js';
export { decodePlanName, encodePlanName } from './fs/names.js';
export type { LogInspection, LogRepair, RepairOptions } from './fs/repair.js';
export { inspectLog, repairLog } from './fs/repair.js';
export type { FrameMark, LogPosition } from './fs/snapshot-file.js';
export { readValidSnapshot, SnapshotWriter, saveSnapshot } from './fs/snapshot-file.js';
export type {
  CompactionPolicy,
  Durability,
  LogDamage,
  LogRecovery,
  UpdateLogOptions,
  UpdateLogStats,
} from './fs/update-log.js';
export { describeRecovery, UpdateLog } from './fs/update-log.js';

export interface FilePersistenceOptions {
  /** `batched` (default: survives kill -9, fsync within `fsyncDelayMs`) or `fsync-every-write` (survives power loss). */
  durability?: Durability;
  /** Default 5 ms. */
  fsyncDelayMs?: number;
  /** Default `{ records: 1000, minBytes: 16384 }`; `false` turns compaction off. */
  compaction?: CompactionPolicy | false;
  /**
   * After a compaction the policy started, the first-read snapshot is written once the plan has had no write for
   * this long (default 1000 ms), not on the write path: encoding it costs about as much as the compaction, and a
   * plan still being written would make it stale at once. `close()` and `compact()` write it at once.
   */
  snapshotQuietMs?: number;
  /**
   * Told when the load cut an incomplete last record off the log (a write a crash cut short). Default: a
   * console.error line naming the plan, the file and what was cut. (A damaged log, a record failing its checksum
   * with bytes after it, is not cut: the open fails with CairnError('storage') and `details.damage`.)
   */
  onRecover?: (recovery: LogRecovery & { plan: string; path: string }) => void;
  /** File system calls, node:fs by default (tests wrap it to inject failures). */
  fs?: typeof nodeFs;
}

/** A plan bound to its log file. */
export interface FilePersistence extends DocPersistence {
  readonly name: string;
  /** The log file of this plan. */
  readonly path: string;
  /** What the load cut off the end of the log (a torn last record), or null. */
  readonly recovery: LogRecovery | null;
  /** Size and history of the log; null if the open failed or after close. */
  stats(): UpdateLogStats | null;
  /** Compacts now, whatever the policy says (e.g. before a backup). */
  compact(): Promise<void>;
}

export type OpenFilePersistence = (name: string, doc: Y.Doc) => FilePersistence;

/**
 * Paths of a plan's files in `dir`: the log, its lock and its first-read snapshot. Throws
 * CairnError('invalid_argument') for a bad name.
 */
export function planFiles(dir: string, name: string): { log: string; lock: string; snapshot: string } {
  const base = join(resolve(dir), encodePlanName(name));
  return { log: `${base}.log`, lock: `${base}.lock`, snapshot: `${base}.snap` };
}

/**
 * Disk persistence in `dir` (created if missing): `openFilePersistence(dir)(name, doc)` loads the plan into `doc`
 * and stores every later update. A second open of the same plan while it is open (in this process or another)
 * fails with CairnError('locked'); a bad name throws CairnError('invalid_argument') at once.
 *
 * ```ts
 * const open = openFilePersistence('./data');
 * const stored = open('biz:1:conv:9', doc);
 * await stored.whenLoaded;
 * // ... edits are on disk as soon as each call returns ...
 * await stored.close();
 * ```
 */
export function openFilePersistence(dir: string, options: FilePersistenceOptions = {}): OpenFilePersistence {
  return (name, doc) => new FilePersistenceImpl(dir, name, doc, options, false);
}

/**
 * Opens a stored plan for a fast first read: takes the lock, reads the plan's snapshot (`<name>.snap`) if it
 * reflects exactly what the log holds, and loads the log into a fresh doc after the caller's first read (on the
 * next macrotask). `firstRead` answers from the snapshot until then; writes wait for `whenHydrated`.
 *
 * ```ts
 * const stored = openFilePlan('./data', 'biz:1:conv:9', { plan: { actor: 'agent:me' } });
 * const { plan } = await stored.firstRead;   // ready(), list(), get(), renderPlan() at once
 * const writable = await stored.whenHydrated; // the whole history is loaded: writes go here
 * ```
 */
export function openFilePlan(
  dir: string,
  name: string,
  options: FilePersistenceOptions & { plan?: Omit<CreatePlanOptions, 'doc'> } = {},
): StoredPlan<FilePersistence> {
  const doc = new Y.Doc();
  const persistence = new FilePersistenceImpl(dir, name, doc, options, true);
  return storedPlan(persistence, doc, Promise.resolve(persistence.firstSnapshot), options.plan);
}

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5_000;

class FilePersistenceImpl implements FilePersistence {
  readonly name: string;
  readonly path: string;
  readonly whenLoaded: Promise<void>;

  private readonly doc: Y.Doc;
  private readonly options: FilePersistenceOptions;
  private readonly lockPath: string;
  private log: UpdateLog | null = null;
  private lock: FileLock | null = null;
  private failure: CairnError | null = null;
  private readonly listeners = new Set<(error: CairnError) => void>();
  /** Errors not yet reported by a flush(). */
  private unflushed: CairnError[] = [];
  private compacting: Promise<void> | null = null;
  private retryDelay = 0;
  private retryAt = 0;
  private closing: Promise<void> | null = null;
  private closed = false;
  private readonly snapshotPath: string;
  private readonly snapshots: SnapshotWriter;
  /** The valid snapshot found at open, when opened for a first read (openFilePlan). */
  readonly firstSnapshot: DecodedSnapshot | null = null;
  /** Updates appended since open: the quiet timer compares it to tell whether the plan was written meanwhile. */
  private appends = 0;
  private quietTimer: ReturnType<typeof setTimeout> | null = null;
  /** A compaction the policy asked for during a write, waiting for the next turn of the event loop. */
  private compactionTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(dir: string, name: string, doc: Y.Doc, options: FilePersistenceOptions, firstRead: boolean) {
    const files = planFiles(dir, name); // bad input throws here, before anything changes
    this.name = name;
    this.path = files.log;
    this.lockPath = files.lock;
    this.snapshotPath = files.snapshot;
    this.doc = doc;
    this.options = options;
    this.snapshots = new SnapshotWriter(options.fs ?? nodeFs, this.snapshotPath);
    doc.on('destroy', this.onDestroy);
    try {
      this.takeLock(dir);
      if (!firstRead) {
        this.load();
        this.whenLoaded = Promise.resolve();
        return;
      }
      const fs = this.options.fs ?? nodeFs;
      // The lock is ours, so nothing can be appended between this check and the load.
      this.firstSnapshot = readValidSnapshot(fs, this.snapshotPath, this.path);
      if (this.firstSnapshot) this.snapshots.found(this.firstSnapshot.at);
      // After the caller's first read: a load of a long history takes hundreds of ms of synchronous work.
      this.whenLoaded = new Promise<void>((resolve) => setTimeout(resolve, 0)).then(() => {
        if (this.closed) return;
        try {
          this.load();
        } catch (error) {
          throw this.fail(error);
        }
      });
      this.whenLoaded.catch(() => undefined);
    } catch (error) {
      this.whenLoaded = Promise.reject(this.fail(error));
      // Handled here so a caller that only awaits flush() does not crash on an unhandled rejection.
      this.whenLoaded.catch(() => undefined);
    }
  }

  private fail(error: unknown): CairnError {
    this.failure = asStorageError(error, this.path);
    this.detach();
    this.lock?.release();
    this.lock = null;
    return this.failure;
  }

  get recovery(): LogRecovery | null {
    return this.log?.recovery ?? null;
  }

  private takeLock(dir: string): void {
    const fs = this.options.fs ?? nodeFs;
    fs.mkdirSync(dir, { recursive: true });
    this.lock = acquireLock(this.lockPath, fs);
  }

  // Synchronous: the plan is loaded (or refused) when it returns.
  private load(): void {
    const fs = this.options.fs ?? nodeFs;
    const prior = this.doc.store.clients.size > 0 ? Y.encodeStateAsUpdate(this.doc) : null;
    const log = UpdateLog.open(this.path, {
      durability: this.options.durability,
      fsyncDelayMs: this.options.fsyncDelayMs,
      compaction: this.options.compaction,
      fs,
      snapshotPath: this.snapshotPath,
      onError: (error) => this.report(error),
    });
    try {
      const reaction = applyStored(this.doc, log.takeLoadedRecords(), this);
      if (prior) log.append(prior); // the doc held edits before it was opened: they belong to the plan too
      if (reaction) log.append(reaction);
    } catch (error) {
      void log.close().catch(() => undefined);
      throw error;
    }
    this.log = log;
    // Registered after the load, which is synchronous, so no update can slip past. Registered before it, the
    // listener made Yjs encode the whole loaded state once more (an 'update' event) only to ignore it.
    this.doc.on('update', this.onUpdate);
    if (log.recovery) this.tellRecovery(log.recovery);
    if (log.shouldCompact()) this.scheduleCompaction();
  }

  /**
   * Writes the first-read snapshot of what the log holds now. Called where the doc and the log hold the same
   * state (every update is appended synchronously): after a compaction (once writes pause, for one the policy
   * started) and at close. A failure is told to the onError listeners but rejects no flush(): the snapshot is a
   * cache, and the stale one is never served.
   */
  private writeSnapshot(): void {
    const log = this.log;
    const position = log?.position();
    if (!position) return;
    try {
      this.snapshots.write(this.doc, position);
    } catch (error) {
      this.report(error, false);
    }
  }

  private readonly onUpdate = (update: Uint8Array, origin: unknown): void => {
    const log = this.log;
    if (origin === this || !log || this.closed) return;
    this.appends++;
    try {
      log.append(update);
    } catch (error) {
      this.report(error);
    }
    if (log.shouldCompact()) this.compactSoon();
  };

  /**
   * Starts the compaction the policy asks for on the next turn of the event loop, not inside the write. A compaction
   * waits for an fsync that completes only when the loop turns, and carries every write made meanwhile into the
   * new file: started inside a burst of writes that never yields (a script adding thousands of tasks), it held the
   * whole burst in memory a second time and ended with a snapshot of the burst's first moments. Started after the
   * burst, it takes the whole state at once. flush() starts a waiting one itself.
   */
  private compactSoon(): void {
    if (this.compactionTimer || this.compacting) return;
    this.compactionTimer = setTimeout(() => this.startWaitingCompaction(), 0);
    this.compactionTimer.unref?.();
  }

  private startWaitingCompaction(): void {
    if (!this.compactionTimer) return;
    clearTimeout(this.compactionTimer);
    this.compactionTimer = null;
    if (this.log?.shouldCompact()) this.scheduleCompaction(); // an explicit compact() may have done it meanwhile
  }

  /** Writes the snapshot once no update was appended for `snapshotQuietMs` (see the option). */
  private snapshotWhenQuiet(): void {
    if (this.quietTimer || this.closed) return;
    const quietMs = this.options.snapshotQuietMs ?? 1000;
    let seen = this.appends;
    const check = () => {
      if (this.closed) return;
      if (this.appends !== seen) {
        seen = this.appends;
        this.quietTimer = setTimeout(check, quietMs);
        this.quietTimer.unref?.();
        return;
      }
      this.quietTimer = null;
      if (!this.compacting) this.writeSnapshot(); // a compaction running now writes it when it is done
    };
    this.quietTimer = setTimeout(check, quietMs);
    this.quietTimer.unref?.();
  }

  private readonly onDestroy = (): void => {
    this.close().catch((error: unknown) => this.report(error));
  };

  async flush(): Promise<void> {
    await this.whenLoaded;
    const log = this.log;
    if (log && !this.closed) {
      this.startWaitingCompaction();
      if (this.compacting) await this.compacting;
      if (log.needsRewrite) {
        this.retryAt = 0; // flush() always retries a failed write now
        this.scheduleCompaction();
        await this.compacting;
      }
      try {
        await log.sync();
      } catch (error) {
        this.report(error);
      }
    }
    const [first] = this.unflushed;
    this.unflushed = [];
    if (first) throw first;
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    if (this.failure) return; // the open failed: nothing is held
    let error: unknown = null;
    try {
      await this.flush();
    } catch (caught) {
      error = caught;
    }
    this.writeSnapshot();
    this.closed = true;
    if (this.quietTimer) clearTimeout(this.quietTimer);
    this.quietTimer = null;
    if (this.compactionTimer) clearTimeout(this.compactionTimer);
    this.compactionTimer = null;
    this.detach();
    try {
      await this.log?.close();
    } catch (caught) {
      error ??= caught;
    }
    this.log = null;
    this.lock?.release();
    this.lock = null;
    if (error) throw asStorageError(error, this.path);
  }

  onError(listener: (error: CairnError) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stats(): UpdateLogStats | null {
    return this.log?.stats() ?? null;
  }

  async compact(): Promise<void> {
    await this.whenLoaded;
    if (this.compacting) await this.compacting;
    if (!this.log || this.closed) return;
    await this.log.compact(() => Y.encodeStateAsUpdate(this.doc));
    this.writeSnapshot();
  }

  private scheduleCompaction(): void {
    const log = this.log;
    if (!log || this.compacting || this.closed || Date.now() < this.retryAt) return;
    this.compacting = log
      .compact(() => Y.encodeStateAsUpdate(this.doc))
      .then(
        () => {
          this.retryDelay = 0;
          this.snapshotWhenQuiet();
        },
        (error: unknown) => {
          // Back off, so a full disk is not hit with a whole-state rewrite on every edit.
          this.retryDelay = Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, this.retryDelay * 2));
          this.retryAt = Date.now() + this.retryDelay;
          this.report(error);
        },
      )
      .finally(() => {
        this.compacting = null;
      });
  }

  private report(error: unknown, rejectsFlush = true): void {
    const err = asStorageError(error, this.path);
    if (rejectsFlush) this.unflushed.push(err);
    // Delivered after the current Yjs transaction, so a listener cannot re-enter the edit that failed.
    queueMicrotask(() => {
      if (this.listeners.size === 0) {
        console.error(`[cairn] plan "${this.name}": ${err.message}`);
        return;
      }
      for (const listener of this.listeners) {
        try {
          listener(err);
        } catch {
          // A throwing listener must not hide the error from the others.
        }
      }
    });
  }

  private tellRecovery(recovery: LogRecovery): void {
    const info = { ...recovery, plan: this.name, path: this.path };
    if (this.options.onRecover) {
      this.options.onRecover(info);
      return;
    }
    console.error(`[cairn] plan "${this.name}": ${describeRecovery(this.path, recovery)}`);
  }

  private detach(): void {
    this.doc.off('update', this.onUpdate);
    this.doc.off('destroy', this.onDestroy);
  }
}

function asStorageError(error: unknown, path: string): CairnError {
  if (error instanceof CairnError) return error;
  const cause = toCairnError(error);
  return new CairnError('storage', `Could not use ${path}: ${cause.message}`, { path }, { cause: error });
}
