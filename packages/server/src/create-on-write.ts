// A store wrapper that creates a plan in the store only when something is written to it: opening a plan that
// does not exist (a reader's socket, a writer that never writes) leaves no file behind. Until the first write the
// plan lives only in the hub's memory; that write loads the plan in the store and appends the doc's whole state.
import type * as Y from 'yjs';
import type { PlanStore } from './store/store.js';

interface Unborn {
  snapshot: () => Uint8Array;
  doc: Y.Doc | undefined;
  /** Something was appended: the plan must reach the store before any flush resolves. */
  written: boolean;
  /** The creation under way (null before the first write, or after one failed: the next flush retries). */
  born: Promise<void> | null;
}

/** `exists`: whether the store already holds the plan, asked before each load (it must not create anything). */
export function createOnFirstWrite(store: PlanStore, exists: (planId: string) => boolean): PlanStore {
  const unborn = new Map<string, Unborn>();
  const listeners = new Set<(error: Error, planId: string, what?: 'append') => void>();

  function birth(planId: string, entry: Unborn): Promise<void> {
    entry.born ??= store.load(planId, entry.snapshot, entry.doc).then(
      () => {
        unborn.delete(planId);
        try {
          // Every edit so far, in one update: the doc's whole state.
          store.append(planId, entry.snapshot());
        } catch (error) {
          // The store repairs a failed append by a rewrite at the next flush, which fails until it can.
          for (const listener of listeners) listener(error as Error, planId, 'append');
        }
      },
      (error: unknown) => {
        entry.born = null;
        throw error;
      },
    );
    return entry.born;
  }

  /** False when the plan was never written (nothing to do in the store); else once it is in the store. */
  async function stored(planId: string): Promise<boolean> {
    const entry = unborn.get(planId);
    if (!entry) return true;
    if (!entry.written) return false;
    await birth(planId, entry);
    return true;
  }

  const wrapped: PlanStore = {
    async load(planId, snapshot, doc) {
      if (exists(planId)) return store.load(planId, snapshot, doc);
      unborn.set(planId, { snapshot, doc, written: false, born: null });
      return [];
    },
    append(planId, update) {
      const entry = unborn.get(planId);
      if (!entry) {
        store.append(planId, update);
        return;
      }
      entry.written = true;
      // A failure is reported by flush, which every acknowledgement waits for.
      birth(planId, entry).catch(() => undefined);
    },
    async flush(planId) {
      if (await stored(planId)) await store.flush(planId);
    },
    async compact(planId) {
      if (await stored(planId)) await store.compact(planId);
    },
    async release(planId) {
      try {
        if (await stored(planId)) await store.release(planId);
      } finally {
        unborn.delete(planId);
      }
    },
    close: () => store.close(),
    metrics: () => store.metrics(),
  };
  if (store.validatePlanId) wrapped.validatePlanId = (planId) => store.validatePlanId?.(planId);
  if (store.firstRead)
    wrapped.firstRead = (planId) => (unborn.has(planId) ? null : (store.firstRead?.(planId) ?? null));
  if (store.verifyLoaded)
    wrapped.verifyLoaded = (planId, doc) => {
      if (!unborn.has(planId)) store.verifyLoaded?.(planId, doc);
    };
  if (store.damagedLogs) wrapped.damagedLogs = () => store.damagedLogs?.() ?? [];
  wrapped.onError = (listener) => {
    listeners.add(listener);
    const unsubscribe = store.onError?.(listener);
    return () => {
      listeners.delete(listener);
      unsubscribe?.();
    };
  };
  return wrapped;
}
