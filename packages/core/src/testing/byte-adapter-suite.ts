// The acceptance suite of the byte contract (persistence/adapter.ts): every adapter runs it, in Node, in Chromium
// or in workerd. No Node imports, so it runs anywhere vitest does.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ByteStorageAdapter } from '../persistence/adapter.js';

export interface ByteAdapterHarness {
  adapter: ByteStorageAdapter;
  /**
   * A second adapter over the same storage (another process, tab or instance), for the lock and sharing tests.
   * What it does when a held document is locked again is fixed per adapter: `locked` (refused with
   * CairnError('locked'), as a file lock does) or `shared` (both hold it and keep each other's records).
   */
  reopen(): ByteStorageAdapter | Promise<ByteStorageAdapter>;
  secondLock: 'locked' | 'shared';
  teardown?(): Promise<void> | void;
}

export type ByteAdapterSetup = () => Promise<ByteAdapterHarness> | ByteAdapterHarness;

const bytes = (...values: number[]) => new Uint8Array(values);

/** Locks `name` and reads it once, as the contract's order asks before any append. */
async function hold(adapter: ByteStorageAdapter, name: string) {
  const lock = await adapter.lock(name);
  await adapter.read(name);
  return lock;
}
const payloads = (records: { bytes: Uint8Array }[]) => records.map((record) => [...record.bytes]);

/** Registers the byte contract's tests in the calling vitest file; `setup` makes one isolated store per test. */
export function runByteAdapterTests(name: string, setup: ByteAdapterSetup): void {
  describe(`byte adapter contract: ${name}`, () => {
    let harness: ByteAdapterHarness;
    beforeEach(async () => {
      harness = await setup();
    });
    afterEach(async () => {
      await harness.teardown?.();
    });

    it('reads nothing for a document never written', async () => {
      const lock = await harness.adapter.lock('fresh');
      expect(await harness.adapter.read('fresh')).toEqual([]);
      await lock.release();
    });

    it('appends in order, with growing keys, and reads them back after a release', async () => {
      const { adapter } = harness;
      const lock = await hold(adapter, 'doc');
      const first = await adapter.append('doc', [bytes(1), bytes(2, 2)]);
      const second = await adapter.append('doc', [bytes(3, 3, 3)]);
      expect(first).toHaveLength(2);
      expect(second).toHaveLength(1);
      expect(first[1]!).toBeGreaterThan(first[0]!);
      expect(second[0]!).toBeGreaterThan(first[1]!);
      await adapter.sync?.('doc');
      await lock.release();
      const again = await harness.reopen();
      const relock = await again.lock('doc');
      expect(payloads(await again.read('doc'))).toEqual([[1], [2, 2], [3, 3, 3]]);
      await relock.release();
    });

    it('keeps documents apart: no prefix, case, path or encoding mix-ups', async () => {
      const { adapter } = harness;
      const names = ['p', 'p2', 'p:2', 'P', 'p/../p', '../p', 'p.log', 'ünïcode ✓'];
      const locks = [];
      for (const [i, name] of names.entries()) {
        locks.push(await hold(adapter, name));
        await adapter.append(name, [bytes(i)]);
      }
      for (const [i, name] of names.entries()) expect(payloads(await adapter.read(name))).toEqual([[i]]);
      for (const lock of locks) await lock.release();
    });

    it('replaces exactly the named records and keeps the others', async () => {
      const { adapter } = harness;
      const lock = await hold(adapter, 'doc');
      const keys = await adapter.append('doc', [bytes(1), bytes(2), bytes(3)]);
      const merged = await adapter.replace('doc', keys.slice(0, 2), bytes(9, 9));
      expect(merged).toBeGreaterThan(keys[2]!);
      const later = await adapter.append('doc', [bytes(4)]);
      expect(later[0]!).toBeGreaterThan(merged);
      const stored = await adapter.read('doc');
      expect(payloads(stored).sort()).toEqual([[3], [4], [9, 9]].sort());
      // The keys read back are the ones handed out, so a second compaction can name them.
      await adapter.replace(
        'doc',
        stored.map((record) => record.key),
        bytes(7),
      );
      expect(payloads(await adapter.read('doc'))).toEqual([[7]]);
      await lock.release();
      const again = await harness.reopen();
      const relock = await again.lock('doc');
      expect(payloads(await again.read('doc'))).toEqual([[7]]);
      await relock.release();
    });

    it("stores its records whole: a later change to the caller's buffer changes nothing stored", async () => {
      const { adapter } = harness;
      const lock = await hold(adapter, 'doc');
      const buffer = bytes(5, 6);
      await adapter.append('doc', [buffer]);
      buffer[0] = 0;
      expect(payloads(await adapter.read('doc'))).toEqual([[5, 6]]);
      await lock.release();
    });

    it('a second holder is refused while the lock is held, or shares the records', async () => {
      const { adapter } = harness;
      const other = await harness.reopen();
      const lock = await hold(adapter, 'doc');
      await adapter.append('doc', [bytes(1)]);
      if (harness.secondLock === 'locked') {
        await expect(other.lock('doc')).rejects.toMatchObject({ code: 'locked' });
        await lock.release();
        const second = await other.lock('doc');
        expect(payloads(await other.read('doc'))).toEqual([[1]]);
        await second.release();
        return;
      }
      const second = await hold(other, 'doc');
      const theirs = await other.append('doc', [bytes(2)]);
      const mine = await adapter.read('doc');
      expect(payloads(mine)).toEqual([[1], [2]]);
      // A replace names only what its holder knew: the other holder's record stays.
      await adapter.replace(
        'doc',
        mine.filter((r) => !theirs.includes(r.key)).map((r) => r.key),
        bytes(8),
      );
      expect(payloads(await other.read('doc')).sort()).toEqual([[2], [8]]);
      await second.release();
      await lock.release();
    });

    it('keeps the first-read snapshot beside the records, if it stores one', async () => {
      const { adapter } = harness;
      if (!adapter.readSnapshot || !adapter.writeSnapshot) {
        expect(adapter.writeSnapshot).toBeUndefined();
        return;
      }
      const lock = await hold(adapter, 'doc');
      expect(await adapter.readSnapshot('doc')).toBeNull();
      await adapter.writeSnapshot('doc', bytes(1, 2, 3));
      await adapter.writeSnapshot('doc', bytes(4));
      expect([...((await adapter.readSnapshot('doc')) ?? [])]).toEqual([4]);
      await lock.release();
    });
  });
}
