// The plans' trace documents as learning uses them. Calls recorded on the server (the HTTP tool route) wait in
// memory and are written in batches (`traceBatch`), or before anything else reads or writes that trace. Work on
// one trace runs one at a time, and the document is unloaded after each use unless someone else holds it: a trace
// is read and written now and then, and kept loaded it would double the rooms of plans worked over HTTP.
import { CairnError } from '@cairn/core';
import { recordCall, type TraceBound, traceDocId } from '@cairn/core/learning';
import type { ToolCallRecord } from '@cairn/core/protocol';
import type { DueQueue } from '../../hub/due-times.js';
import type { ExtensionHost, PlanHandle } from '../../hub/extension.js';
import { describeError, type Logger } from '../../log.js';

export interface TraceDocsOptions {
  bound: TraceBound;
  now: () => number;
  logger: Logger;
  /** Write the waiting calls once this many wait, or this long after the first (defaults 100 calls, 1 s). */
  batch?: { maxCalls?: number; maxDelayMs?: number };
}

/** The one key of the trace-batch queue: every waiting call is written together. */
const BATCH_KEY = 'batch';

export class TraceDocs {
  /** The work queued on each trace, so one runs at a time. */
  private readonly chains = new Map<string, Promise<unknown>>();
  /** Calls recorded on the server, not yet written to their traces, by plan; and how many in all. */
  private readonly unwritten = new Map<string, ToolCallRecord[]>();
  private unwrittenCount = 0;
  private readonly maxCalls: number;
  private readonly maxDelayMs: number;
  /** When the calls waiting in memory are written (one key). */
  private readonly batches: DueQueue;
  private closed = false;

  constructor(
    private readonly hub: ExtensionHost,
    private readonly options: TraceDocsOptions,
  ) {
    this.maxCalls = options.batch?.maxCalls ?? 100;
    this.maxDelayMs = options.batch?.maxDelayMs ?? 1000;
    if (!(this.maxCalls >= 1 && this.maxDelayMs >= 0)) {
      throw new CairnError('invalid_argument', 'traceBatch needs maxCalls >= 1 and maxDelayMs >= 0.', {
        field: 'traceBatch',
      });
    }
    this.batches = hub.dueTimes.queue('learning-traces', () => this.writeAll());
  }

  /** Keeps a call for the plan's trace, written with the next batch; at once when closing. */
  record(planId: string, call: ToolCallRecord): void {
    const calls = this.unwritten.get(planId);
    if (calls) calls.push(call);
    else this.unwritten.set(planId, [call]);
    this.unwrittenCount++;
    if (this.closed || this.unwrittenCount >= this.maxCalls) void this.writeAll();
    else this.batches.setEarlier(BATCH_KEY, this.hub.dueTimes.now() + this.maxDelayMs);
  }

  /** Whether calls of the plan wait to be written to its trace (its trace document may not exist yet). */
  hasUnwritten(planId: string): boolean {
    return this.unwritten.has(planId);
  }

  /**
   * Writes every call waiting in memory to its plan's trace, durably; each trace is unloaded after. Calls of a
   * trace that cannot be opened are dropped (logged): a store that refuses them would refuse the next batch too.
   */
  async writeAll(): Promise<void> {
    this.batches.set(BATCH_KEY, null);
    await Promise.all(
      [...this.unwritten.keys()].map((planId) =>
        this.use(planId, async () => {}).catch((error: unknown) => {
          const dropped = this.takeUnwritten(planId)?.length ?? 0;
          this.options.logger.error('tool calls could not be traced', {
            plan: planId,
            dropped,
            error: describeError(error),
          });
        }),
      ),
    );
  }

  /**
   * Runs `fn` on the plan's trace document, after earlier work on it and once the calls waiting for it are written
   * (durably). The document is unloaded afterwards unless someone else uses it.
   */
  use<T>(planId: string, fn: (trace: PlanHandle) => Promise<T>): Promise<T> {
    const previous = this.chains.get(planId) ?? Promise.resolve();
    const next = previous
      .catch(() => undefined)
      .then(async () => {
        const trace = await this.hub.openPlan(traceDocId(planId));
        try {
          const calls = this.takeUnwritten(planId);
          if (calls) {
            const now = this.options.now();
            for (const call of calls) recordCall(trace.doc, call, { bound: this.options.bound, now });
            await trace.flush();
          }
          return await fn(trace);
        } finally {
          trace.release({ unload: true });
        }
      });
    const settled = next.catch(() => undefined);
    this.chains.set(planId, settled);
    void settled.then(() => {
      if (this.chains.get(planId) === settled) this.chains.delete(planId);
    });
    return next;
  }

  /** Writes what waits, and from now on writes each recorded call at once. */
  async close(): Promise<void> {
    this.closed = true;
    await this.writeAll();
  }

  /** Settles once the work queued on every trace has. */
  settled(): Promise<unknown> {
    return Promise.allSettled([...this.chains.values()]);
  }

  private takeUnwritten(planId: string): ToolCallRecord[] | undefined {
    const calls = this.unwritten.get(planId);
    if (!calls) return undefined;
    this.unwritten.delete(planId);
    this.unwrittenCount -= calls.length;
    return calls;
  }
}
