// The check that a client's update arrived whole before it is applied: it reads exactly what Yjs reads, so it
// accepts every update Yjs encodes and refuses each cut-short copy of one exactly when Yjs' own decoding does.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { seeded } from '../../core/src/testing/seeded.js';
import { checkWholeUpdate } from '../src/hub/whole-update.js';

/** Updates of every kind of content Yjs encodes: maps of any values, arrays, text with formats and embeds, XML, binary, sub-documents, deletions. */
function randomUpdates(seed: number, steps: number): Uint8Array[] {
  const random = seeded(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const doc = new Y.Doc();
  const updates: Uint8Array[] = [];
  doc.on('update', (update: Uint8Array) => updates.push(update));
  const map = doc.getMap('tasks');
  const array = doc.getArray('list');
  const text = doc.getText('text');
  const xml = doc.getXmlFragment('xml');
  const values = [
    'pending',
    '',
    'é✓ unicode',
    42,
    -7,
    2 ** 40,
    1.5,
    Math.PI,
    true,
    false,
    null,
    { a: 1, b: ['x', { c: null }] },
    [1, 'two', [3]],
    new Uint8Array([1, 2, 3]),
  ];
  for (let i = 0; i < steps; i++) {
    doc.transact(() => {
      for (let k = 1 + Math.floor(random() * 3); k > 0; k--) {
        switch (Math.floor(random() * 9)) {
          case 0:
            map.set(`k${Math.floor(random() * 5)}`, pick(values));
            break;
          case 1: {
            const inner = new Y.Map<unknown>();
            map.set(`m${Math.floor(random() * 3)}`, inner);
            inner.set('seq', i);
            break;
          }
          case 2:
            map.delete(`k${Math.floor(random() * 5)}`);
            break;
          case 3:
            array.insert(Math.floor(random() * (array.length + 1)), [pick(values), pick(values)]);
            break;
          case 4:
            if (array.length > 0) array.delete(Math.floor(random() * array.length), 1);
            break;
          case 5:
            text.insert(Math.floor(random() * (text.length + 1)), pick(['ab', 'ü', 'line\n']), {
              bold: random() < 0.5 ? true : null,
            });
            break;
          case 6:
            text.insertEmbed(Math.floor(random() * (text.length + 1)), { image: 'x.png' });
            if (text.length > 2) text.delete(0, 1);
            break;
          case 7: {
            const element = new Y.XmlElement(pick(['p', 'h1']));
            element.setAttribute('class', 'c');
            element.insert(0, [new Y.XmlText('hi')]);
            xml.insert(Math.floor(random() * (xml.length + 1)), [element]);
            break;
          }
          default:
            map.set('sub', new Y.Doc({ guid: `sub${i}` }));
        }
      }
    });
  }
  return updates;
}

describe('checkWholeUpdate', () => {
  it('accepts every update Yjs encodes, and every cut-short copy exactly when Y.decodeUpdate refuses it', () => {
    const throws = (run: () => unknown) => {
      try {
        run();
        return false;
      } catch {
        return true;
      }
    };
    let cuts = 0;
    for (const seed of [1, 2, 3, 4, 5]) {
      const updates = randomUpdates(seed, 60);
      const whole = new Y.Doc();
      for (const update of updates) Y.applyUpdate(whole, update);
      updates.push(Y.encodeStateAsUpdate(whole)); // one large update with everything, deletions included
      for (const update of updates) {
        expect(() => checkWholeUpdate(update), `seed ${seed}`).not.toThrow();
        for (let end = 0; end < update.byteLength; end++) {
          // A view into a larger buffer, as a WebSocket frame is: nothing past `end` may be read.
          const cut = update.subarray(0, end);
          expect(
            throws(() => checkWholeUpdate(cut)),
            `seed ${seed}, cut at ${end}`,
          ).toBe(throws(() => Y.decodeUpdate(cut)));
          cuts++;
        }
      }
    }
    expect(cuts).toBeGreaterThan(10_000);
  });

  it('refuses an update cut inside its delete set, which Y.applyUpdate would apply in part', () => {
    const doc = new Y.Doc();
    const tasks = doc.getMap('tasks');
    tasks.set('a', 1);
    tasks.set('b', 2);
    const replica = new Y.Doc();
    Y.applyUpdate(replica, Y.encodeStateAsUpdate(doc));
    const before = Y.encodeStateVector(doc);
    doc.transact(() => {
      tasks.set('a', 3);
      tasks.delete('b');
    });
    const update = Y.encodeStateAsUpdate(doc, before);
    const cut = update.subarray(0, update.byteLength - 1);
    expect(() => checkWholeUpdate(cut)).toThrow();
    // What the check prevents: Yjs integrates the structs, then fails in the deletions, keeping part of the change.
    expect(() => Y.applyUpdate(replica, cut)).toThrow();
    expect(replica.getMap('tasks').toJSON()).toEqual({ a: 3, b: 2 });
  });

  it('refuses a deletion of length 0, which Yjs never encodes and a replica lacking the deleted structs cannot hold back', () => {
    // No structs; one client (id 7) with one deleted range: clock 3, length 0.
    const empty = Uint8Array.of(0, 1, 7, 1, 3, 0);
    expect(() => Y.decodeUpdate(empty)).not.toThrow();
    expect(() => Y.applyUpdate(new Y.Doc(), empty)).toThrow();
    expect(() => checkWholeUpdate(empty)).toThrow(/length 0/);
    expect(() => checkWholeUpdate(Uint8Array.of(0, 1, 7, 1, 3, 1))).not.toThrow();
  });
});
