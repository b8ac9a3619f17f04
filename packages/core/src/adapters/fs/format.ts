// The on-disk format of an update log: an 8-byte header, then records framed [u32 length][u32 crc32][payload].
// Pure functions over bytes, so the parser can be tested on any buffer and read by other languages.
import { crc32 } from 'node:zlib';

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

/** Frames one payload as a record: length, crc32 of the payload, payload. */
export function encodeRecord(payload: Uint8Array): Uint8Array {
  const record = new Uint8Array(FRAME_BYTES + payload.byteLength);
  const view = new DataView(record.buffer);
  view.setUint32(0, payload.byteLength, true);
  view.setUint32(4, crc32(payload), true);
  record.set(payload, FRAME_BYTES);
  return record;
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

// A tail of zeros is a file the kernel extended but a crash never filled (power loss): torn, not corrupt.
function badAt(bytes: Uint8Array, offset: number): BadTail {
  for (let i = offset; i < bytes.byteLength; i++) if (bytes[i] !== 0) return { offset, kind: 'corrupt' };
  return { offset, kind: 'torn' };
}
