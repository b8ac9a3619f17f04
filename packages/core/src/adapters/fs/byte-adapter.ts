// The file system as a ByteStorageAdapter: per document a checksummed log (`<name>.log`, update-log.ts) and a
// lock file, in one directory. Used by the fs persistence and the server's disk store alike.
import * as nodeFs from 'node:fs';
import { join, resolve } from 'node:path';
import { CairnError } from '../../errors.js';
import type { ByteLock, RecordKey, StoredRecord } from '../../persistence/adapter.js';
import type { ImmediateByteAdapter } from '../../persistence/stored-log.js';
import { acquireLock } from './lock.js';
import { encodePlanName } from './names.js';
import { type Durability, type LogRecovery, UpdateLog } from './update-log.js';

export interface FileByteAdapterOptions {
  /** Default `batched`: see Durability. */
  durability?: Durability;
  /** Delay of the background fsync after an append. Default 5 ms. */
  fsyncDelayMs?: number;
  /** Told when a read cut an incomplete last record off a log (a write a crash cut short). */
  onRecover?: (name: string, path: string, recovery: LogRecovery) => void;
  /** Failures of a background fsync (the one scheduled after an append). */
  onSyncError?: (name: string, error: CairnError) => void;
  /** File system calls; node:fs by default (tests wrap it to inject failures). */
  fs?: typeof nodeFs;
}

/**
 * Paths of a plan's files in `dir`: the log, its lock and its first-read snapshot. Throws
 * CairnError('invalid_argument') for a bad name.
 */
export function planFiles(dir: string, name: string): { log: string; lock: string; snapshot: string } {
  const base = join(resolve(dir), encodePlanName(name));
  return { log: `${base}.log`, lock: `${base}.lock`, snapshot: `${base}.snap` };
}

interface Held {
  log: UpdateLog | null;
  /** Keys are numbers handed out in this session: the file's records are renumbered at each read. */
  next: RecordKey;
  /** The key of each record in the file, in file order. */
  keys: RecordKey[];
}

/**
 * Writes within the call (`appendNow`, and `append` through it: `writeSync`, so stored when the edit returns and
 * survives kill -9) and fsyncs in batches; `replace` compacts by writing a temp file and renaming it over the log,
 * carrying appends made meanwhile.
 */
export class FileByteAdapter implements ImmediateByteAdapter {
  readonly dir: string;
  private readonly fs: typeof nodeFs;
  private readonly held = new Map<string, Held>();

  constructor(
    dir: string,
    private readonly options: FileByteAdapterOptions = {},
  ) {
    this.dir = resolve(dir);
    this.fs = options.fs ?? nodeFs;
  }

  /** The open log of `name` (its stats, its position for a snapshot), or null. */
  log(name: string): UpdateLog | null {
    return this.held.get(name)?.log ?? null;
  }

  async lock(name: string): Promise<ByteLock> {
    const files = planFiles(this.dir, name); // bad input throws here, before anything changes
    this.fs.mkdirSync(this.dir, { recursive: true });
    const lock = acquireLock(files.lock, this.fs);
    const held: Held = { log: null, next: 1, keys: [] };
    this.held.set(name, held);
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        if (this.held.get(name) === held) this.held.delete(name);
        try {
          await held.log?.close();
        } finally {
          held.log = null;
          lock.release();
        }
      },
    };
  }

  async read(name: string): Promise<StoredRecord[]> {
    const held = this.holding(name);
    const files = planFiles(this.dir, name);
    const log = UpdateLog.open(files.log, {
      durability: this.options.durability,
      fsyncDelayMs: this.options.fsyncDelayMs,
      fs: this.fs,
      snapshotPath: files.snapshot,
      onError: (error) => this.options.onSyncError?.(name, error),
    });
    held.log = log;
    if (log.recovery) this.options.onRecover?.(name, files.log, log.recovery);
    const records = log.takeLoadedRecords().map((bytes) => ({ key: held.next++, bytes }));
    held.keys = records.map((record) => record.key);
    return records;
  }

  async append(name: string, records: readonly Uint8Array[]): Promise<RecordKey[]> {
    return this.appendNow(name, records);
  }

  appendNow(name: string, records: readonly Uint8Array[]): RecordKey[] {
    const held = this.holding(name);
    this.open(name, held).appendMany(records);
    const keys = records.map(() => held.next++);
    held.keys.push(...keys);
    return keys;
  }

  async replace(name: string, keys: readonly RecordKey[], record: Uint8Array): Promise<RecordKey> {
    const held = this.holding(name);
    const log = this.open(name, held);
    const named = new Set(keys);
    const before = held.keys.slice();
    const kept = before.filter((key) => !named.has(key));
    // The layer names every record it holds; records it did not name are read back and written after `record`.
    let keep: Uint8Array[] = [];
    if (kept.length > 0) {
      const all = UpdateLog.read(log.path, this.fs) ?? [];
      keep = before.flatMap((key, i) => (named.has(key) ? [] : [all[i]!]));
    }
    await log.compact(record, keep);
    const key = held.next++;
    held.keys = [key, ...kept, ...held.keys.slice(before.length)];
    return key;
  }

  async sync(name: string): Promise<void> {
    await this.held.get(name)?.log?.sync();
  }

  private holding(name: string): Held {
    const held = this.held.get(name);
    if (!held) throw new CairnError('storage', `"${name}" is not locked by this store.`, { name });
    return held;
  }

  private open(name: string, held: Held): UpdateLog {
    if (!held.log) throw new CairnError('storage', `The log of "${name}" is not open.`, { name });
    return held.log;
  }
}
