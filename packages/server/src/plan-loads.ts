// Tells server-side services (the wake index, auto-close) when a plan's doc has been loaded, so they can watch
// it while it is in memory. The hub has no load event, but every load goes through its store: this wraps it.
import type * as Y from 'yjs';
import type { SyncHub } from './hub/hub.js';
import { describeError, type Logger, silentLogger } from './log.js';
import type { PlanStore } from './store/store.js';

export type PlanLoadListener = (planId: string, doc: Y.Doc) => void;

export class PlanLoads {
  private hub: SyncHub | null = null;
  private readonly listeners = new Set<PlanLoadListener>();
  /** Docs already announced: a doc is announced once, however it was reached. */
  private readonly announced = new WeakSet<Y.Doc>();

  constructor(private readonly logger: Logger = silentLogger) {}

  /** The store to give the hub: the same store, reporting each load. */
  wrap(store: PlanStore): PlanStore {
    const wrapped: PlanStore = {
      load: async (planId, snapshot) => {
        const records = await store.load(planId, snapshot);
        // The room applies the records and turns ready in the microtasks after this returns; look after them.
        setImmediate(() => this.announce(planId));
        return records;
      },
      append: (planId, update) => store.append(planId, update),
      flush: (planId) => store.flush(planId),
      compact: (planId) => store.compact(planId),
      release: (planId) => store.release(planId),
      close: () => store.close(),
      metrics: () => store.metrics(),
    };
    if (store.validatePlanId) wrapped.validatePlanId = (planId) => store.validatePlanId?.(planId);
    if (store.damagedLogs) wrapped.damagedLogs = () => store.damagedLogs?.() ?? [];
    if (store.onError) wrapped.onError = (listener) => store.onError?.(listener) ?? (() => {});
    return wrapped;
  }

  /** The hub whose rooms the loaded docs are read from. */
  attach(hub: SyncHub): void {
    this.hub = hub;
  }

  /** Calls `listener` with each plan's doc once it is loaded (again after each unload). Returns an unsubscribe. */
  onLoad(listener: PlanLoadListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private announce(planId: string): void {
    const room = this.hub?.loadedRoom(planId);
    if (!room || this.announced.has(room.doc)) return;
    this.announced.add(room.doc);
    for (const listener of this.listeners) {
      try {
        listener(planId, room.doc);
      } catch (error) {
        this.logger.error('a plan load listener failed', { plan: planId, error: describeError(error) });
      }
    }
  }
}
