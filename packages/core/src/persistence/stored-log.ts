// The one layer between a document's updates and a ByteStorageAdapter: it decides when updates are written
// (batching), when the log is compacted and how long to wait after a failure, when the first-read snapshot is
// written, what the first read may answer from, and which errors reject a flush. Every store uses it: the fs and
// IndexedDB persistence, the server's disk, memory and PostgreSQL stores.
import * as Y from 'yjs';
import { CairnError, toCairnError } from '../errors.js';
import { type DecodedSnapshot, decodeSnapshot, encodeSnapshot } from '../snapshot.js';
import type { ByteLock, ByteStorageAdapter, RecordKey, StoredRecord } from './adapter.js';
import { Backoff, type CompactionPolicy, compactAfterRecords, policyWantsCompaction } from './policy.js';

/**
 * An adapter that writes synchronously (a file's `writeSync`, SQLite in a Durable Object) and takes appends while a
 * `replace` runs (it carries them into the new file): the layer then hands it each batch at once, through
 * `appendNow`, so a batch is stored when the call that wrote it returns, without a promise per write.
 */
export interface ImmediateByteAdapter extends ByteStorageAdapter {
  /** `append`, done before it returns: the keys of the records, or a throw (what `append` would reject with). */
  appendNow(name: string, records: readonly Uint8Array[]): RecordKey[];
}

/**
 * An adapter that merges a document's records where they are kept (a database, on a worker thread). The merge
 * runs beside the layer's appends (they are not held while it works), and a flush does not wait for it.
 */
export interface MergingByteAdapter extends ByteStorageAdapter {
  /**
   * Merges the stored records of `name` into one, without the caller's state: for a store shared by writers
   * whose documents may hold what another has not stored yet. Merges only when `name` has at least `atLeast`
   * records stored (another holder may have merged them just now). Resolves with what it replaced and wrote, or,
   * when it merged nothing, with how many records are stored (0 while another holder is merging them).
   */
  mergeRecords(name: string, atLeast: number): Promise<MergedRecords | { stored: number }>;
}

/** What a `mergeRecords` replaced (`removed`) and the record it wrote (`key`, of `bytes`). */
export interface MergedRecords {
  removed: RecordKey[];
  key: RecordKey;
  bytes: number;
}

export type StoredLogError = 'append' | 'compact' | 'sync' | 'snapshot';

export interface StoredLogOptions {
  /** Everything the log must hold (the document's state): what a compaction or a repairing rewrite writes. */
  state: () => Uint8Array;
  /** Default `{ records: 1000, minBytes: 16 KiB }`; `false` compacts only to repair a failed write. */
  compaction?: CompactionPolicy | false;
  /**
   * When appended updates reach the adapter: `edit` (default) within `append`; `turn` together at the end of the
   * event loop's turn, one adapter call for all (a server, many updates a turn). A flush writes what waits.
   */
  batching?: 'edit' | 'turn';
  /** Bytes the adapter stores around each record (a file's frame): counted by the policy. Default 0. */
  recordOverhead?: number;
  /** Merge the updates of one batch into one record (y-indexeddb's layout: one record per transaction). */
  mergeBatch?: boolean;
  /**
   * Writes the first-read snapshot, called where the log holds exactly `state()`: after a compaction and at
   * close. Default: `encodeSnapshot(doc, { key })` into the adapter's `writeSnapshot`, if both exist.
   */
  writeSnapshot?: (lastKey: RecordKey) => void | Promise<void>;
  /** The document the default snapshot is encoded from (none: no snapshot). */
  doc?: Y.Doc;
  /**
   * The position `at` a snapshot at the record `lastKey` carries, in the default writer and in the check of a
   * stored one. Default `{ key: lastKey }`; a store whose format kept another (a Durable Object's SQLite: the
   * row's `seq`) gives its own, so snapshots written before stay valid.
   */
  snapshotAt?: (lastKey: RecordKey) => unknown;
  /**
   * After a compaction the policy started, write the snapshot once no update was appended for this long, not on
   * the write path (a plan still being written would make it stale at once). Default 0: with the compaction.
   */
  snapshotQuietMs?: number;
  /** Other holders may write the same log (browser tabs): the close writes a snapshot only over known records. */
  shared?: boolean;
  /** What a failure is reported as (a CairnError naming the file or database). */
  describeError?: (error: unknown) => CairnError;
  /** Every error in the background; each also rejects the next `flush`. */
  onError?: (error: CairnError, what: StoredLogError) => void;
}

const DEFAULT_POLICY: Required<CompactionPolicy> = { records: 1000, minBytes: 16 * 1024 };

/** One document's stored log, held (locked) from `open` until `close`. */
export class StoredLog {
  /** The records read at open; `takeLoaded` hands them out once. */
  private loaded: Uint8Array[] | null;
  /** The first-read snapshot stored beside the log, if it reflects exactly the records read. */
  readonly firstSnapshot: DecodedSnapshot | null;
  /**
   * The snapshot stored beside the log, current or not (adapters that keep it through `readSnapshot`): what the
   * loaded document must hold, or records were lost since it was written (decisions/035).
   */
  storedSnapshot: DecodedSnapshot | null = null;

  private readonly policy: Required<CompactionPolicy> | null;
  private readonly immediate: boolean;
  /** The adapter merges records itself (see MergingByteAdapter). */
  private readonly merges: boolean;
  private readonly backoff = new Backoff();
  /** Keys of every record this holder read or wrote and has not replaced: what a compaction replaces. */
  private known: { key: RecordKey; size: number }[];
  private records: number;
  private bytes: number;
  private firstBytes: number;
  private compactions = 0;
  private pending: Uint8Array[] = [];
  private writeScheduled = false;
  private writeQueued = false;
  /** Appends and replaces run one after another (the contract's promise to adapters). */
  private chain: Promise<unknown> = Promise.resolve();
  /** A write failed: the log may miss an update later ones depend on, until the whole state is rewritten. */
  private rewriteNeeded = false;
  private compacting: Promise<void> | null = null;
  private compactionTimer: ReturnType<typeof setTimeout> | null = null;
  private quietTimer: ReturnType<typeof setTimeout> | null = null;
  private appends = 0;
  private unflushed: CairnError[] = [];
  private lastReported: CairnError | null = null;
  private closed = false;

  /**
   * Takes the lock on `name` and reads its records (and, when the adapter keeps one, its snapshot). Rejects with
   * what the adapter rejects (`locked`, `storage` with `details.damage`), holding nothing.
   */
  static async open(
    adapter: ByteStorageAdapter,
    name: string,
    options: StoredLogOptions,
  ): Promise<StoredLog> {
    const lock = await adapter.lock(name);
    try {
      const records = await adapter.read(name);
      const stored = adapter.readSnapshot ? await adapter.readSnapshot(name) : null;
      const current = currentSnapshot(stored, records.at(-1)?.key, options.snapshotAt);
      const log = new StoredLog(adapter, name, lock, records, current, options);
      log.storedSnapshot = stored ? decodeSnapshot(stored) : null;
      return log;
    } catch (error) {
      await lock.release().catch(() => undefined);
      throw error;
    }
  }

  private constructor(
    private readonly adapter: ByteStorageAdapter,
    readonly name: string,
    private readonly lock: ByteLock,
    records: StoredRecord[],
    firstSnapshot: DecodedSnapshot | null,
    private readonly options: StoredLogOptions,
  ) {
    this.loaded = records.map((record) => record.bytes);
    this.firstSnapshot = firstSnapshot;
    const overhead = options.recordOverhead ?? 0;
    this.known = records.map((record) => ({ key: record.key, size: record.bytes.byteLength + overhead }));
    this.records = records.length;
    this.bytes = this.known.reduce((sum, record) => sum + record.size, 0);
    this.firstBytes = this.known[0]?.size ?? 0;
    this.policy = options.compaction === false ? null : { ...DEFAULT_POLICY, ...options.compaction };
    this.immediate = typeof (adapter as Partial<ImmediateByteAdapter>).appendNow === 'function';
    this.merges = typeof (adapter as Partial<MergingByteAdapter>).mergeRecords === 'function';
  }

  /** The records read at open, once (they can be large). */
  takeLoaded(): Uint8Array[] {
    const loaded = this.loaded ?? [];
    this.loaded = null;
    return loaded;
  }

  /** Stores `update` after everything appended before (see `batching`); failures reach `onError`. */
  append(update: Uint8Array): void {
    if (this.closed) throw new CairnError('storage', `"${this.name}" is closed.`, { name: this.name });
    this.appends++;
    this.pending.push(update);
    if ((this.options.batching ?? 'edit') === 'edit') this.writePending();
    else if (!this.writeScheduled) {
      this.writeScheduled = true;
      afterThisTurn(() => this.writePending());
    }
  }

  /** True while appended updates wait to be written, or a failed write waits for its rewrite. */
  get behind(): boolean {
    return this.pending.length > 0 || this.rewriteNeeded;
  }

  /**
   * Writes what waits, waits for a running compaction, rewrites the whole state if a write failed, and syncs.
   * Rejects with the first error reported since the last flush (each error rejects one flush), or with the
   * failure of the rewrite.
   */
  async flush(): Promise<void> {
    if (!this.closed) {
      this.writePending();
      this.startWaitingCompaction();
      if (this.compacting && (!this.merges || this.rewriteNeeded)) await this.compacting;
      if (this.rewriteNeeded) {
        this.backoff.succeeded(); // a flush retries a failed write now
        this.scheduleCompaction(false);
        await this.compacting;
      }
      await this.chain;
      try {
        await this.adapter.sync?.(this.name);
      } catch (error) {
        this.rewriteNeeded = true; // after a failed fsync the written pages may be gone
        this.report(error, 'sync');
      }
    }
    const [first] = this.unflushed;
    this.unflushed = [];
    if (first) throw first;
  }

  /**
   * Resolves once every update appended so far reached the adapter (written, not synced); rejects while a failed
   * write waits for its rewrite. Unlike `flush` it starts no rewrite, so a caller per update (a cluster's relay
   * confirming its updates) adds no writes while the store is away.
   */
  async written(): Promise<void> {
    this.writePending();
    await this.chain;
    if (this.rewriteNeeded)
      throw (
        this.lastReported ?? new CairnError('storage', `"${this.name}" was not stored.`, { name: this.name })
      );
  }

  /** Compacts now, whatever the policy says; rejects if it fails. */
  async compact(): Promise<void> {
    if (this.compacting) await this.compacting;
    if (this.closed) return;
    this.writePending();
    await this.compactNow();
    await this.snapshot();
  }

  /** Flushes, writes the snapshot (if the log holds exactly the state), and releases the lock. */
  async close(): Promise<void> {
    if (this.closed) return;
    let error: unknown = null;
    try {
      await this.flush();
    } catch (caught) {
      error = caught;
    }
    if (this.compacting) await this.compacting; // a merge the flush did not wait for
    await this.snapshot(true);
    this.closed = true;
    if (this.quietTimer) clearTimeout(this.quietTimer);
    if (this.compactionTimer) clearTimeout(this.compactionTimer);
    this.quietTimer = this.compactionTimer = null;
    try {
      await this.lock.release();
    } catch (caught) {
      error ??= caught;
    }
    if (error) throw this.describe(error);
  }

  /** Lets go of a log that was refused after it was read: writes nothing (no flush, no snapshot). */
  async release(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.lock.release();
  }

  /** What the policy measures, and how many compactions this holder made. */
  stats(): { records: number; bytes: number; firstBytes: number; compactions: number } {
    return {
      records: this.records,
      bytes: this.bytes,
      firstBytes: this.firstBytes,
      compactions: this.compactions,
    };
  }

  /** Starts a compaction now if the policy asks for one (after a load). */
  compactIfDue(): void {
    if (this.wantsCompaction()) this.scheduleCompaction(true);
  }

  private wantsCompaction(): boolean {
    if (this.rewriteNeeded) return true;
    if (!this.policy || this.closed) return false;
    return policyWantsCompaction(this.policy, {
      records: this.records,
      bytes: this.bytes,
      firstBytes: this.firstBytes,
    });
  }

  private writePending(): void {
    this.writeScheduled = false;
    if (this.closed) return;
    // An adapter that writes within its call is called now, so the update is stored when the edit returns; it
    // takes appends while a replace runs, so they stay off the chain.
    if (this.immediate) {
      const batch = this.takePending();
      if (batch) this.writeNow(batch);
      return;
    }
    // Otherwise one job on the chain takes every update that arrived before it starts.
    if (this.writeQueued || this.pending.length === 0) return;
    this.writeQueued = true;
    this.chain = this.chain.then(() => {
      this.writeQueued = false;
      const batch = this.takePending();
      return batch ? this.write(batch) : undefined;
    });
  }

  private takePending(): Uint8Array[] | null {
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0 || this.rewriteNeeded) return null; // a rewrite writes the whole state, these included
    return this.options.mergeBatch && batch.length > 1 ? [Y.mergeUpdates(batch)] : batch;
  }

  private write(records: Uint8Array[]): Promise<void> {
    return this.adapter.append(this.name, records).then(
      (keys) => this.recordWritten(records, keys),
      (error: unknown) => this.failedWrite(error),
    );
  }

  /** Written within the call: counted at once, so the policy sees it before the edit returns. */
  private writeNow(records: Uint8Array[]): void {
    let keys: RecordKey[];
    try {
      keys = (this.adapter as ImmediateByteAdapter).appendNow(this.name, records);
    } catch (error) {
      this.failedWrite(error);
      return;
    }
    this.recordWritten(records, keys);
  }

  private recordWritten(records: readonly Uint8Array[], keys: readonly RecordKey[]): void {
    this.count(records).forEach((entry, i) => {
      entry.key = keys[i] ?? Number.NaN;
    });
  }

  private failedWrite(error: unknown): void {
    this.rewriteNeeded = true;
    this.report(error, 'append');
    this.compactSoon();
  }

  private count(records: readonly Uint8Array[]): { key: RecordKey; size: number }[] {
    const overhead = this.options.recordOverhead ?? 0;
    const entries = records.map((record) => ({ key: Number.NaN, size: record.byteLength + overhead }));
    for (const entry of entries) {
      if (this.records === 0) this.firstBytes = entry.size;
      this.records++;
      this.bytes += entry.size;
      this.known.push(entry);
    }
    if (this.wantsCompaction()) this.compactSoon();
    return entries;
  }

  /**
   * Starts the compaction the policy asks for on the next turn of the event loop, not inside the write: started
   * inside a burst of writes that never yields (a script adding thousands of tasks), it would hold the burst in
   * memory twice and end with a snapshot of the burst's first moments. A flush starts a waiting one itself.
   */
  private compactSoon(): void {
    if (this.compactionTimer || this.compacting || this.closed) return;
    this.compactionTimer = setTimeout(() => this.startWaitingCompaction(), 0);
    (this.compactionTimer as { unref?: () => void }).unref?.();
  }

  private startWaitingCompaction(): void {
    if (!this.compactionTimer) return;
    clearTimeout(this.compactionTimer);
    this.compactionTimer = null;
    if (this.wantsCompaction()) this.scheduleCompaction(true);
  }

  private scheduleCompaction(byPolicy: boolean): void {
    if (this.compacting || this.closed || this.backoff.waiting) return;
    // A merging adapter counts what is stored again: another holder may have merged it just now.
    const atLeast =
      byPolicy && this.policy ? compactAfterRecords(this.policy.records, this.firstBytes) + 1 : 0;
    this.compacting = this.compactNow(atLeast)
      .then(
        () => {
          this.backoff.succeeded();
          if (byPolicy) this.snapshotWhenQuiet();
          else return this.snapshot();
        },
        (error: unknown) => {
          this.backoff.failed();
          this.report(error, 'compact');
        },
      )
      .finally(() => {
        this.compacting = null;
      });
  }

  private compactNow(atLeast = 0): Promise<void> {
    if (this.merges && !this.rewriteNeeded) return this.merge(atLeast);
    const run = async () => {
      const replaced = this.known.length;
      const repairs = this.rewriteNeeded ? this.unflushed.length : 0;
      // Taken at the start: every update appended so far is in the state, and the records replaced hold no more.
      const state = this.options.state();
      this.pending = [];
      const keys = this.known.map((record) => record.key);
      const key = await this.adapter.replace(this.name, keys, state);
      this.rewriteNeeded = false;
      // The whole state is stored again: the failed writes reported before it was taken lost nothing any more.
      this.unflushed.splice(0, repairs);
      const size = state.byteLength + (this.options.recordOverhead ?? 0);
      this.afterCompaction({ key, size }, this.known.slice(replaced));
    };
    const done = this.chain.then(run);
    this.chain = done.catch(() => undefined);
    return done;
  }

  /** Merges where the records are kept, after what was written before the call, beside later appends. */
  private async merge(atLeast: number): Promise<void> {
    await this.chain;
    const before = this.known.length;
    const merged = await (this.adapter as MergingByteAdapter).mergeRecords(this.name, atLeast);
    if ('stored' in merged) {
      // Nothing merged: counted again from what is stored, plus what this holder wrote meanwhile.
      this.records = merged.stored + this.known.length - before;
      return;
    }
    const removed = new Set(merged.removed);
    const kept = this.known.filter((record) => !removed.has(record.key));
    this.afterCompaction({ key: merged.key, size: merged.bytes }, kept);
  }

  private afterCompaction(
    first: { key: RecordKey; size: number },
    kept: { key: RecordKey; size: number }[],
  ): void {
    this.known = [first, ...kept];
    this.firstBytes = first.size;
    this.records = this.known.length;
    this.bytes = this.known.reduce((sum, record) => sum + record.size, 0);
    this.compactions++;
  }

  /** Writes the snapshot once no update was appended for `snapshotQuietMs`. */
  private snapshotWhenQuiet(): void {
    const quietMs = this.options.snapshotQuietMs ?? 0;
    if (quietMs <= 0) {
      void this.snapshot();
      return;
    }
    if (this.quietTimer || this.closed) return;
    let seen = this.appends;
    const check = () => {
      this.quietTimer = null;
      if (this.closed) return;
      if (this.appends !== seen) {
        seen = this.appends;
        this.quietTimer = setTimeout(check, quietMs);
        (this.quietTimer as { unref?: () => void }).unref?.();
        return;
      }
      if (!this.compacting) void this.snapshot(); // a compaction running now writes it when it is done
    };
    this.quietTimer = setTimeout(check, quietMs);
    (this.quietTimer as { unref?: () => void }).unref?.();
  }

  /**
   * Writes the first-read snapshot if the log holds exactly the state: nothing waits, no write failed, and (for
   * a shared log, at close) every stored record is one this holder knows. A failure is reported but rejects no
   * flush: the snapshot is a cache, and a stale one is never served.
   */
  private async snapshot(atClose = false): Promise<void> {
    const lastKey = this.known.at(-1)?.key;
    if (this.closed || this.behind || lastKey === undefined) return;
    try {
      if (this.options.writeSnapshot) {
        await this.options.writeSnapshot(lastKey);
        return;
      }
      const { doc } = this.options;
      if (!doc || !this.adapter.writeSnapshot) return;
      if (atClose && this.options.shared) {
        const known = new Set(this.known.map((record) => record.key));
        const stored = await this.adapter.read(this.name);
        if (this.behind || stored.at(-1)?.key !== lastKey || !stored.every((r) => known.has(r.key))) return;
      }
      const snapshot = encodeSnapshot(doc, (this.options.snapshotAt ?? keyPosition)(lastKey));
      if (snapshot) await this.adapter.writeSnapshot(this.name, snapshot);
    } catch (error) {
      this.report(error, 'snapshot', false);
    }
  }

  /** Reports an error met beside the layer (a background fsync of the adapter): onError, and the next flush. */
  report(error: unknown, what: StoredLogError, rejectsFlush = true): void {
    const err = this.describe(error);
    if (rejectsFlush) this.unflushed.push(err);
    // An error that stays (a connection closed under us) is told once; it still rejects every flush.
    if (err === this.lastReported) return;
    this.lastReported = err;
    this.options.onError?.(err, what);
  }

  private describe(error: unknown): CairnError {
    if (error instanceof CairnError) return error;
    if (this.options.describeError) return this.options.describeError(error);
    const cause = toCairnError(error);
    return new CairnError(
      'storage',
      `Could not store "${this.name}": ${cause.message}`,
      {},
      { cause: error },
    );
  }
}

const keyPosition = (key: RecordKey): unknown => ({ key });

/**
 * The first read's rule: the stored `snapshot`, decoded, if its position is that of `lastKey`, the last stored
 * record (nothing was stored after it); otherwise null. For a store that answers a read before it opens the log.
 */
export function currentSnapshot(
  snapshot: Uint8Array | null,
  lastKey: RecordKey | undefined,
  snapshotAt: (lastKey: RecordKey) => unknown = keyPosition,
): DecodedSnapshot | null {
  const decoded = snapshot ? decodeSnapshot(snapshot) : null;
  if (!decoded || lastKey === undefined) return null;
  return JSON.stringify(decoded.at) === JSON.stringify(snapshotAt(lastKey)) ? decoded : null;
}

/** Runs `run` once the event loop's current turn is done: setImmediate where there is one (Node), else a task. */
function afterThisTurn(run: () => void): void {
  const immediate = (globalThis as { setImmediate?: (run: () => void) => unknown }).setImmediate;
  if (immediate) immediate(run);
  else setTimeout(run, 0);
}
