// A stored plan opened for a fast first read: reads answer from the adapter's snapshot while the Y.Doc loads its
// whole history, then from the loaded document. Writes wait for the load: before it they are refused, unchanged.
import type * as Y from 'yjs';
import { CairnError } from './errors.js';
import { type CreatePlanOptions, createPlan, type Plan } from './plan.js';
import type { DecodedSnapshot } from './snapshot.js';
import type { DocPersistence } from './storage.js';

/** A plan bound to its storage, readable before it has loaded. */
export interface StoredPlan<P extends DocPersistence = DocPersistence> {
  readonly persistence: P;
  /** The document the stored state loads into (the one to sync and write). */
  readonly doc: Y.Doc;
  /**
   * Resolves with a Plan to read from as soon as there is one: over a valid snapshot (`fromSnapshot: true`) when
   * the store holds one that reflects exactly what is stored, otherwise once the document has loaded. The Plan
   * follows the load: its reads answer from the loaded document from then on. Until then it is read-only: a
   * write (or onChange, undo, claims) throws CairnError('storage') and changes nothing; await `whenHydrated`.
   */
  readonly firstRead: Promise<{ plan: Plan; fromSnapshot: boolean }>;
  /** Resolves with the Plan over the loaded document, which takes writes; rejects as `whenLoaded` does. */
  readonly whenHydrated: Promise<Plan>;
  /** Closes the persistence and both Plans. */
  close(): Promise<void>;
}

/**
 * Plan members that only read: what the snapshot view serves before the document has loaded. first-read.test.ts
 * places every public method of Plan on one side or the other, so a new read cannot be left out unseen.
 */
const READS = new Set<PropertyKey>([
  'doc',
  'actor',
  'has',
  'get',
  'require',
  'byNum',
  'list',
  'children',
  'descendants',
  'effectiveParent',
  'ready',
  'isReady',
  'blocked',
  'blockedTask',
  'blockedReasons',
  'dependents',
  'malformed',
  'cycles',
  'toJSON',
  'canUndo',
  'canRedo',
]);

/**
 * Binds a persistence to a StoredPlan. `snapshot` resolves with the adapter's snapshot, already checked to reflect
 * exactly what is stored (or null: none, stale or corrupt); the adapter then loads `doc` and resolves `whenLoaded`.
 */
export function storedPlan<P extends DocPersistence>(
  persistence: P,
  doc: Y.Doc,
  snapshot: Promise<DecodedSnapshot | null>,
  options: Omit<CreatePlanOptions, 'doc'> = {},
): StoredPlan<P> {
  let hydrated: Plan | null = null;
  let snapshotPlan: Plan | null = null;
  const whenHydrated = persistence.whenLoaded.then(() => {
    hydrated = createPlan({ ...options, doc });
    snapshotPlan?.destroy();
    snapshotPlan?.doc.destroy();
    snapshotPlan = null;
    return hydrated;
  });
  whenHydrated.catch(() => undefined); // reported through firstRead / whenHydrated to whoever awaits them
  const firstRead = snapshot.then(
    (decoded) => {
      const fromDocument = () => whenHydrated.then((plan) => ({ plan, fromSnapshot: false }));
      if (!decoded || hydrated) return fromDocument();
      let early: Y.Doc;
      try {
        early = decoded.doc();
      } catch {
        return fromDocument(); // a well-formed checksum over content we cannot rebuild: ignored, never served
      }
      snapshotPlan = createPlan({ ...options, doc: early });
      return { plan: followingView(snapshotPlan, () => hydrated), fromSnapshot: true };
    },
    () => whenHydrated.then((plan) => ({ plan, fromSnapshot: false })),
  );
  // A caller that awaits only whenHydrated (say, to catch a `locked` refusal) must not crash the process on this
  // one: it rejects with the same error, for whoever awaits it.
  firstRead.catch(() => undefined);
  return {
    persistence,
    doc,
    firstRead,
    whenHydrated,
    async close() {
      await persistence.close();
      (hydrated as Plan | null)?.destroy();
      snapshotPlan?.destroy();
      snapshotPlan?.doc.destroy();
    },
  };
}

/** A Plan that reads from `early` until `loaded()` returns the real one, then is that one in every respect. */
function followingView(early: Plan, loaded: () => Plan | null): Plan {
  return new Proxy(early, {
    get(target, key) {
      const real = loaded();
      const source = real ?? target;
      if (
        !real &&
        !READS.has(key) &&
        typeof (target as unknown as Record<PropertyKey, unknown>)[key] === 'function'
      ) {
        return () => {
          throw new CairnError(
            'storage',
            `The plan is still loading its stored history: until it has, this Plan answers reads only (from the snapshot). ` +
              `Await whenHydrated for the Plan that takes writes; nothing was changed.`,
            { loading: true, method: String(key) },
          );
        };
      }
      const value = Reflect.get(source, key, source);
      return typeof value === 'function' ? value.bind(source) : value;
    },
    set() {
      return false;
    },
  });
}
