// The on-disk format of an update log: an 8-byte header, then records framed [u32 length][u32 crc32][payload].
// Pure functions over bytes, so the parser can be tested on any buffer and read by other languages.
import { Buffer } from 'node:buffer';
import { crc32 } from 'node:zlib';
import type { SnapshotAhead } from '../../snapshot.js';

/** "CYL1" + format version 1 (little-endian u32). */
export const LOG_MAGIC = Uint8Array.of(0x43, 0x59, 0x4c, 0x31);
export const LOG_VERSION = 1;
export const HEADER_BYTES = 8;
export const FRAME_BYTES = 8;
/** A record longer than this is taken for corruption, not data (a plan is far smaller). */
export const MAX_RECORD_BYTES = 512 * 1024 * 1024;

export function encodeHeader(): Uint8Array {
  const header = new Uint8Array(HEADER_BYTES);
  header.set(LOG_MAGIC, 0);
  new DataView(header.buffer).setUint32(4, LOG_VERSION, true);
  return header;
}

/** Writes one record into `out` at `at`: length, crc32 of the payload, payload. Returns where the next one goes. */
function frameAt(out: Buffer, at: number, payload: Uint8Array): number {
  out.writeUInt32LE(payload.byteLength, at);
  out.writeUInt32LE(crc32(payload), at + 4);
  out.set(payload, at + FRAME_BYTES);
  return at + FRAME_BYTES + payload.byteLength;
}

/** Frames one payload as a record (see frameAt). */
export function encodeRecord(payload: Uint8Array): Uint8Array {
  // From Node's pool: a small typed array with a buffer of its own costs more to allocate than the checksum,
  // and this runs once per edit. Every byte is written by frameAt.
  const record = Buffer.allocUnsafe(FRAME_BYTES + payload.byteLength);
  frameAt(record, 0, payload);
  return record;
}

/**
 * Frames payloads as consecutive records into `scratch` (a view of its start), or into a buffer of their own when
 * they do not fit: for a caller that writes them at once and keeps nothing of them, so one buffer serves every
 * write instead of one allocation per record.
 */
export function encodeRecordsInto(scratch: Buffer, payloads: readonly Uint8Array[]): Buffer {
  let size = 0;
  for (const payload of payloads) size += FRAME_BYTES + payload.byteLength;
  const out = size <= scratch.byteLength ? scratch.subarray(0, size) : Buffer.allocUnsafe(size);
  let at = 0;
  for (const payload of payloads) at = frameAt(out, at, payload);
  return out;
}

export type HeaderCheck = 'ok' | 'empty' | 'bad';

/** 'empty' covers a file cut short while its header was being written (nothing else was ever in it). */
export function checkHeader(bytes: Uint8Array): HeaderCheck {
  const expected = encodeHeader();
  const n = Math.min(bytes.byteLength, HEADER_BYTES);
  for (let i = 0; i < n; i++) if (bytes[i] !== expected[i]) return 'bad';
  return bytes.byteLength < HEADER_BYTES ? 'empty' : 'ok';
}

/** Why parsing stopped before the end of the file. */
export interface BadTail {
  /** Offset of the first byte that is not part of a valid record. */
  offset: number;
  /**
   * 'torn': the last record runs past the end of the file (a write cut short by a crash); nothing valid follows.
   * 'corrupt': a record that fits in the file fails its checksum or has an impossible length; what follows may
   * hold valid records, so those bytes must be kept somewhere before the log is cut.
   */
  kind: 'torn' | 'corrupt';
}

export interface ParsedLog {
  /** Valid payloads, oldest first (views into the input buffer). */
  records: Uint8Array[];
  /** Offset just past the last valid record: where the next record goes. */
  end: number;
  bad: BadTail | null;
}

/** Parses records after the header; stops at the first record that is not intact. */
export function parseRecords(bytes: Uint8Array): ParsedLog {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const records: Uint8Array[] = [];
  let offset = HEADER_BYTES;
  while (offset < bytes.byteLength) {
    if (bytes.byteLength - offset < FRAME_BYTES)
      return { records, end: offset, bad: { offset, kind: 'torn' } };
    const length = view.getUint32(offset, true);
    const crc = view.getUint32(offset + 4, true);
    if (length === 0 || length > MAX_RECORD_BYTES) return { records, end: offset, bad: badAt(bytes, offset) };
    const start = offset + FRAME_BYTES;
    if (start + length > bytes.byteLength) return { records, end: offset, bad: { offset, kind: 'torn' } };
    const payload = bytes.subarray(start, start + length);
    if (crc32(payload) !== crc) return { records, end: offset, bad: badAt(bytes, offset) };
    records.push(payload);
    offset = start + length;
  }
  return { records, end: offset, bad: null };
}

/** An intact record found by `scanLog`, with where it starts in the file. */
export interface ScannedRecord {
  offset: number;
  payload: Uint8Array;
}

/** Everything a damaged log still holds: what `inspect` and `repair` work from. */
export interface LogScan {
  /** File size. */
  bytes: number;
  /** Intact records before the first damage (what a plain parse keeps). */
  before: ScannedRecord[];
  /** The first damage, or null for an intact log. */
  bad: BadTail | null;
  /** Intact records after a corrupt stretch, found by looking for the next frame whose checksum matches. */
  after: ScannedRecord[];
  /** Byte ranges `[start, end)` that hold no intact record (the damage; a torn tail is one such range). */
  damaged: Array<[number, number]>;
}

/**
 * Reads every intact record of a log, past damage too (a damaged header included): after a bad record it tries each later offset until a
 * frame's checksum matches (and it is followed by the end of the file or another plausible frame), and goes on
 * from there. A record directly before a second damage can be missed. Costs a pass over the bytes after the
 * damage: `open` runs it only when a parse stopped early.
 */
export function scanLog(bytes: Uint8Array): LogScan {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const withOffsets = (from: number, parsed: ParsedLog): ScannedRecord[] => {
    const out: ScannedRecord[] = [];
    let offset = from;
    for (const payload of parsed.records) {
      out.push({ offset, payload });
      offset += FRAME_BYTES + payload.byteLength;
    }
    return out;
  };
  const first = parseRecords(bytes);
  const scan: LogScan = {
    bytes: bytes.byteLength,
    before: withOffsets(HEADER_BYTES, first),
    bad: first.bad,
    after: [],
    damaged: [],
  };
  let bad = first.bad;
  while (bad) {
    const next = nextIntactFrame(bytes, view, bad.offset + 1);
    scan.damaged.push([bad.offset, next ?? bytes.byteLength]);
    if (next === null) break;
    const rest = parseFrom(bytes, next);
    scan.after.push(...withOffsets(next, rest));
    bad = rest.bad;
  }
  // A length field hit by a flipped bit can make a record in the middle look torn: intact records after it
  // prove it was not the last write.
  if (scan.bad && scan.after.length > 0) scan.bad = { offset: scan.bad.offset, kind: 'corrupt' };
  // A damaged header is damage at byte 0: every intact record comes after it.
  if (checkHeader(bytes) === 'bad') {
    scan.after = [...scan.before, ...scan.after];
    scan.before = [];
    scan.damaged.unshift([0, HEADER_BYTES]);
    scan.bad = { offset: 0, kind: 'corrupt' };
  }
  return scan;
}

function parseFrom(bytes: Uint8Array, offset: number): ParsedLog {
  // parseRecords starts after a header: hand it a view that puts `offset` where the first record would be.
  const shifted = parseRecords(bytes.subarray(offset - HEADER_BYTES));
  return {
    records: shifted.records,
    end: shifted.end + offset - HEADER_BYTES,
    bad: shifted.bad ? { ...shifted.bad, offset: shifted.bad.offset + offset - HEADER_BYTES } : null,
  };
}

function nextIntactFrame(bytes: Uint8Array, view: DataView, from: number): number | null {
  for (let offset = from; offset + FRAME_BYTES < bytes.byteLength; offset++) {
    const end = offset + FRAME_BYTES + view.getUint32(offset, true);
    if (end === offset + FRAME_BYTES || end > bytes.byteLength) continue;
    // Cheap check first: an intact frame ends at the end of the file or where another frame fits.
    if (end !== bytes.byteLength) {
      if (end + FRAME_BYTES > bytes.byteLength) continue;
      const nextLength = view.getUint32(end, true);
      if (nextLength === 0 || end + FRAME_BYTES + nextLength > bytes.byteLength) continue;
    }
    if (crc32(bytes.subarray(offset + FRAME_BYTES, end)) === view.getUint32(offset + 4, true)) return offset;
  }
  return null;
}

// A tail of zeros is a file the kernel extended but a crash never filled (power loss): torn, not corrupt.
function badAt(bytes: Uint8Array, offset: number): BadTail {
  for (let i = offset; i < bytes.byteLength; i++) if (bytes[i] !== 0) return { offset, kind: 'corrupt' };
  return { offset, kind: 'torn' };
}

/**
 * What a damaged log (a record that fails its checksum, with bytes after it) still holds. `open` refuses such a
 * file with CairnError('storage') carrying this as `details.damage`, and leaves it untouched for `inspectLog` /
 * `repairLog` (the `cairn log` command).
 */
export interface LogDamage {
  path: string;
  /** Offset of the first damaged byte. */
  offset: number;
  /** Intact records before the damage. */
  keptRecords: number;
  /** Intact records found after the damage (they may depend on what the damage destroyed). */
  recordsAfter: number;
  /** Bytes that hold no intact record (for a log behind its snapshot: the bytes the snapshot saw beyond it). */
  damagedBytes: number;
  /**
   * Set when the log lacks what its first-read snapshot saw (it was emptied, deleted or cut at a record boundary
   * or inside a record): the snapshot file, and the operations it reflects that no intact record holds.
   */
  snapshot?: SnapshotAhead & { path: string };
}
