// The disk PlanStore: the file adapter of @cairn/core/fs under the one persistence layer (StoredLog), so a data
// directory of the server and of an agent's fs persistence hold the same files; plus a lock for the directory.
import * as nodeFs from 'node:fs';
import { join, resolve } from 'node:path';
import { CairnError, isCairnError } from '@cairn/core';
import {
  acquireLock,
  type CompactionPolicy,
  type Durability,
  describeRecovery,
  FileByteAdapter,
  type FileLock,
  FRAME_BYTES,
  type LogDamage,
  type LogRecovery,
  planFiles,
  readValidSnapshot,
  SnapshotWriter,
} from '@cairn/core/fs';
import { type DecodedSnapshot, StoredLog, toCairnError } from '@cairn/core/protocol';
import type * as Y from 'yjs';
import { LogStore } from './log-store.js';
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

/** The directory lock's name: a plan's files never start with a dot (names.ts encodes a leading one). */
const DIR_LOCK = '.cairn-server.lock';
/** See DiskStoreOptions.fsyncDelayMs and .compaction. */
const FSYNC_DELAY_MS = 1_000;
const COMPACTION: CompactionPolicy = { records: 1000, minBytes: 256 * 1024 };

export class DiskStore extends LogStore implements PlanStore {
  readonly dir: string;
  private readonly fs: typeof nodeFs;
  private readonly adapter: FileByteAdapter;
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
    super();
    this.dir = dir;
    this.dirLock = lock;
    this.fs = options.fs ?? nodeFs;
    this.adapter = new FileByteAdapter(dir, {
      durability: options.durability,
      fsyncDelayMs: options.fsyncDelayMs ?? FSYNC_DELAY_MS,
      fs: this.fs,
      onRecover: (planId, path, recovery) => this.tellRecovery(planId, path, recovery),
      onSyncError: (planId, error) => this.plans.get(planId)?.report(error, 'sync'),
    });
  }

  validatePlanId(planId: string): void {
    planFiles(this.dir, planId);
  }

  async load(planId: string, snapshot: () => Uint8Array, doc?: Y.Doc): Promise<Uint8Array[]> {
    if (!this.dirLock)
      throw new CairnError('storage', `The store in ${this.dir} is closed.`, { path: this.dir });
    const files = planFiles(this.dir, planId);
    const snapshots = new SnapshotWriter(this.fs, files.snapshot);
    let log: StoredLog;
    try {
      log = await StoredLog.open(this.adapter, planId, {
        state: snapshot,
        // Group commit: the relay of an update to its peers runs before it is written, and no disk call happens
        // on that path. The updates of one turn of the event loop are written once per plan at its end; an
        // acknowledgement's flush writes what waits at once and then fsyncs, so it still follows durability.
        batching: 'turn',
        compaction: this.options.compaction ?? COMPACTION,
        recordOverhead: FRAME_BYTES,
        // The next load of the plan (or a read of it before that) finds its content here.
        writeSnapshot: doc
          ? () => {
              const position = this.adapter.log(planId)?.position();
              if (position) snapshots.write(doc, position);
            }
          : undefined,
        onError: this.logErrors(planId),
      });
    } catch (error) {
      this.counters.errors++;
      const damage = isCairnError(error) ? (error.details.damage as LogDamage | undefined) : undefined;
      if (damage) this.refuseDamaged(planId, damage);
      throw error;
    }
    this.damaged.delete(planId);
    this.plans.set(planId, log);
    const records = log.takeLoaded();
    queueMicrotask(() => log.compactIfDue());
    return records;
  }

  async close(): Promise<void> {
    try {
      await this.releaseAll();
    } finally {
      this.dirLock?.release();
      this.dirLock = null;
    }
  }

  firstRead(planId: string): DecodedSnapshot | null {
    // Refused as damaged: stays refused until repaired. Held open (still loading, or being released): valid only
    // while the log holds everything the store was given, which the snapshot's position check then proves.
    if (this.damaged.has(planId)) return null;
    if (this.plans.get(planId)?.behind) return null;
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
    return this.metricsWith((planId) => this.adapter.log(planId)?.stats().bytes ?? 0, this.damaged.size);
  }

  damagedLogs(): DamagedLog[] {
    return [...this.damaged.values()];
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

  private tellRecovery(planId: string, path: string, recovery: LogRecovery): void {
    this.counters.tornTails++;
    this.emit(new CairnError('storage', describeRecovery(path, recovery), { path, recovery }), planId);
    this.options.onRecover?.({ ...recovery, planId, path });
  }
}
