// The first-read snapshot of a plan on disk, `<name>.snap` beside its log: valid only while the log is exactly as
// it was when the snapshot was written (same size, same first and last record), so any later append makes it stale.
import type * as nodeFs from 'node:fs';
import type * as Y from 'yjs';
import {
  type DecodedSnapshot,
  decodeSnapshot,
  encodeSnapshot,
  type SnapshotAhead,
  snapshotAheadOf,
} from '../../snapshot.js';
import { checkHeader, FRAME_BYTES, type LogDamage, parseRecords } from './format.js';

/** "CYS1" + u32 version 1, then the snapshot (see snapshot.ts: u32 crc32, JSON). */
const SNAP_MAGIC = Uint8Array.of(0x43, 0x59, 0x53, 0x31);
const SNAP_VERSION = 1;
const SNAP_HEADER_BYTES = 8;

/** A record's frame in the log: where it starts, its payload length and crc32. */
export interface FrameMark {
  offset: number;
  length: number;
  crc: number;
}

/** Where the log stood when a snapshot was taken. */
export interface LogPosition {
  bytes: number;
  first: FrameMark | null;
  last: FrameMark | null;
}

/**
 * Writes the snapshot file by rename, so it is never half-written. A cache: no fsync (a lost one is rebuilt). The
 * caller holds the plan's lock, so one fixed temp name suffices, and a crash leaves at most that one behind.
 */
export function writeSnapshotFile(fs: typeof nodeFs, path: string, snapshot: Uint8Array): void {
  const file = new Uint8Array(SNAP_HEADER_BYTES + snapshot.byteLength);
  file.set(SNAP_MAGIC, 0);
  new DataView(file.buffer).setUint32(4, SNAP_VERSION, true);
  file.set(snapshot, SNAP_HEADER_BYTES);
  const tmp = `${path}.tmp`;
  fs.writeFileSync(tmp, file);
  fs.renameSync(tmp, path);
}

/**
 * Writes the snapshot of `doc` at `position`, which must be where the log stands with exactly what `doc` holds.
 * Returns false when the content has no snapshot (see encodeSnapshot); throws what the write throws.
 */
export function saveSnapshot(fs: typeof nodeFs, path: string, doc: Y.Doc, position: LogPosition): boolean {
  const snapshot = encodeSnapshot(doc, position);
  if (!snapshot) return false;
  writeSnapshotFile(fs, path, snapshot);
  return true;
}

/**
 * A plan's snapshot file, rewritten only when the log has moved since the snapshot it last wrote (or found valid
 * at open): every writer of `.snap` files (the fs adapter, the server's disk store) skips the same rewrites.
 */
export class SnapshotWriter {
  private writtenAt: string | null = null;

  constructor(
    private readonly fs: typeof nodeFs,
    private readonly path: string,
  ) {}

  /** The file already holds a valid snapshot at `at` (found at open): a write at that position is skipped. */
  found(at: unknown): void {
    this.writtenAt = JSON.stringify(at);
  }

  /** Writes the snapshot of `doc` at `position` (see saveSnapshot) unless the file already holds it. */
  write(doc: Y.Doc, position: LogPosition): void {
    const at = JSON.stringify(position);
    if (at === this.writtenAt) return;
    if (saveSnapshot(this.fs, this.path, doc, position)) this.writtenAt = at;
  }
}

/**
 * The snapshot at `path` if it is intact, of this version and reflects exactly the log at `logPath`; null
 * otherwise (missing, corrupt, stale). `check: 'frames'` (default) reads a few bytes of the log, not the log: for
 * the plan's own process, whose load that follows finds any damage. `'log'` also reads the whole log and checks
 * its header and every record's checksum (a few ms for megabytes), for a reader that answers from the snapshot
 * without loading: a log damaged since the snapshot was written is then refused as the load would refuse it.
 */
export function readValidSnapshot(
  fs: typeof nodeFs,
  path: string,
  logPath: string,
  check: 'frames' | 'log' = 'frames',
): DecodedSnapshot | null {
  const decoded = readSnapshotFile(fs, path);
  if (!decoded || !logMatches(fs, logPath, decoded.at as LogPosition)) return null;
  if (check === 'log' && !logIntact(fs, logPath, decoded.at as LogPosition)) return null;
  return decoded;
}

/** The snapshot file at `path` whatever the log holds now; null if it is missing, corrupt or of another version. */
export function readSnapshotFile(fs: typeof nodeFs, path: string): DecodedSnapshot | null {
  let file: Uint8Array;
  try {
    file = fs.readFileSync(path);
  } catch {
    return null;
  }
  for (let i = 0; i < 4; i++) if (file[i] !== SNAP_MAGIC[i]) return null;
  if (file.byteLength < SNAP_HEADER_BYTES) return null;
  if (new DataView(file.buffer, file.byteOffset, file.byteLength).getUint32(4, true) !== SNAP_VERSION)
    return null;
  return decodeSnapshot(file.subarray(SNAP_HEADER_BYTES));
}

/**
 * Whether the intact records of a log, `bytes` up to `end`, still hold everything the snapshot `at` saw: the
 * same bytes up to its size (its first and last frames where it saw them) or, when the log was rewritten since
 * (a compaction; never a cut, which loses what the snapshot counts), every operation of its state vector.
 */
export function logHoldsSnapshot(
  bytes: Uint8Array,
  end: number,
  records: readonly Uint8Array[],
  snapshot: DecodedSnapshot,
): SnapshotAhead | null {
  const at = snapshot.at as Partial<LogPosition> | null;
  if (
    typeof at?.bytes === 'number' &&
    end >= at.bytes &&
    frameAt(bytes, at.first ?? null) &&
    frameAt(bytes, at.last ?? null)
  )
    return null;
  return snapshotAheadOf(snapshot.stateVector, records);
}

function frameAt(bytes: Uint8Array, mark: FrameMark | null): boolean {
  if (mark === null) return true;
  if (typeof mark.offset !== 'number' || mark.offset + FRAME_BYTES > bytes.byteLength) return false;
  const view = new DataView(bytes.buffer, bytes.byteOffset + mark.offset, FRAME_BYTES);
  return view.getUint32(0, true) === mark.length && view.getUint32(4, true) === mark.crc;
}

function logIntact(fs: typeof nodeFs, logPath: string, at: LogPosition): boolean {
  let bytes: Uint8Array;
  try {
    bytes = fs.readFileSync(logPath);
  } catch {
    return false;
  }
  if (bytes.byteLength !== at.bytes || checkHeader(bytes) !== 'ok') return false;
  const parsed = parseRecords(bytes);
  return parsed.bad === null && parsed.end === bytes.byteLength;
}

function logMatches(fs: typeof nodeFs, logPath: string, at: LogPosition): boolean {
  if (typeof at?.bytes !== 'number') return false;
  let fd: number;
  try {
    fd = fs.openSync(logPath, 'r');
  } catch {
    return false;
  }
  try {
    if (fs.fstatSync(fd).size !== at.bytes) return false;
    return frameMatches(fs, fd, at.first) && frameMatches(fs, fd, at.last);
  } finally {
    fs.closeSync(fd);
  }
}

function frameMatches(fs: typeof nodeFs, fd: number, mark: FrameMark | null): boolean {
  if (mark === null) return true;
  const frame = new Uint8Array(FRAME_BYTES);
  if (fs.readSync(fd, frame, 0, FRAME_BYTES, mark.offset) !== FRAME_BYTES) return false;
  const view = new DataView(frame.buffer);
  return view.getUint32(0, true) === mark.length && view.getUint32(4, true) === mark.crc;
}

/**
 * The damage of a log whose intact records (`bytes` up to `end`) lack what its snapshot saw, or null when they
 * hold all of it (or there is no intact snapshot to check against).
 */
export function behindSnapshot(
  path: string,
  snapshotPath: string,
  snapshot: DecodedSnapshot | null,
  bytes: Uint8Array,
  end: number,
  records: readonly Uint8Array[],
): LogDamage | null {
  const ahead = snapshot ? logHoldsSnapshot(bytes, end, records, snapshot) : null;
  if (!ahead || !snapshot) return null;
  const seen = (snapshot.at as Partial<LogPosition> | null)?.bytes;
  return {
    path,
    offset: Math.min(end, bytes.byteLength),
    keptRecords: records.length,
    recordsAfter: 0,
    damagedBytes: typeof seen === 'number' ? Math.max(0, seen - end) : 0,
    snapshot: { path: snapshotPath, ...ahead },
  };
}
