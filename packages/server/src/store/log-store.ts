// What every PlanStore over the one persistence layer shares: one StoredLog per loaded plan, the counters /metrics
// shows and the listeners of its errors. A store adds how a plan is loaded (its adapter and options) and what it
// keeps beside.
import { CairnError } from '@cairn/core';
import type { StoredLog, StoredLogOptions } from '@cairn/core/protocol';
import type { PlanStore, StoreMetrics } from './store.js';

type ErrorListener = (error: Error, planId: string, what?: 'append') => void;

export abstract class LogStore
  implements Pick<PlanStore, 'append' | 'flush' | 'compact' | 'release' | 'onError'>
{
  protected readonly plans = new Map<string, StoredLog>();
  protected readonly counters = { appends: 0, appendedBytes: 0, compactions: 0, errors: 0, tornTails: 0 };
  private readonly listeners = new Set<ErrorListener>();

  onError(listener: ErrorListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  append(planId: string, update: Uint8Array): void {
    this.get(planId).append(update);
    this.counters.appends++;
    this.counters.appendedBytes += update.byteLength;
  }

  async flush(planId: string): Promise<void> {
    await this.get(planId).flush();
  }

  async compact(planId: string): Promise<void> {
    await this.get(planId).compact();
  }

  /** Flushes, writes the plan's snapshot, and lets go of it. */
  async release(planId: string): Promise<void> {
    const log = this.plans.get(planId);
    if (!log) return;
    this.plans.delete(planId);
    try {
      await log.close();
    } finally {
      this.counters.compactions += log.stats().compactions;
    }
  }

  /** Releases every plan; rejects with the first failure once all were tried. */
  protected async releaseAll(): Promise<void> {
    const results = await Promise.allSettled([...this.plans.keys()].map((id) => this.release(id)));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** The counters, with `bytes` held by loaded plans as `bytesOf` measures them. */
  protected metricsWith(bytesOf: (planId: string, log: StoredLog) => number, damagedLogs = 0): StoreMetrics {
    let bytes = 0;
    let compactions = this.counters.compactions;
    for (const [planId, log] of this.plans) {
      bytes += bytesOf(planId, log);
      compactions += log.stats().compactions;
    }
    return { plans: this.plans.size, bytes, damagedLogs, ...this.counters, compactions };
  }

  /** The `onError` of a plan's StoredLog: counted, and told to the listeners (a failed write as `append`). */
  protected logErrors(planId: string): NonNullable<StoredLogOptions['onError']> {
    return (error, what) => {
      this.counters.errors++;
      this.emit(error, planId, what === 'append' ? 'append' : undefined);
    };
  }

  /** Tells every listener; one listener's failure does not hide the error from the others. */
  protected emit(error: Error, planId: string, what?: 'append'): void {
    for (const listener of this.listeners) {
      try {
        listener(error, planId, what);
      } catch {
        // Told to the others all the same.
      }
    }
  }

  protected get(planId: string): StoredLog {
    const log = this.plans.get(planId);
    if (!log) throw new CairnError('storage', `Plan "${planId}" is not loaded in this store.`, { planId });
    return log;
  }
}
