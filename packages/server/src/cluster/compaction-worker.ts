// Compacts plans of the PostgreSQL store on a worker thread with its own connection, so a compaction never holds
// the event loop: on the loop, `Y.mergeUpdates` of 1,500 rows took about 78 ms, and reading 20,000 rows, merging
// them and deleting them held it for seconds, during which no client of the instance was served.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * The key of a plan's compaction lock (`$1`: the plan id), a transaction-level advisory lock: released at commit,
 * at rollback, and when the compacting connection dies (no lease to expire, no stale holder).
 */
export const COMPACTION_LOCK = "hashtextextended('cairn:compact:' || $1, 0)";

/**
 * What one compaction did: replaced the rows `removed` by row `key` of `bytes`; or left the plan (`busy`: another
 * holds the lock; `few`: it has fewer rows than asked).
 */
export type CompactionOutcome =
  | { kind: 'compacted'; removed: number[]; key: number; bytes: number }
  | { kind: 'busy' }
  | { kind: 'few'; rows: number };

// CommonJS run by `eval`, so the same code runs from the TypeScript sources and from the built package; yjs and pg
// are loaded by their resolved paths. One compaction at a time, each on a connection of its own. The rows are
// applied to a Y.Doc and its state encoded: linear in the rows, where `Y.mergeUpdates` of 20,000 small updates took
// 50 s. Rows another instance inserts meanwhile are not among those locked and deleted, so they stay.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');

// Background work: on Linux the thread lowers its own CPU priority (nice 10, by its thread id), so the event loop
// of this instance, and every other process's, is scheduled ahead of it when the cores are busy. First, so that
// loading yjs and pg (some 100-200 ms of CPU at the first compaction) runs at that priority too.
try {
  const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
  require('node:os').setPriority(tid, 10);
} catch {}

const Y = require(workerData.yjs);
const pg = require(workerData.pg);
const LOCK = ${JSON.stringify(COMPACTION_LOCK)};

async function compact({ planId, minRows }) {
  const client = new pg.Client({ connectionString: workerData.url, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query('BEGIN');
    const locked = await client.query('SELECT pg_try_advisory_xact_lock(' + LOCK + ') AS locked', [planId]);
    if (!locked.rows[0].locked) {
      await client.query('ROLLBACK');
      return { kind: 'busy' };
    }
    const counted = await client.query('SELECT count(*) AS n FROM cairn_updates WHERE plan_id = $1', [planId]);
    const count = Number(counted.rows[0].n);
    if (count < Math.max(2, minRows)) {
      await client.query('ROLLBACK');
      return { kind: 'few', rows: count };
    }
    const rows = await client.query(
      'SELECT id, data FROM cairn_updates WHERE plan_id = $1 ORDER BY id FOR UPDATE',
      [planId],
    );
    const doc = new Y.Doc();
    doc.transact(() => {
      for (const row of rows.rows) Y.applyUpdate(doc, row.data);
    });
    const merged = Y.encodeStateAsUpdate(doc);
    doc.destroy();
    await client.query('DELETE FROM cairn_updates WHERE id = ANY($1::bigint[])', [rows.rows.map((r) => r.id)]);
    const inserted = await client.query(
      'INSERT INTO cairn_updates (plan_id, data) VALUES ($1, $2) RETURNING id',
      [planId, Buffer.from(merged)],
    );
    await client.query('COMMIT');
    const removed = rows.rows.map((r) => Number(r.id));
    return { kind: 'compacted', removed, key: Number(inserted.rows[0].id), bytes: merged.byteLength };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await client.end().catch(() => undefined);
  }
}

let chain = Promise.resolve();
parentPort.on('message', (job) => {
  chain = chain.then(() =>
    compact(job).then(
      (outcome) => parentPort.postMessage({ id: job.id, outcome }),
      (error) => parentPort.postMessage({ id: job.id, error: error instanceof Error ? error.message : String(error) }),
    ),
  );
});
`;

type Reply = { id: number; outcome: CompactionOutcome; error?: undefined } | { id: number; error: string };

/** One worker thread, started at the first compaction and kept (unreferenced: it never holds the process open). */
export class CompactionWorker {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly waiting = new Map<
    number,
    { resolve(outcome: CompactionOutcome): void; reject(error: Error): void }
  >();

  constructor(private readonly url: string) {}

  /** Compacts the plan when it has at least `minRows` rows and nobody else is compacting it. */
  compact(planId: string, minRows: number): Promise<CompactionOutcome> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.started().postMessage({ id, planId, minRows });
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    await worker?.terminate();
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const require = createRequire(import.meta.url);
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { yjs: require.resolve('yjs'), pg: require.resolve('pg'), url: this.url },
    });
    worker.unref();
    worker.on('message', (reply: Reply) => {
      const waiting = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      if (reply.error !== undefined) waiting?.reject(new Error(reply.error));
      else waiting?.resolve(reply.outcome);
    });
    const fail = (error: Error) => {
      if (this.worker === worker) this.worker = null;
      for (const { reject } of this.waiting.values()) reject(error);
      this.waiting.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`The compaction worker stopped (exit code ${code}).`)));
    this.worker = worker;
    return worker;
  }
}
