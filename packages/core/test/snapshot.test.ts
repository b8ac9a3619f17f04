// The first-read snapshot encoding: exact content, or nothing (another version, a bad checksum, unplain values).
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { createPlan } from '../src/plan.js';
import { crc32, decodeSnapshot, encodeSnapshot, SNAPSHOT_FORMAT } from '../src/snapshot.js';

function planDoc(): Y.Doc {
  const doc = new Y.Doc();
  const plan = createPlan({ doc, actor: 'agent:test', now: () => 1_700_000_000_000 });
  const [a] = plan.addMany([
    { title: 'Draft', key: 'a', context: { ticket: 7, tags: ['x'] } },
    { title: 'Ship', blockedBy: ['a'] },
  ]);
  plan.update(a!.id, { status: 'done', note: 'ok' });
  plan.remove(plan.add({ title: 'Gone' }).id);
  return doc;
}

describe('first-read snapshot encoding', () => {
  it('rebuilds the same plan roots, with the state vector it reflects', () => {
    const doc = planDoc();
    const decoded = decodeSnapshot(encodeSnapshot(doc, { where: 1 })!)!;
    expect(decoded.at).toEqual({ where: 1 });
    expect(decoded.stateVector).toEqual(Y.encodeStateVector(doc));
    const rebuilt = decoded.doc();
    for (const key of ['tasks', 'removed', 'meta'])
      expect(rebuilt.getMap(key).toJSON()).toEqual(doc.getMap(key).toJSON());
  });

  it('is ignored when a bit flips, when it is cut short, or when its format version is another', () => {
    const bytes = encodeSnapshot(planDoc(), null)!;
    const flipped = bytes.slice();
    flipped[bytes.byteLength - 3]! ^= 1;
    expect(decodeSnapshot(flipped)).toBeNull();
    expect(decodeSnapshot(bytes.subarray(0, bytes.byteLength - 1))).toBeNull();
    // A body with a valid checksum but a format this reader does not know.
    const json = new TextDecoder()
      .decode(bytes.subarray(4))
      .replace(`"format":${SNAPSHOT_FORMAT}`, '"format":99');
    const body = new TextEncoder().encode(json);
    const other = new Uint8Array(4 + body.byteLength);
    new DataView(other.buffer).setUint32(0, crc32(body), true);
    other.set(body, 4);
    expect(decodeSnapshot(other)).toBeNull();
    expect(decodeSnapshot(bytes)).not.toBeNull();
  });

  it('is not written for content plain data cannot reproduce exactly (binary, non-finite numbers)', () => {
    for (const value of [
      new Uint8Array([1]),
      Number.NaN,
      Number.POSITIVE_INFINITY,
      { nested: [1, Number.NaN] },
    ]) {
      const doc = planDoc();
      doc.getMap('meta').set('odd', value);
      expect(encodeSnapshot(doc, null)).toBeNull();
    }
  });

  it('computes the IEEE crc32 (the value zlib gives for "123456789")', () => {
    expect(crc32(new TextEncoder().encode('123456789'))).toBe(0xcbf43926);
  });
});
