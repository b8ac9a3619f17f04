// What a plan's Redis stream holds and where an instance's confirmations live beside it (docs/PROTOCOL.md, the
// cluster section; decisions 047 and 061).

export const streamKey = (planId: string) => `cairn:plan:${planId}:updates`;
/** The number of `instance`'s last update of the plan that is committed (a plain string key, expiring). */
export const confirmedKey = (planId: string, instance: string) =>
  `cairn:plan:${planId}:confirmed:${instance}`;

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

export function decodeEntry(fields: string[]): Entry {
  const get = (name: string) => {
    const at = fields.indexOf(name);
    return at >= 0 && at % 2 === 0 ? (fields[at + 1] ?? null) : null;
  };
  const update = get('u');
  const seq = get('s');
  return {
    instance: get('i') ?? '',
    update: update === null ? null : new Uint8Array(Buffer.from(update, 'base64')),
    seq: seq === null ? null : Number(seq),
  };
}

/** The update an entry carries (none for an entry that is not an update). */
export function updateOf(entry: Entry): Uint8Array[] {
  return entry.update ? [entry.update] : [];
}
