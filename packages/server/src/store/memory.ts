// A PlanStore in memory: for tests and for a host that persists elsewhere. Survives `release` (a plan can be
// loaded again) but not the process. The memory byte adapter under the one persistence layer (StoredLog).
import { CairnError, memoryByteAdapter, StoredLog } from '@cairn/core';
import * as Y from 'yjs';
import type { PlanStore, StoreMetrics } from './store.js';

export interface MemoryStoreOptions {
  /** Awaited at the start of every load (tests hold a load open with it). */
  beforeLoad?: (planId: string) => Promise<void> | void;
  /** Merge a plan's updates into one once it holds this many. Default 500. */
  compactAfter?: number;
}

export class MemoryStore implements PlanStore {
  private readonly adapter = memoryByteAdapter();
  private readonly loaded = new Map<string, StoredLog>();
  private readonly counters = { appends: 0, appendedBytes: 0, compactions: 0, errors: 0 };

  constructor(private readonly options: MemoryStoreOptions = {}) {}

  async load(planId: string, snapshot: () => Uint8Array): Promise<Uint8Array[]> {
    await this.options.beforeLoad?.(planId);
    if (this.loaded.has(planId)) {
      throw new CairnError('locked', `Plan "${planId}" is already loaded from this store.`, { planId });
    }
    const log = await StoredLog.open(this.adapter, planId, {
      state: snapshot,
      // Counted in records only: memory has no cold load to keep short, only a history to keep from growing.
      compaction: { records: (this.options.compactAfter ?? 500) - 1, minBytes: Number.POSITIVE_INFINITY },
      onError: () => {
        this.counters.errors++;
      },
    });
    this.loaded.set(planId, log);
    return log.takeLoaded();
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

  async release(planId: string): Promise<void> {
    const log = this.loaded.get(planId);
    if (!log) return;
    this.loaded.delete(planId);
    try {
      await log.close();
    } finally {
      this.counters.compactions += log.stats().compactions;
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.loaded.keys()].map((id) => this.release(id)));
  }

  /** The updates stored for a plan merged into one (for tests), or null if it has none. */
  stored(planId: string): Uint8Array | null {
    const updates = this.adapter.records(planId).map((record) => record.bytes);
    return updates.length > 0 ? Y.mergeUpdates(updates) : null;
  }

  metrics(): StoreMetrics {
    let bytes = 0;
    let compactions = this.counters.compactions;
    for (const log of this.loaded.values()) {
      bytes += log.stats().bytes;
      compactions += log.stats().compactions;
    }
    return { plans: this.loaded.size, bytes, damagedLogs: 0, tornTails: 0, ...this.counters, compactions };
  }

  private get(planId: string): StoredLog {
    const log = this.loaded.get(planId);
    if (!log) throw new CairnError('storage', `Plan "${planId}" is not loaded in this store.`, { planId });
    return log;
  }
}
