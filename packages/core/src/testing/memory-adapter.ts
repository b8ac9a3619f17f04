// A ByteStorageAdapter in memory: the smallest implementation of the contract, for tests and as a model for a
// new adapter. It survives a lock's release (a document can be locked and read again) but not the process.
import { CairnError } from '../errors.js';
import type { ByteLock, ByteStorageAdapter, RecordKey, StoredRecord } from '../persistence/adapter.js';

/** The memory adapter with a view of what it holds, for tests that check what was stored. */
export interface MemoryByteAdapter extends ByteStorageAdapter {
  /** The records of `name` as stored now (a copy). */
  records(name: string): StoredRecord[];
}

/** Keeps every document's records in a Map; a second lock of a held document is refused (`locked`). */
export function memoryByteAdapter(): MemoryByteAdapter {
  const logs = new Map<string, StoredRecord[]>();
  const snapshots = new Map<string, Uint8Array>();
  const held = new Set<string>();
  let nextKey = 1;
  const log = (name: string): StoredRecord[] => {
    const records = logs.get(name) ?? [];
    logs.set(name, records);
    return records;
  };
  return {
    async lock(name: string): Promise<ByteLock> {
      if (held.has(name))
        throw new CairnError('locked', `"${name}" is already locked in this store.`, { name });
      held.add(name);
      let released = false;
      return {
        async release() {
          if (released) return;
          released = true;
          held.delete(name);
        },
      };
    },
    async read(name: string): Promise<StoredRecord[]> {
      return [...log(name)];
    },
    async append(name: string, records: readonly Uint8Array[]): Promise<RecordKey[]> {
      const stored = records.map((bytes) => ({ key: nextKey++, bytes: bytes.slice() }));
      log(name).push(...stored);
      return stored.map((record) => record.key);
    },
    async replace(name: string, keys: readonly RecordKey[], record: Uint8Array): Promise<RecordKey> {
      const removed = new Set(keys);
      const kept = log(name).filter((stored) => !removed.has(stored.key));
      const key = nextKey++;
      logs.set(name, [{ key, bytes: record.slice() }, ...kept]);
      return key;
    },
    async readSnapshot(name: string): Promise<Uint8Array | null> {
      return snapshots.get(name) ?? null;
    },
    async writeSnapshot(name: string, snapshot: Uint8Array): Promise<void> {
      snapshots.set(name, snapshot.slice());
    },
    records(name: string): StoredRecord[] {
      return [...(logs.get(name) ?? [])];
    },
  };
}
