// The first-read snapshot: a plan's current content as plain data (no history), checksummed and versioned, so a
// reader can answer before the Y.Doc has integrated every value ever written. Only a read cache: never merged.
import * as Y from 'yjs';
import { DOC_KEYS } from './schema.js';

/** Bumped when the encoding below changes; a snapshot of another version is ignored (the doc loads as before). */
export const SNAPSHOT_FORMAT = 1;

/** A value as stored in a snapshot: `m` a Y.Map, `t` a Y.Text (its string), `a` a Y.Array, `v` a plain value. */
type Node = { m: Record<string, Node> } | { t: string } | { a: Node[] } | { v: unknown };

interface Body {
  format: number;
  /** Where the snapshot sits in its store (the adapter's rule for "nothing was stored after it"). */
  at: unknown;
  /** The state vector of the document it reflects, base64 (for readers that want to compare replicas). */
  stateVector: string;
  roots: Record<string, Node>;
}

export interface DecodedSnapshot {
  at: unknown;
  stateVector: Uint8Array;
  /** A fresh document holding the snapshot's content; reading it as a Plan gives what the stored plan holds. */
  doc(): Y.Doc;
}

/**
 * Encodes the plan roots of `doc` with `at`, the adapter's position of the state it reflects. Returns null when
 * the content holds something plain data cannot reproduce exactly (binary, non-finite numbers, nested docs):
 * such a plan simply has no snapshot, and its reads wait for the document.
 */
export function encodeSnapshot(doc: Y.Doc, at: unknown): Uint8Array | null {
  const roots: Record<string, Node> = {};
  for (const key of Object.values(DOC_KEYS)) {
    const type = doc.share.get(key);
    if (type === undefined) continue;
    const node = toNode(doc.getMap(key));
    if (node === null) return null;
    roots[key] = node;
  }
  const body: Body = {
    format: SNAPSHOT_FORMAT,
    at,
    stateVector: toBase64(Y.encodeStateVector(doc)),
    roots,
  };
  const json = new TextEncoder().encode(JSON.stringify(body));
  const out = new Uint8Array(4 + json.byteLength);
  new DataView(out.buffer).setUint32(0, crc32(json), true);
  out.set(json, 4);
  return out;
}

/** Decodes a snapshot; null if it is corrupt (checksum, syntax) or of another format version: never half-read. */
export function decodeSnapshot(bytes: Uint8Array): DecodedSnapshot | null {
  if (bytes.byteLength < 5) return null;
  const json = bytes.subarray(4);
  const crc = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0, true);
  if (crc32(json) !== crc) return null;
  let body: Body;
  try {
    body = JSON.parse(new TextDecoder().decode(json)) as Body;
  } catch {
    return null;
  }
  if (body?.format !== SNAPSHOT_FORMAT || typeof body.roots !== 'object' || body.roots === null) return null;
  return {
    at: body.at,
    stateVector: fromBase64(body.stateVector),
    doc: () => {
      const doc = new Y.Doc();
      doc.transact(() => {
        for (const [key, node] of Object.entries(body.roots)) {
          if (!('m' in node)) continue;
          const map = doc.getMap(key);
          for (const [k, child] of Object.entries(node.m)) map.set(k, fromNode(child));
        }
      });
      return doc;
    },
  };
}

/**
 * What a snapshot reflects that a store no longer holds: the snapshot was taken of what the store held, and a
 * store only ever gains operations (compaction keeps every one), so a writer whose operations the snapshot counts
 * beyond what the store holds proves that stored data was lost (a log emptied, deleted or cut, rows gone).
 */
export interface SnapshotAhead {
  /** Writers (Yjs client ids) with operations the snapshot reflects and the store lacks. */
  clients: number;
  /** Operations (Yjs clock ticks: characters, values, tasks) the snapshot reflects and the store lacks. */
  operations: number;
}

/**
 * Compares a snapshot's state vector with the state vector of what the store holds (the document after applying
 * every stored update): null when the store holds everything the snapshot reflects.
 */
export function snapshotAhead(
  snapshotStateVector: Uint8Array,
  storedStateVector: Uint8Array,
): SnapshotAhead | null {
  const stored = Y.decodeStateVector(storedStateVector);
  let clients = 0;
  let operations = 0;
  for (const [client, clock] of Y.decodeStateVector(snapshotStateVector)) {
    const have = stored.get(client) ?? 0;
    if (clock <= have) continue;
    clients++;
    operations += clock - have;
  }
  return clients === 0 ? null : { clients, operations };
}

/** snapshotAhead of a snapshot against stored updates, applied to a scratch document (their order does not matter). */
export function snapshotAheadOf(
  snapshotStateVector: Uint8Array,
  stored: readonly Uint8Array[],
): SnapshotAhead | null {
  const doc = new Y.Doc();
  try {
    for (const update of stored) Y.applyUpdate(doc, update);
    return snapshotAhead(snapshotStateVector, Y.encodeStateVector(doc));
  } finally {
    doc.destroy();
  }
}

function toNode(value: unknown): Node | null {
  if (value instanceof Y.Map) {
    const m: Record<string, Node> = {};
    for (const [key, child] of value) {
      const node = toNode(child);
      if (node === null) return null;
      m[key] = node;
    }
    return { m };
  }
  if (value instanceof Y.Text) return { t: value.toString() };
  if (value instanceof Y.Array) {
    const a: Node[] = [];
    for (const child of value) {
      const node = toNode(child);
      if (node === null) return null;
      a.push(node);
    }
    return { a };
  }
  return isPlain(value) ? { v: value } : null;
}

function fromNode(node: Node): unknown {
  if ('m' in node) {
    const map = new Y.Map<unknown>();
    for (const [key, child] of Object.entries(node.m)) map.set(key, fromNode(child));
    return map;
  }
  if ('t' in node) return new Y.Text(node.t);
  if ('a' in node) {
    const array = new Y.Array<unknown>();
    array.push(node.a.map(fromNode));
    return array;
  }
  return node.v;
}

/** True for what JSON round-trips exactly (undefined only as a whole value, which the `v` wrapper drops alike). */
function isPlain(value: unknown): boolean {
  if (value === null || value === undefined || typeof value === 'string' || typeof value === 'boolean')
    return true;
  if (typeof value === 'number') return Number.isFinite(value) && !Object.is(value, -0);
  if (Array.isArray(value)) return value.every((v) => v !== undefined && isPlain(v));
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.values(value).every((v) => v !== undefined && isPlain(v));
  }
  return false;
}

let table: Uint32Array | null = null;

/** CRC-32 (IEEE), in plain JS so the browser adapter computes the same checksum as Node. */
export function crc32(bytes: Uint8Array): number {
  if (!table) {
    table = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c >>> 0;
    }
  }
  let crc = 0xffffffff;
  for (let i = 0; i < bytes.byteLength; i++) crc = table[(crc ^ bytes[i]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function toBase64(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

function fromBase64(text: unknown): Uint8Array {
  if (typeof text !== 'string') return new Uint8Array(0);
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  } catch {
    return new Uint8Array(0);
  }
}
