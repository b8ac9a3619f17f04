// An append-only log file of Yjs updates with checksummed records, batched fsync and compaction by atomic
// rename. One writer per file: the caller holds a lock (see ./lock.ts) for as long as the log is open.
import { Buffer } from 'node:buffer';
import * as nodeFs from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { CairnError } from '../../errors.js';
import {
  checkHeader,
  encodeHeader,
  encodeRecord,
  encodeRecordsInto,
  FRAME_BYTES,
  HEADER_BYTES,
  type LogDamage,
  type LogScan,
  parseRecords,
  scanLog,
} from './format.js';
import { behindSnapshot, type FrameMark, type LogPosition, readSnapshotFile } from './snapshot-file.js';

/** Where appends are framed before their write: one buffer for every log (a write is done when `append` returns). */
const scratch = Buffer.allocUnsafe(64 * 1024);

/**
 * - `batched` (default): each append is written with `writeSync` before `append` returns, so it is in the OS page
 *   cache and survives the process being killed (`kill -9`, a crash, an OOM kill). An fsync follows within
 *   `fsyncDelayMs` and on every `sync()`, so a power loss or kernel crash can lose the last few milliseconds.
 * - `fsync-every-write`: `append` also fsyncs before it returns: survives power loss, at the cost of one fsync
 *   (typically 0.1 to 10 ms) per update.
 */
export type Durability = 'batched' | 'fsync-every-write';

export type { CompactionPolicy } from '../../persistence/policy.js';
export { compactAfterRecords } from '../../persistence/policy.js';

export interface UpdateLogOptions {
  /** Default `batched`. */
  durability?: Durability;
  /** Delay before the fsync that follows a batched append; appends within it share one fsync. Default 5 ms. */
  fsyncDelayMs?: number;
  /** Failures of the background fsync (the one scheduled after a batched append). */
  onError?: (error: CairnError) => void;
  /** The file system calls to use; node:fs by default. Tests wrap it to inject failures. */
  fs?: typeof nodeFs;
  /**
   * The plan's first-read snapshot file (`<name>.snap`). When it is intact, `open` checks the log against it
   * before changing anything: a log that lacks what the snapshot saw (emptied, deleted, cut) is damage.
   */
  snapshotPath?: string;
}

/** What `open` cut off the end of the file: an incomplete last record (a write a crash cut short). */
export interface LogRecovery {
  kind: 'torn';
  /** Offset where the valid records end and the file was cut. */
  offset: number;
  discardedBytes: number;
  /** Valid records kept before the cut. */
  keptRecords: number;
}

export type { LogDamage } from './format.js';

export interface UpdateLogStats {
  path: string;
  /** File size. */
  bytes: number;
  records: number;
  /** Payload size of the first record: the plan's whole state (`Y.encodeStateAsUpdate`) once it was compacted. */
  stateBytes: number;
  /**
   * @deprecated The same number as `stateBytes`, under a name that also meant the first-read snapshot file; it
   * will be removed in a later minor version.
   */
  snapshotBytes: number;
  /** Records and bytes after the first record: what the compaction policy measures. */
  tailRecords: number;
  tailBytes: number;
  compactions: number;
  fsyncs: number;
}

/**
 * The log of one document's updates: `open` reads the file (cutting a torn tail), `append` writes one update
 * synchronously, `sync` makes everything appended durable, `compact` replaces the history by the state.
 *
 * ```ts
 * const log = UpdateLog.open('/data/plan.log');           // throws CairnError('storage') if unreadable
 * Y.transact(doc, () => { for (const u of log.takeLoadedRecords()) Y.applyUpdate(doc, u) }, origin);
 * doc.on('update', (u, o) => { if (o !== origin) log.append(u) });   // throws CairnError('storage') on failure
 * await log.compact(Y.encodeStateAsUpdate(doc));   // when the caller's policy says (persistence/policy.ts)
 * await log.sync();   // fsync: what was appended is on disk
 * await log.close();
 * ```
 *
 * After a failed append or fsync the file may miss an update that later ones depend on, so `needsRewrite`
 * turns true, further appends are not written: the caller's next `compact` rewrites the whole state and clears
 * it. `compact`'s state must contain every update appended before the call (appends made after it are carried
 * over into the new file).
 */
export class UpdateLog {
  readonly path: string;
  /** What the load cut off (also in the return of `open`), or null for an intact file. */
  readonly recovery: LogRecovery | null;

  private readonly fs: typeof nodeFs;
  private readonly durability: Durability;
  private readonly fsyncDelayMs: number;
  private readonly onError: ((error: CairnError) => void) | undefined;

  private fd: number;
  private loaded: Uint8Array[] | null;
  private size: number;
  private records: number;
  private stateBytes: number;
  private tailRecords: number;
  private tailBytes: number;
  private compactions = 0;
  private fsyncs = 0;
  /** The first and last record's frames: what a snapshot file checks to know the log has not changed since. */
  private firstFrame: FrameMark | null = null;
  private lastFrame: FrameMark | null = null;

  private rewriteNeeded = false;
  private closed = false;
  /** Records appended while a compaction runs, to be copied into the new file. */
  private carry: Uint8Array[] | null = null;
  private writeSeq = 0;
  private syncedSeq = 0;
  private dirDirty: boolean;
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** fsync and compaction run one at a time, in order. */
  private queue: Promise<unknown> = Promise.resolve();
  private pendingSync: Promise<void> | null = null;

  /**
   * Opens (or creates) the log at `path` and reads its records. A torn tail is cut off and described in
   * `recovery`. Throws CairnError('storage') if the file cannot be read, is not an update log, or is damaged
   * (`details.damage`, a LogDamage: the file is left untouched). The caller must hold the plan's lock.
   */
  static open(path: string, options: UpdateLogOptions = {}): UpdateLog {
    const fs = options.fs ?? nodeFs;
    removeLeftoverTemps(fs, path);
    const existed = fs.existsSync(path);
    let fd: number;
    try {
      fd = fs.openSync(path, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o644);
    } catch (error) {
      throw storageError('open', path, error);
    }
    try {
      const bytes = readAll(fs, fd);
      const header = checkHeader(bytes);
      if (header === 'bad') {
        // Intact records behind a header that does not match: a Cairn log whose header was damaged.
        const scan = scanLog(bytes);
        if (scan.after.length > 0) throw damagedError(describeDamage(path, scan));
        throw new CairnError(
          'storage',
          `${path} is not a Cairn update log (its first bytes are not "CYL1" + version). ` +
            'Move it away or choose another directory; it was left untouched.',
          { path },
        );
      }
      if (header === 'empty') {
        refuseIfBehindSnapshot(fs, path, options.snapshotPath, bytes, bytes.byteLength, []);
        writeAll(fs, fd, encodeHeader(), 0);
        fs.ftruncateSync(fd, HEADER_BYTES);
        return new UpdateLog(path, fs, fd, options, [], HEADER_BYTES, null, true);
      }
      const parsed = parseRecords(bytes);
      // A checksum failure with bytes after it, or intact records behind what looks like a torn tail, is damage:
      // cutting there would drop data, so the file is refused untouched and an operator decides.
      const scan = parsed.bad ? scanLog(bytes) : null;
      if (scan?.bad?.kind === 'corrupt') throw damagedError(describeDamage(path, scan));
      // Before a torn tail is cut: a cut that took records the snapshot saw is damage, not a torn last write.
      refuseIfBehindSnapshot(fs, path, options.snapshotPath, bytes, parsed.end, parsed.records);
      let recovery: LogRecovery | null = null;
      if (parsed.bad) {
        fs.ftruncateSync(fd, parsed.end);
        fs.fsyncSync(fd);
        recovery = {
          kind: 'torn',
          offset: parsed.end,
          discardedBytes: bytes.byteLength - parsed.end,
          keptRecords: parsed.records.length,
        };
      }
      return new UpdateLog(path, fs, fd, options, parsed.records, parsed.end, recovery, false);
    } catch (error) {
      fs.closeSync(fd);
      if (!existed) fs.rmSync(path, { force: true }); // a refused open leaves no log it created behind
      throw error instanceof CairnError ? error : storageError('read', path, error);
    }
  }

  /** Reads the records of a log without changing it (no lock needed); null if the file does not exist. */
  static read(path: string, fs: typeof nodeFs = nodeFs): Uint8Array[] | null {
    let bytes: Uint8Array;
    try {
      bytes = fs.readFileSync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw storageError('read', path, error);
    }
    const header = checkHeader(bytes);
    if (header === 'bad') throw new CairnError('storage', `${path} is not a Cairn update log.`, { path });
    return header === 'empty' ? [] : parseRecords(bytes).records;
  }

  private constructor(
    path: string,
    fs: typeof nodeFs,
    fd: number,
    options: UpdateLogOptions,
    records: Uint8Array[],
    size: number,
    recovery: LogRecovery | null,
    created: boolean,
  ) {
    this.path = path;
    this.fs = fs;
    this.fd = fd;
    this.durability = options.durability ?? 'batched';
    this.fsyncDelayMs = options.fsyncDelayMs ?? 5;
    this.onError = options.onError;
    this.loaded = records;
    this.size = size;
    this.records = records.length;
    const first = records[0];
    this.stateBytes = first?.byteLength ?? 0;
    this.tailRecords = Math.max(0, records.length - 1);
    this.tailBytes = first ? size - HEADER_BYTES - 8 - first.byteLength : 0;
    this.recovery = recovery;
    // The records are views into the file's bytes: their frames sit just before them.
    if (first) this.firstFrame = markOfParsed(first);
    const last = records.at(-1);
    if (last) this.lastFrame = markOfParsed(last);
    // A new file's directory entry is not durable until the directory is fsynced.
    this.dirDirty = created;
    if (created) this.writeSeq = 1;
  }

  /** The records read at open, oldest first; returns them once and then forgets them (they can be large). */
  takeLoadedRecords(): Uint8Array[] {
    const records = this.loaded ?? [];
    this.loaded = null;
    return records;
  }

  /** True after a failed write or fsync, until a `compact` succeeds. */
  get needsRewrite(): boolean {
    return this.rewriteNeeded;
  }

  /**
   * Writes one update before returning (page cache; fsync too with `fsync-every-write`). Throws
   * CairnError('storage') if the write fails; the log then needs a rewrite (see the class comment).
   */
  append(update: Uint8Array): void {
    this.appendMany([update]);
  }

  /**
   * Appends several updates, in order, in one write (one record each): what a caller that groups the updates of
   * a moment pays once instead of once per update. Same guarantees and errors as `append`.
   */
  appendMany(updates: readonly Uint8Array[]): void {
    if (this.closed) throw new CairnError('storage', `The log ${this.path} is closed.`, { path: this.path });
    if (updates.length === 0) return;
    this.carry?.push(...updates.map(encodeRecord));
    if (this.rewriteNeeded) return; // the next compaction writes the caller's whole state
    // Written before this returns, so the shared scratch buffer is free again by the next append of any log.
    const bytes = encodeRecordsInto(scratch, updates);
    try {
      writeAll(this.fs, this.fd, bytes, this.size);
      if (this.durability === 'fsync-every-write') {
        this.fs.fsyncSync(this.fd);
        this.fsyncs++;
      }
    } catch (error) {
      this.rewriteNeeded = true;
      try {
        this.fs.ftruncateSync(this.fd, this.size); // cut a partial record, so the file stays readable
      } catch {
        // The rewrite replaces the file anyway.
      }
      throw storageError('append to', this.path, error);
    }
    for (let at = 0; at < bytes.byteLength; ) {
      const record = bytes.subarray(at, at + FRAME_BYTES + uint32At(bytes, at));
      this.lastFrame = markOfRecord(record, this.size);
      this.firstFrame ??= this.lastFrame;
      this.size += record.byteLength;
      this.records++;
      this.tailRecords++;
      this.tailBytes += record.byteLength;
      at += record.byteLength;
    }
    this.writeSeq++;
    if (this.durability === 'fsync-every-write') this.syncedSeq = this.writeSeq;
    else this.scheduleSync();
  }

  /**
   * Replaces the file by `state` (then `keep`, then what is appended after this call): written to a temp file, fsynced,
   * renamed over the log, directory fsynced. A crash at any point leaves either the old or the new file, both
   * complete.
   */
  compact(state: Uint8Array, keep: readonly Uint8Array[] = []): Promise<void> {
    // Carried from the call on: what is appended while an fsync ahead of this job runs is not in `state`.
    // `keep`: records already in the file that `state` does not hold, written right after it.
    const carry: Uint8Array[] = keep.map(encodeRecord);
    this.carry = carry;
    return this.enqueue(async () => {
      if (this.closed) return;
      const tmp = join(dirname(this.path), `${basename(this.path)}.${process.pid}-${randomId()}.compact`);
      let fd: number | null = null;
      let size: number;
      let first: FrameMark;
      let last: FrameMark;
      try {
        fd = this.fs.openSync(tmp, 'wx', 0o644);
        const head = concatAll([encodeHeader(), encodeRecord(state)]);
        writeAll(this.fs, fd, head, 0);
        await fsyncAsync(this.fs, fd);
        // From here to the swap everything is synchronous: no append can slip in between.
        size = head.byteLength;
        first = markOfRecord(head.subarray(HEADER_BYTES), HEADER_BYTES);
        last = first;
        for (const record of carry) {
          last = markOfRecord(record, size);
          writeAll(this.fs, fd, record, size);
          size += record.byteLength;
        }
        if (this.durability === 'fsync-every-write' && carry.length > 0) this.fs.fsyncSync(fd);
        this.fs.renameSync(tmp, this.path);
      } catch (error) {
        this.carry = null;
        if (fd !== null) closeQuietly(this.fs, fd);
        this.fs.rmSync(tmp, { force: true });
        throw storageError('compact', this.path, error);
      }
      this.carry = null;
      closeQuietly(this.fs, this.fd);
      this.fd = fd;
      this.size = size;
      this.records = 1 + carry.length;
      this.stateBytes = state.byteLength;
      this.firstFrame = first;
      this.lastFrame = last;
      this.tailRecords = carry.length;
      this.tailBytes = size - HEADER_BYTES - 8 - state.byteLength;
      this.rewriteNeeded = false;
      this.compactions++;
      this.writeSeq++;
      this.dirDirty = true;
      if (this.durability === 'fsync-every-write') {
        // Appends after this point go to the new file: its name must be durable before they are acknowledged.
        fsyncDirSync(this.fs, this.path);
        this.dirDirty = false;
        this.syncedSeq = this.writeSeq;
      } else {
        this.scheduleSync();
      }
    });
  }

  /** Resolves once everything appended before the call is fsynced (file and, after a rename, directory). */
  sync(): Promise<void> {
    if (this.pendingSync) return this.pendingSync;
    const job = this.enqueue(async () => {
      this.pendingSync = null;
      if (this.closed) return;
      const target = this.writeSeq;
      if (target > this.syncedSeq) {
        try {
          await fsyncAsync(this.fs, this.fd);
          this.fsyncs++;
        } catch (error) {
          // After a failed fsync Linux may drop the dirty pages: only a rewrite makes the file whole again.
          this.rewriteNeeded = true;
          throw storageError('fsync', this.path, error);
        }
      }
      if (this.dirDirty) {
        try {
          await fsyncDirAsync(this.fs, this.path);
          this.dirDirty = false;
        } catch (error) {
          throw storageError('fsync the directory of', this.path, error);
        }
      }
      this.syncedSeq = Math.max(this.syncedSeq, target);
    });
    this.pendingSync = job;
    return job;
  }

  /** Where the log stands (size, first and last record), or null while it misses a write (needs a rewrite). */
  position(): LogPosition | null {
    if (this.rewriteNeeded || this.closed) return null;
    return { bytes: this.size, first: this.firstFrame, last: this.lastFrame };
  }

  stats(): UpdateLogStats {
    return {
      path: this.path,
      bytes: this.size,
      records: this.records,
      stateBytes: this.stateBytes,
      snapshotBytes: this.stateBytes,
      tailRecords: this.tailRecords,
      tailBytes: this.tailBytes,
      compactions: this.compactions,
      fsyncs: this.fsyncs,
    };
  }

  /** Syncs, then closes the file. Rejects (after closing) if the final fsync failed. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    try {
      await this.sync();
    } finally {
      await this.enqueue(async () => {
        if (this.closed) return;
        this.closed = true;
        closeQuietly(this.fs, this.fd);
      });
    }
  }

  private scheduleSync(): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.sync().catch((error: CairnError) => this.onError?.(error));
    }, this.fsyncDelayMs);
    // A pending fsync must not keep the process alive: the data is already in the page cache.
    this.timer.unref?.();
  }

  private enqueue<T>(job: () => Promise<T>): Promise<T> {
    const run = this.queue.then(job);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

function markOfParsed(payload: Uint8Array): FrameMark {
  const offset = payload.byteOffset - FRAME_BYTES;
  return markOfRecord(new Uint8Array(payload.buffer, offset, FRAME_BYTES), offset);
}

function markOfRecord(record: Uint8Array, offset: number): FrameMark {
  return { offset, length: uint32At(record, 0), crc: uint32At(record, 4) };
}

/** A little-endian u32, read without a DataView (one per appended record). */
function uint32At(bytes: Uint8Array, at: number): number {
  return (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) >>> 0;
}

/** One line for an operator: which file lost what to a torn tail. */
export function describeRecovery(path: string, recovery: LogRecovery): string {
  return (
    `${path} ended in an incomplete record at byte ${recovery.offset} (a write cut short by a crash): ` +
    `cut ${recovery.discardedBytes} bytes, which held no complete update; kept ${recovery.keptRecords} records.`
  );
}

/** Summarizes a scan of a damaged log. */
export function describeDamage(path: string, scan: LogScan): LogDamage {
  return {
    path,
    offset: scan.bad?.offset ?? scan.bytes,
    keptRecords: scan.before.length,
    recordsAfter: scan.after.length,
    damagedBytes: scan.damaged.reduce((sum, [start, end]) => sum + end - start, 0),
  };
}

/** Throws the damage of a log whose intact records (`bytes` up to `end`) lack what its snapshot file saw. */
function refuseIfBehindSnapshot(
  fs: typeof nodeFs,
  path: string,
  snapshotPath: string | undefined,
  bytes: Uint8Array,
  end: number,
  records: readonly Uint8Array[],
): void {
  if (!snapshotPath) return;
  const damage = behindSnapshot(path, snapshotPath, readSnapshotFile(fs, snapshotPath), bytes, end, records);
  if (damage) throw damagedError(damage);
}

function damagedError(damage: LogDamage): CairnError {
  if (damage.snapshot) {
    const { snapshot } = damage;
    return new CairnError(
      'storage',
      `${damage.path} is damaged: it holds less than its snapshot ${snapshot.path} saw ` +
        `(${snapshot.operations} operations of ${snapshot.clients} writers are in no intact record; the log has ` +
        `${damage.keptRecords} intact records ending at byte ${damage.offset}` +
        `${damage.damagedBytes > 0 ? `, ${damage.damagedBytes} bytes short of what the snapshot saw` : ''}). ` +
        'The plan is not opened, so nothing overwrites the snapshot or the log. See what is left with ' +
        `"cairn log inspect ${damage.path}"; "cairn log repair ${damage.path}" keeps the snapshot aside and serves ` +
        'the log, and "--from-snapshot" also writes the snapshot\'s content back into the plan.',
      { path: damage.path, damage },
    );
  }
  return new CairnError(
    'storage',
    `${damage.path} is damaged: ${damage.offset === 0 ? 'its header does not match' : `the record at byte ${damage.offset} fails its checksum`} ` +
      `(${damage.damagedBytes} bytes hold no intact record; ${damage.keptRecords} intact records come before them ` +
      `and ${damage.recordsAfter} after). The plan is not opened, so nothing overwrites what is left. ` +
      `See what it holds with "cairn log inspect ${damage.path}" and keep every intact record with ` +
      `"cairn log repair ${damage.path}".`,
    { path: damage.path, damage },
  );
}

function storageError(action: string, path: string, cause: unknown): CairnError {
  const err = cause as NodeJS.ErrnoException;
  const reason = err?.message ?? String(cause);
  return new CairnError(
    'storage',
    `Could not ${action} ${path}: ${reason}`,
    { path, errno: err?.code },
    { cause },
  );
}

function readAll(fs: typeof nodeFs, fd: number): Uint8Array {
  const size = fs.fstatSync(fd).size;
  const bytes = new Uint8Array(size);
  let offset = 0;
  while (offset < size) {
    const n = fs.readSync(fd, bytes, offset, size - offset, offset);
    if (n === 0) break;
    offset += n;
  }
  return offset === size ? bytes : bytes.subarray(0, offset);
}

// writeSync may write less than asked (a signal, a full disk): loop until all is written or it throws.
function writeAll(fs: typeof nodeFs, fd: number, bytes: Uint8Array, position: number): void {
  let done = 0;
  while (done < bytes.byteLength) {
    const n = fs.writeSync(fd, bytes, done, bytes.byteLength - done, position + done);
    if (n <= 0) throw new Error(`write returned ${n}`);
    done += n;
  }
}

function fsyncAsync(fs: typeof nodeFs, fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fsync(fd, (error) => (error ? reject(error) : resolve())));
}

// Windows cannot open a directory for fsync; NTFS makes renames durable on its own.
export function fsyncDirSync(fs: typeof nodeFs, path: string): void {
  if (process.platform === 'win32') return;
  const fd = fs.openSync(dirname(path), 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function fsyncDirAsync(fs: typeof nodeFs, path: string): Promise<void> {
  if (process.platform === 'win32') return Promise.resolve();
  return new Promise((resolve, reject) => {
    fs.open(dirname(path), 'r', (openError, fd) => {
      if (openError) return reject(openError);
      fs.fsync(fd, (syncError) => fs.close(fd, () => (syncError ? reject(syncError) : resolve())));
    });
  });
}

function closeQuietly(fs: typeof nodeFs, fd: number): void {
  try {
    fs.closeSync(fd);
  } catch {
    // Closing is best effort; the data was synced (or the error reported) before.
  }
}

// Temp files of a compaction that a crash interrupted; the old log is still complete, so they are garbage.
function removeLeftoverTemps(fs: typeof nodeFs, path: string): void {
  // Exactly `<log>.<pid>-<id>.compact`: a looser match would catch the temps of a plan whose name extends ours.
  const own = new RegExp(`^${escapeRegExp(basename(path))}\\.\\d+-[a-z0-9]+\\.compact$`);
  let entries: string[];
  try {
    entries = fs.readdirSync(dirname(path));
  } catch {
    return; // the open that follows reports a missing directory
  }
  for (const entry of entries) {
    if (own.test(entry)) fs.rmSync(join(dirname(path), entry), { force: true });
  }
}

function concatAll(parts: readonly Uint8Array[]): Uint8Array {
  let size = 0;
  for (const part of parts) size += part.byteLength;
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}

function randomId(): string {
  return Math.random().toString(36).slice(2, 10);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
