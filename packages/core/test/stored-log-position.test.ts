// A store's own snapshot position (StoredLogOptions.snapshotAt, decision 050): the snapshot StoredLog writes
// carries it, and the first read (`currentSnapshot`, and the next open) accepts it only at the last record.
import { createPlan } from '@cairn/core';
import { currentSnapshot, memoryByteAdapter, StoredLog } from '@cairn/core/protocol';
import { expect, it } from 'vitest';
import * as Y from 'yjs';

it("writes and checks a snapshot at the store's own position", async () => {
  const adapter = memoryByteAdapter();
  const doc = new Y.Doc();
  const snapshotAt = (key: number) => key; // a bare row number, as a Durable Object's SQLite keeps it
  const log = await StoredLog.open(adapter, 'plan', {
    state: () => Y.encodeStateAsUpdate(doc),
    doc,
    snapshotAt,
  });
  doc.on('update', (update: Uint8Array) => log.append(update));
  createPlan({ doc, actor: 'agent:position' }).add({ title: 'Kept' });
  await log.compact(); // one record of the whole state, and the snapshot at it
  await log.close();

  const stored = (await adapter.readSnapshot?.('plan')) ?? null;
  const last = adapter.records('plan').at(-1)?.key;
  expect(currentSnapshot(stored, last, snapshotAt)?.at).toBe(last);
  expect(currentSnapshot(stored, last)).toBeNull(); // the default position, `{ key }`, is another
  expect(currentSnapshot(stored, (last ?? 0) + 1, snapshotAt)).toBeNull(); // a record was stored after it

  const reopened = await StoredLog.open(adapter, 'plan', { state: () => new Uint8Array(), snapshotAt });
  expect(reopened.firstSnapshot?.at).toBe(last);
  await reopened.release();
  const byDefault = await StoredLog.open(adapter, 'plan', { state: () => new Uint8Array() });
  expect(byDefault.firstSnapshot).toBeNull();
  await byDefault.release();
});
