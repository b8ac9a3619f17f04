// A PlanStore in memory: for tests and for a host that persists elsewhere. Survives `release` (a plan can be
// loaded again) but not the process. The memory byte adapter under the one persistence layer (StoredLog).
import { CairnError } from '@cairn/core';
import { memoryByteAdapter, StoredLog } from '@cairn/core/protocol';
import * as Y from 'yjs';
import { LogStore } from './log-store.js';
import type { PlanStore, StoreMetrics } from './store.js';

export interface MemoryStoreOptions {
  /** Awaited at the start of every load (tests hold a load open with it). */
  beforeLoad?: (planId: string) => Promise<void> | void;
  /** Merge a plan's updates into one once it holds this many. Default 500. */
  compactAfter?: number;
}

export class MemoryStore extends LogStore implements PlanStore {
  private readonly adapter = memoryByteAdapter();
  constructor(private readonly options: MemoryStoreOptions = {}) {
    super();
  }

  async load(planId: string, snapshot: () => Uint8Array): Promise<Uint8Array[]> {
    await this.options.beforeLoad?.(planId);
    if (this.plans.has(planId)) {
      throw new CairnError('locked', `Plan "${planId}" is already loaded from this store.`, { planId });
    }
    const log = await StoredLog.open(this.adapter, planId, {
      state: snapshot,
      // Counted in records only: memory has no cold load to keep short, only a history to keep from growing.
      compaction: { records: (this.options.compactAfter ?? 500) - 1, minBytes: Number.POSITIVE_INFINITY },
      onError: this.logErrors(planId),
    });
    this.plans.set(planId, log);
    return log.takeLoaded();
  }

  async close(): Promise<void> {
    await this.releaseAll();
  }

  /** The updates stored for a plan merged into one (for tests), or null if it has none. */
  stored(planId: string): Uint8Array | null {
    const updates = this.adapter.records(planId).map((record) => record.bytes);
    return updates.length > 0 ? Y.mergeUpdates(updates) : null;
  }

  metrics(): StoreMetrics {
    return this.metricsWith((_planId, log) => log.stats().bytes);
  }
}
