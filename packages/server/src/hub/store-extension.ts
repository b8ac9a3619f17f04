// The PlanStore as a hub extension: loads a plan's updates, appends every change, flushes for acknowledgements,
// releases an unloaded plan and closes the store last; its metrics and latencies are counted here.
import { describeError, type Logger } from '../log.js';
import type { PlanStore } from '../store/store.js';
import type { Extension, LoadingRoom, PlanRoom, RoomChange } from './extension.js';
import { type HubMetrics, registerStoreMetrics } from './metrics.js';

export class StoreExtension implements Extension {
  readonly name = 'store';
  readonly priority = 1000;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly planStore: PlanStore,
    private readonly metrics: HubMetrics,
    private readonly logger: Logger,
  ) {
    registerStoreMetrics(metrics.registry, () => planStore.metrics());
    this.unsubscribe =
      planStore.onError?.((error, planId, what) => {
        // A failed write of appended updates: the doc keeps them and the store repairs itself by a rewrite;
        // until then acknowledgements fail.
        if (what === 'append') {
          metrics.errorsTotal.inc({ kind: 'store_append' });
          logger.error('could not store an update', { plan: planId, error: describeError(error) });
          return;
        }
        metrics.errorsTotal.inc({ kind: 'store_background' });
        logger.error('store error', { plan: planId, error: describeError(error) });
      }) ?? (() => {});
  }

  async load(room: LoadingRoom): Promise<void> {
    room.apply(
      await this.timed('load', () => this.planStore.load(room.planId, () => room.snapshot(), room.doc)),
    );
  }

  change({ room, update, origin }: RoomChange): void {
    // Stored once, where it entered: another instance of a cluster committed it before relaying it here.
    if (origin.source === 'remote' && origin.stored) return;
    try {
      this.planStore.append(room.planId, update);
    } catch (error) {
      // As a failed write reported through onError (a store that writes in append throws here).
      this.metrics.errorsTotal.inc({ kind: 'store_append' });
      this.logger.error('could not store an update', { plan: room.planId, error: describeError(error) });
    }
  }

  store({ planId }: { planId: string }): Promise<void> {
    return this.timed('flush', () => this.planStore.flush(planId));
  }

  unload({ planId }: PlanRoom): Promise<void> {
    return this.timed('release', () => this.planStore.release(planId));
  }

  async destroy(): Promise<void> {
    try {
      await this.planStore.close();
    } finally {
      this.unsubscribe();
    }
  }

  private async timed<T>(op: 'load' | 'flush' | 'release', run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await run();
    } catch (error) {
      this.metrics.errorsTotal.inc({ kind: `store_${op}` });
      throw error;
    } finally {
      this.metrics.storeSeconds.observe((performance.now() - started) / 1000, { op });
    }
  }
}
