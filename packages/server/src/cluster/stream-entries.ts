// What a plan's Redis stream holds, how each entry is pushed to the other instances as it is added, and where an
// instance's confirmations live beside it (docs/PROTOCOL.md, the cluster section; decisions 047, 061 and 063).
import { createHash } from 'node:crypto';

export const streamKey = (planId: string) => `cairn:plan:${planId}:updates`;
/** The number of `instance`'s last update of the plan that is committed (a plain string key, expiring). */
export const confirmedKey = (planId: string, instance: string) =>
  `cairn:plan:${planId}:confirmed:${instance}`;

/** The pub/sub channel each entry of the plan's stream is published on as it is added (`ADD_ENTRY`). */
export const liveChannel = (planId: string) => `cairn:plan:${planId}:live`;

export type StreamEntry = [id: string, fields: string[]];

/**
 * A stream entry: `i` the instance, `u` an update (base64) and `s` its number among that instance's updates of the
 * plan (none: durable when added). Confirmations are not in the stream (`confirmedKey`).
 */
export interface Entry {
  instance: string;
  update: Uint8Array | null;
  seq: number | null;
}

function field(fields: string[], name: string): string | null {
  const at = fields.indexOf(name);
  return at >= 0 && at % 2 === 0 ? (fields[at + 1] ?? null) : null;
}

/** The instance that added an entry, read without decoding its update (an instance skips its own entries). */
export function entryInstance(fields: string[]): string {
  return field(fields, 'i') ?? '';
}

export function decodeEntry(fields: string[]): Entry {
  const update = field(fields, 'u');
  const seq = field(fields, 's');
  return {
    instance: entryInstance(fields),
    update: update === null ? null : new Uint8Array(Buffer.from(update, 'base64')),
    seq: seq === null ? null : Number(seq),
  };
}

/** The fields of an entry of this instance (`add` puts the instance first): `decodeEntry` reads them back. */
export function entryFields(update: Uint8Array, seq?: number): string[] {
  const fields = ['u', Buffer.from(update).toString('base64')];
  if (seq !== undefined) fields.push('s', String(seq));
  return fields;
}

/** The update an entry carries (none for an entry that is not an update). */
export function updateOf(entry: Entry): Uint8Array[] {
  return entry.update ? [entry.update] : [];
}

/**
 * Adds an entry to a stream and publishes it, with the id of the entry before it, in one step: a reader that
 * holds the entry before can apply it at once, and one that does not (it missed a message) knows to read the stream
 * between. KEYS[1] the stream; ARGV[1] the channel, ARGV[2] the MINID to trim to, then the entry's fields. The
 * message is `<previous id> <id> <field> <value> …` (no field or value holds a space). Returns the id.
 */
export const ADD_ENTRY = `
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local previous = '0-0'
if last[1] then previous = last[1][1] end
local id = redis.call('XADD', KEYS[1], 'MINID', '~', ARGV[2], '*', unpack(ARGV, 3))
redis.call('PUBLISH', ARGV[1], previous .. ' ' .. id .. ' ' .. table.concat(ARGV, ' ', 3))
return id
`;
export const ADD_ENTRY_SHA1 = createHash('sha1').update(ADD_ENTRY).digest('hex');

/** A message of a plan's live channel: an entry of its stream and the id of the entry before it then. */
export interface LiveEntry {
  previous: string;
  entry: StreamEntry;
}

/** Reads a live channel's message; null for one that is not `ADD_ENTRY`'s (nothing else publishes there). */
export function parseLiveMessage(message: string): LiveEntry | null {
  const [previous, id, ...fields] = message.split(' ');
  if (!previous || !id || fields.length % 2 !== 0) return null;
  return { previous, entry: [id, fields] };
}

/** Orders two stream ids (`<ms>-<seq>`): negative when `a` comes first. */
export function compareIds(a: string, b: string): number {
  const [aMs = 0, aSeq = 0] = a.split('-').map(Number);
  const [bMs = 0, bSeq = 0] = b.split('-').map(Number);
  return aMs - bMs || aSeq - bSeq;
}
