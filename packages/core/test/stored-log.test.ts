// The one persistence layer (StoredLog, and the document binding over it) on the memory adapter: what every
// store gets from it whatever keeps its bytes. Each adapter's own part (what append, read and replace keep) is the
// byte suite's (byte-adapters.test.ts, and the server's PostgreSQL run), so these run once, here.
import { describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import { CairnError, toCairnError } from '../src/errors.js';
import type { ByteStorageAdapter } from '../src/persistence/adapter.js';
import { BoundDoc } from '../src/persistence/bound-doc.js';
import { type MemoryByteAdapter, memoryByteAdapter } from '../src/persistence/memory-adapter.js';
import { type MergingByteAdapter, StoredLog, type StoredLogOptions } from '../src/persistence/stored-log.js';

const ORIGIN = 'agent:layer';

/** Opens documents over `adapter` as the fs and IndexedDB persistence do (BoundDoc over StoredLog). */
function opener(adapter: ByteStorageAdapter, options: Partial<StoredLogOptions> = {}) {
  return (name: string, doc = new Y.Doc()) => {
    const stored = new BoundDoc(doc, {
      label: `plan "${name}"`,
      describeError: toCairnError,
      open: ({ state, onError }) =>
        StoredLog.open(adapter, name, { compaction: { records: 100 }, ...options, state, onError }),
    });
    return { doc, stored };
  };
}

/** The memory adapter granting its lock shared, as IndexedDB tabs and PostgreSQL instances do. */
function sharedMemory(): MemoryByteAdapter {
  return { ...memoryByteAdapter(), lock: async () => ({ release: async () => undefined }) };
}

/** The memory adapter whose appends and replaces fail while `failing` is set (a full disk, a database away). */
function failingMemory(): MemoryByteAdapter & { failing: boolean } {
  const memory = memoryByteAdapter();
  const fail = () => Promise.reject(new Error('no space left'));
  const adapter = {
    ...memory,
    failing: false,
    append: (name: string, records: readonly Uint8Array[]) =>
      adapter.failing ? fail() : memory.append(name, records),
    replace: (name: string, keys: readonly number[], record: Uint8Array) =>
      adapter.failing ? fail() : memory.replace(name, keys, record),
  };
  return adapter as MemoryByteAdapter & { failing: boolean };
}

function storedDoc(adapter: MemoryByteAdapter, name: string): Y.Doc {
  const doc = new Y.Doc();
  for (const record of adapter.records(name)) Y.applyUpdate(doc, record.bytes);
  return doc;
}

async function load(open: ReturnType<typeof opener>, name: string): Promise<Y.Doc> {
  const { doc, stored } = open(name);
  await stored.whenLoaded;
  await stored.close();
  return doc;
}

/** Opens `name`, writes `count` tasks and closes it, so the next open loads them. */
async function storeTasks(open: ReturnType<typeof opener>, name: string, count: number): Promise<void> {
  const { doc, stored } = open(name);
  await stored.whenLoaded;
  writeTasks(doc, 0, count);
  await stored.close();
}

describe('StoredLog and the document bound to it', () => {
  it('flush() resolves once the edits are stored, and a new open loads them identical (maps, text, arrays)', async () => {
    const adapter = memoryByteAdapter();
    const open = opener(adapter);
    const { doc, stored } = open('plan');
    await stored.whenLoaded;
    for (let i = 0; i < 5; i++) {
      writeTasks(doc, i, 1);
      await stored.flush();
      expect(json(storedDoc(adapter, 'plan'))).toEqual(json(doc));
    }
    doc.transact(() => doc.getArray<string>('log').push(['a', 'b']), ORIGIN);
    await stored.close();
    const again = await load(open, 'plan');
    expect(json(again)).toEqual(json(doc));
    expect(tasks(again).size).toBe(5);
  });

  it('stores what an observer writes in reaction to the load itself', async () => {
    const open = opener(memoryByteAdapter());
    await storeTasks(open, 'plan', 3);
    // A doc whose observer answers remote changes (as a Plan repairs aliases after a merge) is opened on it.
    const doc = new Y.Doc();
    tasks(doc).observe((event) => {
      if (!event.transaction.local)
        doc.transact(() => doc.getMap('meta').set('seen', tasks(doc).size), ORIGIN);
    });
    const second = open('plan', doc);
    await second.stored.whenLoaded;
    expect(doc.getMap('meta').get('seen')).toBe(3);
    await second.stored.close();
    expect((await load(open, 'plan')).getMap('meta').get('seen')).toBe(3);
  });

  it('reopens after close, again and again, keeping every session; after close the doc is no longer stored', async () => {
    const open = opener(memoryByteAdapter());
    for (let session = 0; session < 3; session++) {
      const { doc, stored } = open('plan');
      await stored.whenLoaded;
      expect(tasks(doc).size).toBe(session * 5);
      writeTasks(doc, session * 5, 5);
      await stored.close();
      doc.transact(() => doc.getMap('meta').set('afterClose', session), ORIGIN);
    }
    const doc = await load(open, 'plan');
    expect(tasks(doc).size).toBe(15);
    expect(doc.getMap('meta').has('afterClose')).toBe(false);
  });

  it('stores edits made before whenLoaded resolves, and content the doc had before open', async () => {
    const open = opener(memoryByteAdapter());
    await storeTasks(open, 'plan', 3);
    const doc = new Y.Doc();
    writeTasks(doc, 100, 2); // content before open
    const { stored } = open('plan', doc);
    writeTasks(doc, 200, 2); // an edit before the load finished
    await stored.whenLoaded;
    expect(tasks(doc).size).toBe(7);
    await stored.close();
    expect(json(await load(open, 'plan'))).toEqual(json(doc));
  });

  it('loads a large plan (2,000 tasks with several fields) identical', async () => {
    const open = opener(memoryByteAdapter());
    const { doc, stored } = open('plan');
    await stored.whenLoaded;
    writeTasks(doc, 0, 2_000);
    await stored.close();
    const again = await load(open, 'plan');
    expect(json(again)).toEqual(json(doc));
    expect(Y.encodeStateVector(again)).toEqual(Y.encodeStateVector(doc));
  });

  it('loads 5,000 small updates identical, with storage bounded (compacted)', async () => {
    const adapter = memoryByteAdapter();
    const open = opener(adapter, { compaction: { records: 1000 } });
    const { doc, stored } = open('plan');
    await stored.whenLoaded;
    writeTasks(doc, 0, 50);
    let written = 0;
    doc.on('update', (update: Uint8Array) => {
      written += update.byteLength;
    });
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 100; i++) {
        const n = round * 100 + i;
        const task = tasks(doc).get(`t${n % 50}`)!;
        doc.transact(() => {
          task.set('updatedAt', n);
          task.set('status', n % 3 === 0 ? 'in_progress' : 'pending');
        }, ORIGIN);
      }
      await stored.flush(); // separate batches, as edits over time would be
    }
    const fresh = Y.encodeStateAsUpdate(doc).byteLength;
    const bytes = adapter.records('plan').reduce((sum, record) => sum + record.bytes.byteLength, 0);
    // An uncompacted log holds at least every update written; a compacted one a fraction of it.
    expect(bytes).toBeLessThan(written / 2);
    expect(bytes).toBeLessThan(fresh * 2 + 64 * 1024);
    await stored.close();
    expect(json(await load(open, 'plan'))).toEqual(json(doc));
  });

  it('a second holder refused as locked stores nothing, and the first carries on', async () => {
    const open = opener(memoryByteAdapter());
    const a = open('plan');
    await a.stored.whenLoaded;
    writeTasks(a.doc, 0, 2);
    const b = open('plan');
    await expect(b.stored.whenLoaded).rejects.toMatchObject({ code: 'locked' });
    writeTasks(b.doc, 50, 1);
    await b.stored.close();
    writeTasks(a.doc, 2, 1);
    await a.stored.close();
    expect([...tasks(await load(open, 'plan')).keys()].sort()).toEqual(['t0', 't1', 't2']);
  });

  it('two holders of a shared log keep each other’s records through their compactions', async () => {
    const open = opener(sharedMemory());
    const a = open('plan');
    await a.stored.whenLoaded;
    writeTasks(a.doc, 0, 2);
    await a.stored.flush();
    const b = open('plan');
    await b.stored.whenLoaded;
    expect(tasks(b.doc).size).toBe(2);
    writeTasks(b.doc, 10, 2); // not in a's doc: a's compactions must keep it
    await b.stored.flush();
    for (let round = 0; round < 10; round++) {
      for (let i = 0; i < 100; i++)
        a.doc.transact(
          () =>
            tasks(a.doc)
              .get('t0')!
              .set('n', round * 100 + i),
          ORIGIN,
        );
      await a.stored.flush();
    }
    writeTasks(b.doc, 20, 1);
    await Promise.all([a.stored.close(), b.stored.close()]);
    const doc = await load(open, 'plan');
    expect([...tasks(doc).keys()].sort()).toEqual(['t0', 't1', 't10', 't11', 't20']);
    expect(tasks(doc).get('t0')!.get('n')).toBe(999);
  });

  it('reports a failed write through onError, rejects the next flush, and rewrites the whole state once writes work', async () => {
    const adapter = failingMemory();
    const { doc, stored } = opener(adapter)('plan');
    const errors: CairnError[] = [];
    stored.onError((error) => errors.push(error));
    await stored.whenLoaded;
    writeTasks(doc, 0, 1);
    await stored.flush();
    adapter.failing = true;
    writeTasks(doc, 1, 2);
    const flushed = await stored.flush().then(
      () => null,
      (error: unknown) => error,
    );
    expect(flushed).toBeInstanceOf(CairnError);
    expect((flushed as CairnError).code).toBe('storage');
    await vi.waitFor(() => expect(errors.length).toBeGreaterThan(0));
    expect(errors.every((error) => error instanceof CairnError && error.code === 'storage')).toBe(true);
    adapter.failing = false;
    await stored.flush();
    expect(json(storedDoc(adapter, 'plan'))).toEqual(json(doc));
    await stored.close();
  });
});

describe('StoredLog over an adapter that merges where the records are kept', () => {
  /** The memory adapter merging on its own, held at `gate` until `open()` (a worker thread at work). */
  function mergingMemory() {
    const memory = memoryByteAdapter();
    let open: () => void = () => undefined;
    let gate = Promise.resolve();
    const adapter: MergingByteAdapter & { records: MemoryByteAdapter['records'] } = {
      ...memory,
      async mergeRecords(name, atLeast) {
        const records = memory.records(name);
        if (records.length < Math.max(2, atLeast)) return { stored: records.length };
        await gate;
        const merged = Y.mergeUpdates(records.map((record) => record.bytes));
        const removed = records.map((record) => record.key);
        return { removed, key: await memory.replace(name, removed, merged), bytes: merged.byteLength };
      },
    };
    return {
      adapter,
      hold: () => {
        gate = new Promise((resolve) => {
          open = resolve;
        });
      },
      release: () => open(),
    };
  }

  it('writes and flushes while a merge runs, and keeps what was written meanwhile', async () => {
    const { adapter, hold, release } = mergingMemory();
    const doc = new Y.Doc();
    const log = await StoredLog.open(adapter, 'plan', { state: () => Y.encodeStateAsUpdate(doc) });
    doc.on('update', (update: Uint8Array) => log.append(update));
    writeTasks(doc, 0, 5);
    await log.flush();
    writeTasks(doc, 5, 5);
    await log.flush();
    hold();
    const merging = log.compact();
    writeTasks(doc, 10, 1);
    await log.flush(); // not held by the merge
    expect(adapter.records('plan')).toHaveLength(3);
    release();
    await merging;
    // The two records it read are one now; the one written meanwhile stays, and is counted.
    expect(adapter.records('plan')).toHaveLength(2);
    expect(log.stats()).toMatchObject({ records: 2, compactions: 1 });
    expect(json(storedDoc(adapter as MemoryByteAdapter, 'plan'))).toEqual(json(doc));
    await log.close();
  });

  it('a merge the store declines (too few records now) is counted again from what it holds', async () => {
    const { adapter } = mergingMemory();
    const log = await StoredLog.open(adapter, 'plan', {
      state: () => new Uint8Array(),
      compaction: { records: 3 },
    });
    const doc = new Y.Doc();
    doc.on('update', (update: Uint8Array) => log.append(update));
    for (let i = 0; i < 3; i++) {
      doc.getMap('m').set('k', i);
      await log.flush();
    }
    // Another holder merges them: three are counted here, the adapter holds one.
    const stored = adapter.records('plan');
    await adapter.replace(
      'plan',
      stored.map((record) => record.key),
      Y.mergeUpdates(stored.map((record) => record.bytes)),
    );
    // The fourth reaches the policy here (a merge of at least four); the adapter holds two and declines.
    doc.getMap('m').set('k', 3);
    await log.flush();
    await vi.waitFor(() => expect(log.stats().records).toBe(2));
    expect(log.stats().compactions).toBe(0);
    await log.close();
  });
});

/** The doc's content as plain data (a loaded doc's toJSON() omits top-level types it has not asked for yet). */
function json(doc: Y.Doc): unknown {
  return { tasks: tasks(doc).toJSON(), meta: doc.getMap('meta').toJSON(), log: doc.getArray('log').toJSON() };
}

function tasks(doc: Y.Doc): Y.Map<Y.Map<unknown>> {
  return doc.getMap<Y.Map<unknown>>('tasks');
}

/** Tasks t{from}..t{from+count-1} with plan-like fields, written field by field in one transaction. */
function writeTasks(doc: Y.Doc, from: number, count: number): void {
  doc.transact(() => {
    for (let n = from; n < from + count; n++) {
      const task = new Y.Map<unknown>();
      tasks(doc).set(`t${n}`, task);
      const title = new Y.Text();
      task.set('title', title);
      title.insert(0, `Task number ${n}: do the thing`);
      task.set('status', 'pending');
      task.set('rank', `a${n.toString(36)}`);
      task.set('createdAt', 1_700_000_000_000 + n);
      const blockedBy = new Y.Map<boolean>();
      task.set('blockedBy', blockedBy);
      if (n > from) blockedBy.set(`t${n - 1}`, true);
    }
  }, ORIGIN);
}
