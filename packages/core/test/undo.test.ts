// The Plan's bounded undo history: it keeps UNDO_LIMIT steps, releases what older steps kept alive (so neither
// memory nor a storage snapshot carries every overwritten value), and stays CRDT-safe while doing so.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { createPlan, type Plan } from '../src/index.js';
import { UNDO_LIMIT } from '../src/plan.js';
import { BoundedUndoManager } from '../src/undo.js';

function sync(a: Y.Doc, b: Y.Doc): void {
  Y.applyUpdate(b, Y.encodeStateAsUpdate(a, Y.encodeStateVector(b)));
  Y.applyUpdate(a, Y.encodeStateAsUpdate(b, Y.encodeStateVector(a)));
}

function flip(plan: Plan, id: string, times: number): void {
  for (let i = 0; i < times; i++)
    plan.update(id, { status: plan.get(id)!.status === 'done' ? 'pending' : 'done' });
}

/** The state as a replica that loads it and writes it again would store it (nothing kept for an undo). */
function reloaded(doc: Y.Doc): Uint8Array {
  const copy = new Y.Doc();
  Y.applyUpdate(copy, Y.encodeStateAsUpdate(doc));
  return Y.encodeStateAsUpdate(copy);
}

describe('bounded undo', () => {
  it('keeps the last UNDO_LIMIT steps and undoes them in order', () => {
    const plan = createPlan({ actor: 'agent:a' });
    const t = plan.add({ title: 'T' });
    for (let i = 0; i < UNDO_LIMIT + 50; i++) plan.update(t.id, { title: `T${i}` });
    let undone = 0;
    while (plan.undo()) undone++;
    expect(undone).toBe(UNDO_LIMIT);
    // The oldest kept step restored the title written just before it.
    expect(plan.get(t.id)!.title).toBe(`T${49}`);
    expect(plan.redo()).toBe(true);
    expect(plan.get(t.id)!.title).toBe(`T${50}`);
  });

  it('collects the values evicted steps kept: the live state is what a reload would store', () => {
    const plan = createPlan({ actor: 'agent:a' });
    const [a, b] = plan.addMany([{ title: 'A' }, { title: 'B' }]);
    flip(plan, a!.id, 2_000);
    flip(plan, b!.id, 2_000);
    const live = Y.encodeStateAsUpdate(plan.doc).byteLength;
    const floor = reloaded(plan.doc).byteLength;
    // Only the last UNDO_LIMIT steps' overwritten values (three per step) are still held.
    expect(live - floor).toBeLessThan(UNDO_LIMIT * 3 * 40);
  });

  it('Y.UndoManager alone keeps every overwritten value; the bounded one only its last steps', () => {
    const kept = (make: (map: Y.Map<string>) => Y.UndoManager) => {
      const doc = new Y.Doc();
      const map = doc.getMap<string>('m');
      const um = make(map);
      for (let i = 0; i < 2_000; i++) doc.transact(() => map.set('k', `value ${i}`), 'me');
      um.destroy();
      return Y.encodeStateAsUpdate(doc).byteLength - reloaded(doc).byteLength;
    };
    const options = { trackedOrigins: new Set(['me']), captureTimeout: 0 };
    expect(kept((map) => new Y.UndoManager(map, options))).toBeGreaterThan(2_000 * 9);
    expect(kept((map) => new BoundedUndoManager([map], { ...options, limit: 10 }))).toBeLessThan(10 * 16);
  });

  it('a replica that concurrently overwrote a collected value converges with the writer', () => {
    const writer = createPlan({ actor: 'agent:w', doc: new Y.Doc() });
    const other = createPlan({ actor: 'user:ann', doc: new Y.Doc() });
    const t = writer.add({ title: 'T' });
    flip(writer, t.id, 3);
    sync(writer.doc, other.doc);
    // The other replica overwrites status on top of the writer's 3rd value (its origin); meanwhile the writer
    // overwrites it far past the bound, so that value is collected (ContentDeleted) before the merge.
    other.update(t.id, { status: 'cancelled', title: 'ann' });
    flip(writer, t.id, UNDO_LIMIT * 2 + 1);
    sync(writer.doc, other.doc);
    expect(writer.toJSON()).toEqual(other.toJSON());
    expect(reloaded(writer.doc)).toEqual(reloaded(other.doc));
    expect(writer.get(t.id)!.title).toBe('ann');
    // And a third replica loading either copy sees the same plan.
    const third = createPlan({ actor: 'agent:x', doc: new Y.Doc() });
    Y.applyUpdate(third.doc, Y.encodeStateAsUpdate(writer.doc));
    expect(third.toJSON()).toEqual(writer.toJSON());
  });

  it('replicas that edit and sync at random, evicting all along, converge', () => {
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const plans = ['agent:a', 'agent:b', 'user:c'].map((actor) => createPlan({ actor, doc: new Y.Doc() }));
    const ids = plans[0]!.addMany(Array.from({ length: 5 }, (_, i) => ({ title: `T${i}` }))).map((t) => t.id);
    for (const p of plans.slice(1)) sync(plans[0]!.doc, p.doc);
    const statuses = ['pending', 'in_progress', 'done'] as const;
    for (let i = 0; i < 1_500; i++) {
      const plan = plans[rnd(3)]!;
      const id = ids[rnd(ids.length)]!;
      if (rnd(4) === 0) plan.update(id, { title: `t${i}` });
      else plan.update(id, { status: statuses[rnd(3)]! });
      if (rnd(10) === 0) plan.undo();
      if (rnd(20) === 0) sync(plans[rnd(3)]!.doc, plans[rnd(3)]!.doc);
    }
    sync(plans[0]!.doc, plans[1]!.doc);
    sync(plans[1]!.doc, plans[2]!.doc);
    sync(plans[0]!.doc, plans[1]!.doc);
    const json = JSON.stringify(plans[0]!.toJSON());
    for (const p of plans) expect(JSON.stringify(p.toJSON())).toBe(json);
    expect(reloaded(plans[1]!.doc)).toEqual(reloaded(plans[0]!.doc));
    expect(reloaded(plans[2]!.doc)).toEqual(reloaded(plans[0]!.doc));
  });

  it('emits no update when it collects, and stops when destroyed', () => {
    const doc = new Y.Doc();
    const map = doc.getMap<number>('m');
    const um = new BoundedUndoManager([map], {
      limit: 2,
      captureTimeout: 0,
      trackedOrigins: new Set(['me']),
    });
    const updates: Uint8Array[] = [];
    doc.on('update', (u: Uint8Array) => updates.push(u));
    for (let i = 0; i < 10; i++) doc.transact(() => map.set('k', i), 'me');
    expect(updates).toHaveLength(10);
    expect(um.undoStack).toHaveLength(2);
    um.destroy();
    doc.transact(() => map.set('k', 99), 'me');
    expect(um.undoStack).toHaveLength(2);
    expect(() => new BoundedUndoManager([map], { limit: 0 })).toThrow(RangeError);
  });
});
