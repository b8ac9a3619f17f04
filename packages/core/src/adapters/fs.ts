// @cairn/core/fs: Node disk persistence for an agent running alone. One append-only log of Yjs updates per plan,
// written synchronously on each edit (survives kill -9), fsynced in batches, compacted by atomic rename, locked.
import * as nodeFs from 'node:fs';
import * as Y from 'yjs';
import { CairnError, toCairnError } from '../errors.js';
import { type StoredPlan, storedPlan } from '../first-read.js';
import { BoundDoc } from '../persistence/bound-doc.js';
import type { CompactionPolicy } from '../persistence/policy.js';
import { StoredLog } from '../persistence/stored-log.js';
import type { CreatePlanOptions } from '../plan.js';
import type { DecodedSnapshot } from '../snapshot.js';
import type { DocPersistence } from '../storage.js';
import { FileByteAdapter, planFiles } from './fs/byte-adapter.js';
import { FRAME_BYTES } from './fs/format.js';
import { readValidSnapshot, SnapshotWriter } from './fs/snapshot-file.js';
import { type Durability, describeRecovery, type LogRecovery, type UpdateLogStats } from './fs/update-log.js';

export type { StoredPlan } from '../first-read.js';
export type { FileByteAdapterOptions } from './fs/byte-adapter.js';
export { FileByteAdapter, planFiles } from './fs/byte-adapter.js';
export type { BadTail, LogScan, ParsedLog, ScannedRecord } from './fs/format.js';
export { encodeRecord, FRAME_BYTES, parseRecords, scanLog } from './fs/format.js';
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
  return storedPlan(persistence, doc, persistence.firstSnapshot, options.plan);
}

class FilePersistenceImpl extends BoundDoc implements FilePersistence {
  readonly name: string;
  readonly path: string;
  /** The valid snapshot found at open, when opened for a first read (openFilePlan). */
  readonly firstSnapshot: Promise<DecodedSnapshot | null>;
  private readonly adapter: FileByteAdapter;
  private torn: LogRecovery | null = null;

  constructor(dir: string, name: string, doc: Y.Doc, options: FilePersistenceOptions, firstRead: boolean) {
    const files = planFiles(dir, name); // bad input throws here, before anything changes
    const fs = options.fs ?? nodeFs;
    const snapshots = new SnapshotWriter(fs, files.snapshot);
    let opened: (log: StoredLog) => void = () => undefined;
    const whenOpened = new Promise<StoredLog>((resolve) => {
      opened = resolve;
    });
    const adapter = new FileByteAdapter(dir, {
      durability: options.durability,
      fsyncDelayMs: options.fsyncDelayMs,
      fs,
      onSyncError: (_name, error) => void whenOpened.then((log) => log.report(error, 'sync')),
      onRecover: (_name, path, recovery) => {
        this.torn = recovery;
        if (options.onRecover) options.onRecover({ ...recovery, plan: name, path });
        else console.error(`[cairn] plan "${name}": ${describeRecovery(path, recovery)}`);
      },
    });
    super(doc, {
      label: `plan "${name}"`,
      deferLoad: firstRead,
      describeError: (error) => asStorageError(error, files.log),
      opened,
      open: ({ state, onError }) =>
        StoredLog.open(adapter, name, {
          state,
          onError,
          compaction: options.compaction,
          recordOverhead: FRAME_BYTES,
          snapshotQuietMs: options.snapshotQuietMs ?? 1000,
          describeError: (error) => asStorageError(error, files.log),
          // Only while the log holds exactly what the doc does, which the layer checks before it calls this.
          writeSnapshot: () => {
            const position = adapter.log(name)?.position();
            if (position) snapshots.write(doc, position);
          },
        }),
    });
    this.name = name;
    this.path = files.log;
    this.adapter = adapter;
    // The lock is held once the log is open, so nothing can be appended between this check and the load.
    const found = whenOpened.then(() => {
      const valid = readValidSnapshot(fs, files.snapshot, files.log);
      if (valid) snapshots.found(valid.at);
      return valid;
    });
    // A refused open never opens the log: the first read then follows the load's rejection.
    this.firstSnapshot = firstRead
      ? Promise.race([found, this.whenLoaded.then(() => null)])
      : Promise.resolve(null);
  }

  get recovery(): LogRecovery | null {
    return this.torn;
  }

  stats(): UpdateLogStats | null {
    return this.log ? (this.adapter.log(this.name)?.stats() ?? null) : null;
  }

  async compact(): Promise<void> {
    await this.whenLoaded;
    await this.log?.compact();
  }
}

function asStorageError(error: unknown, path: string): CairnError {
  if (error instanceof CairnError) return error;
  const cause = toCairnError(error);
  return new CairnError('storage', `Could not use ${path}: ${cause.message}`, { path }, { cause: error });
}
