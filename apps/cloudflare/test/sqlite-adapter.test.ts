// The byte contract's acceptance suite over SqliteByteAdapter, run where the adapter runs: each call is made by a
// Durable Object in workerd, over the object's own SQLite (one object per store, a new adapter over it for a
// "second holder"). The assertions run here; the bytes cross as JSON. The suite runs twice: with the default row
// size, and with rows of one byte, so that every record and snapshot of more than a byte is split over rows.
import { fileURLToPath } from 'node:url';
import { CairnError, type ErrorCode } from '@cairn/core';
import type { ByteStorageAdapter } from '@cairn/core/protocol';
import { runByteAdapterTests } from '@cairn/core/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fileHoldingDocument, sqlite } from './object-files.js';
import { type RunningWorkerd, startWorkerd } from './workerd.js';
import type { ByteCall } from './workers/byte-adapter.js';

let w: RunningWorkerd;
beforeAll(async () => {
  w = await startWorkerd({
    vars: {},
    worker: {
      entry: fileURLToPath(new URL('workers/byte-adapter.ts', import.meta.url)),
      binding: 'BYTE_STORES',
      className: 'ByteAdapterObject',
    },
  });
});
afterAll(() => w?.dispose());

/** An adapter whose every call runs in the object `store`, as its adapter number `adapter`. */
function remoteAdapter(store: string, adapter: number, chunkBytes?: number): ByteStorageAdapter {
  const call = async <T>(request: Omit<ByteCall, 'adapter'>): Promise<T> => {
    const response = await fetch(`${w.url}/${store}`, {
      method: 'POST',
      body: JSON.stringify({ adapter, chunkBytes, ...request }),
    });
    const answer = (await response.json()) as { value: T; error?: { code: ErrorCode; message: string } };
    if (answer.error) throw new CairnError(answer.error.code, answer.error.message);
    return answer.value;
  };
  return {
    async lock(name) {
      const lock = await call<number>({ method: 'lock', name });
      return { release: () => call<void>({ method: 'release', name, lock }) };
    },
    async read(name) {
      const records = await call<{ key: number; bytes: number[] }[]>({ method: 'read', name });
      return records.map((record) => ({ key: record.key, bytes: new Uint8Array(record.bytes) }));
    },
    append: (name, records) => call({ method: 'append', name, records: records.map((r) => [...r]) }),
    replace: (name, keys, bytes) => call({ method: 'replace', name, keys: [...keys], bytes: [...bytes] }),
    sync: (name) => call({ method: 'sync', name }),
    async readSnapshot(name) {
      const snapshot = await call<number[] | null>({ method: 'readSnapshot', name });
      return snapshot ? new Uint8Array(snapshot) : null;
    },
    writeSnapshot: (name, snapshot) => call({ method: 'writeSnapshot', name, bytes: [...snapshot] }),
  };
}

let stores = 0;
for (const chunkBytes of [undefined, 1]) {
  const rows = chunkBytes === undefined ? '' : `, rows of ${chunkBytes} byte`;
  runByteAdapterTests(`sqlite (a Durable Object in workerd${rows})`, () => {
    const store = `store-${++stores}`;
    let adapters = 1;
    return {
      adapter: remoteAdapter(store, adapters, chunkBytes),
      reopen: () => remoteAdapter(store, ++adapters, chunkBytes),
      // The object is the one writer of its storage: the lock is granted at once and holders share the records.
      secondLock: 'shared',
    };
  });
}

it('reads records written in parts whatever the row size of the adapter reading them', async () => {
  const small = remoteAdapter('resized', 1, 2);
  await small.lock('doc');
  await small.read('doc');
  const written = [[1, 2, 3, 4, 5], [6], [7, 8, 9]];
  await small.append(
    'doc',
    written.map((r) => new Uint8Array(r)),
  );
  await small.writeSnapshot?.('doc', new Uint8Array([10, 11, 12]));
  const large = remoteAdapter('resized', 2);
  expect((await large.read('doc')).map((r) => [...r.bytes])).toEqual(written);
  expect([...((await large.readSnapshot?.('doc')) ?? [])]).toEqual([10, 11, 12]);
});

it('refuses a row size Cloudflare would refuse, or none', async () => {
  for (const chunkBytes of [0, 2_000_000, 1.5]) {
    await expect(remoteAdapter('sizes', chunkBytes, chunkBytes).read('doc')).rejects.toMatchObject({
      code: 'invalid_argument',
    });
  }
});

it('keeps what a synced append stored through a restart of the runtime', async () => {
  const before = remoteAdapter('restarted', 1);
  await before.lock('doc');
  await before.read('doc');
  const keys = await before.append('doc', [new Uint8Array([1, 2]), new Uint8Array([3])]);
  await before.sync?.('doc');
  await w.kill9();
  await w.restart();
  const after = remoteAdapter('restarted', 1);
  await after.lock('doc');
  const records = await after.read('doc');
  expect(records.map((r) => r.key)).toEqual(keys);
  expect(records.map((r) => [...r.bytes])).toEqual([[1, 2], [3]]);
});

it('refuses a record whose part is damaged, missing or left without its first row: never read shorter', async () => {
  const writer = remoteAdapter('damaged', 1, 2);
  await writer.lock('parts');
  await writer.read('parts');
  const [key] = await writer.append('parts', [new Uint8Array([1, 2, 3, 4, 5, 6])]); // three parts of two bytes
  await writer.sync?.('parts');
  await w.kill9();
  const file = fileHoldingDocument(w.storageDir, 'parts');
  // Each change damages the record where the read checks before the one made earlier.
  const changes: Array<[string, RegExp]> = [
    [
      'UPDATE cairn_update_parts SET crc = (crc + 1) % 4294967296 WHERE part = 2',
      /part 2 of 3: checksum mismatch/,
    ],
    ['DELETE FROM cairn_update_parts WHERE part = 1', /part 1 of 3 is missing/],
    ['DELETE FROM cairn_updates', /its parts are there but its first row is not/],
  ];
  let adapters = 1;
  for (const [change, why] of changes) {
    sqlite(file, change);
    await w.restart();
    const reader = remoteAdapter('damaged', ++adapters);
    await expect(reader.read('parts')).rejects.toMatchObject({
      code: 'storage',
      message: expect.stringMatching(new RegExp(`damaged at record ${key} \\(${why.source}\\)`)),
    });
    await w.kill9();
  }
  await w.restart();
});
