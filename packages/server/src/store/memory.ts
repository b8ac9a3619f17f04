// A PlanStore in memory: for tests and for a host that persists elsewhere. Survives `release` (a plan can be
// loaded again) but not the process.
import { CairnError } from '@cairn/core';
import * as Y from 'yjs';
import type { PlanStore, StoreMetrics } from './store.js';

export interface MemoryStoreOptions {
  /** Awaited at the start of every load (tests hold a load open with it). */
  beforeLoad?: (planId: string) => Promise<void> | void;
  /** Merge a plan's updates into one once it holds this many. Default 500. */
  compactAfter?: number;
}

export class MemoryStore implements PlanStore {
  private readonly plans = new Map<string, Uint8Array[]>();
  private readonly loaded = new Map<string, () => Uint8Array>();
  private readonly counters = { appends: 0, appendedBytes: 0, compactions: 0, errors: 0 };

  constructor(private readonly options: MemoryStoreOptions = {}) {}

  async load(planId: string, snapshot: () => Uint8Array): Promise<Uint8Array[]> {
    await this.options.beforeLoad?.(planId);
    if (this.loaded.has(planId)) {
      throw new CairnError('locked', `Plan "${planId}" is already loaded from this store.`, { planId });
    }
    this.loaded.set(planId, snapshot);
    return [...(this.plans.get(planId) ?? [])];
  }

  append(planId: string, update: Uint8Array): void {
    if (!this.loaded.has(planId)) throw notLoaded(planId);
    const updates = this.plans.get(planId) ?? [];
    updates.push(update);
    this.plans.set(planId, updates);
    this.counters.appends++;
    this.counters.appendedBytes += update.byteLength;
    if (updates.length >= (this.options.compactAfter ?? 500)) void this.compact(planId);
  }

  async flush(planId: string): Promise<void> {
    if (!this.loaded.has(planId)) throw notLoaded(planId);
  }

  async compact(planId: string): Promise<void> {
    const snapshot = this.loaded.get(planId);
    if (!snapshot) throw notLoaded(planId);
    this.plans.set(planId, [snapshot()]);
    this.counters.compactions++;
  }

  async release(planId: string): Promise<void> {
    this.loaded.delete(planId);
  }

  async close(): Promise<void> {
    this.loaded.clear();
  }

  /** The updates stored for a plan merged into one (for tests), or null if it has none. */
  stored(planId: string): Uint8Array | null {
    const updates = this.plans.get(planId);
    return updates && updates.length > 0 ? Y.mergeUpdates(updates) : null;
  }

  metrics(): StoreMetrics {
    let bytes = 0;
    for (const id of this.loaded.keys()) for (const u of this.plans.get(id) ?? []) bytes += u.byteLength;
    return { plans: this.loaded.size, bytes, damagedLogs: 0, tornTails: 0, ...this.counters };
  }
}

function notLoaded(planId: string): CairnError {
  return new CairnError('storage', `Plan "${planId}" is not loaded in this store.`, { planId });
}
