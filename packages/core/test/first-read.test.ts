// The first-read Plan (first-read.ts) before its document has loaded: every read method answers from the snapshot,
// as the loaded Plan answers it, and every other method is refused. The table below names each public method of
// Plan, so a new one does not type-check until it is placed on one side.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { CairnError } from '../src/errors.js';
import { storedPlan } from '../src/first-read.js';
import { createPlan, type Plan } from '../src/plan.js';
import { RENDER_FORMATS, renderPlan } from '../src/render/render-plan.js';
import { decodeSnapshot, encodeSnapshot } from '../src/snapshot.js';
import type { DocPersistence } from '../src/storage.js';

type PlanMethod = {
  [K in keyof Plan]: Plan[K] extends (...args: never[]) => unknown ? K : never;
}[keyof Plan];

const NOW = 1_700_000_000_000;
const options = { actor: 'agent:reader', now: () => NOW } as const;

/** The stored plan: a task with a step under a step, and a task that waits on it. */
function storedContent(): { doc: Y.Doc; ids: { draft: string; step: string; deep: string; review: string } } {
  const plan = createPlan({ actor: 'agent:writer', now: () => NOW });
  const [draft, review] = plan.addMany([
    { title: 'Write the draft', key: 'draft' },
    { title: 'Review it', blockedBy: ['draft'] },
  ]);
  const step = plan.add({ title: 'Outline', parent: draft!.id });
  const deep = plan.add({ title: 'Pick the sections', parent: step.id });
  plan.update(review!.id, { assignee: 'agent:reader' });
  const ids = { draft: draft!.id, step: step.id, deep: deep.id, review: review!.id };
  plan.destroy();
  return { doc: plan.doc, ids };
}

type Ids = ReturnType<typeof storedContent>['ids'];

/** How each read is asked; `refused` for what waits for the load (writes, claims, undo, listeners). */
const METHODS: Record<PlanMethod, ((plan: Plan, ids: Ids) => unknown) | 'refused'> = {
  has: (plan, ids) => [plan.has(ids.step), plan.has('nope')],
  get: (plan, ids) => plan.get(ids.deep),
  require: (plan, ids) => plan.require(ids.review),
  byNum: (plan) => plan.byNum(2),
  list: (plan) => [plan.list(), plan.list({ state: 'open', assignee: 'agent:reader' })],
  children: (plan, ids) => [plan.children(null), plan.children(ids.draft)],
  descendants: (plan, ids) => plan.descendants(ids.draft),
  effectiveParent: (plan, ids) => plan.effectiveParent(plan.require(ids.deep)),
  ready: (plan) => [plan.ready(), plan.ready({ actor: 'agent:other' })],
  isReady: (plan, ids) => [plan.isReady(ids.deep), plan.isReady(ids.review)],
  blocked: (plan) => plan.blocked(),
  blockedTask: (plan, ids) => plan.blockedTask(ids.review),
  blockedReasons: (plan) => [...plan.blockedReasons()],
  dependents: (plan, ids) => plan.dependents(ids.draft),
  malformed: (plan) => plan.malformed(),
  cycles: (plan) => plan.cycles(),
  toJSON: (plan) => plan.toJSON(),
  canUndo: (plan) => plan.canUndo(),
  canRedo: (plan) => plan.canRedo(),
  withActor: 'refused',
  destroy: 'refused',
  add: 'refused',
  addMany: 'refused',
  replace: 'refused',
  update: 'refused',
  updateMany: 'refused',
  remove: 'refused',
  move: 'refused',
  batch: 'refused',
  atomic: 'refused',
  useArbiter: 'refused',
  claim: 'refused',
  claimNext: 'refused',
  release: 'refused',
  handOff: 'refused',
  undo: 'refused',
  redo: 'refused',
  onChange: 'refused',
};

const READS = Object.entries(METHODS).flatMap(([name, ask]) => (ask === 'refused' ? [] : [{ name, ask }]));
const REFUSED = Object.entries(METHODS).flatMap(([name, ask]) => (ask === 'refused' ? [name] : []));

/**
 * A stored plan opened over a fresh snapshot of `content`, with a load the test lets happen (`load`): a
 * persistence that holds the document back until then, as a slow disk or a long history would.
 */
function openBeforeLoad(content: Y.Doc) {
  let load!: () => void;
  const loaded = new Promise<void>((resolve) => {
    load = resolve;
  });
  const doc = new Y.Doc();
  const persistence: DocPersistence = {
    whenLoaded: loaded.then(() => Y.applyUpdate(doc, Y.encodeStateAsUpdate(content))),
    flush: async () => undefined,
    close: async () => undefined,
    onError: () => () => undefined,
  };
  const bytes = encodeSnapshot(content, 'all');
  const stored = storedPlan(persistence, doc, Promise.resolve(bytes && decodeSnapshot(bytes)), options);
  return { stored, load };
}

describe('a plan read from its snapshot, before the document has loaded', () => {
  it('answers every read method the same as the loaded plan', async () => {
    const { doc: content, ids } = storedContent();
    const { stored, load } = openBeforeLoad(content);
    const { plan, fromSnapshot } = await stored.firstRead;
    expect(fromSnapshot).toBe(true);
    const early = new Map<string, unknown>();
    for (const { name, ask } of READS) {
      try {
        early.set(name, ask(plan, ids));
      } catch (error) {
        early.set(name, error);
      }
    }
    // Every format: the native one shows why a task is blocked, which it asks the plan for all at once.
    const renders = (p: Plan) => RENDER_FORMATS.map((format) => renderPlan(p, { format, now: NOW }));
    let rendered: unknown;
    try {
      rendered = renders(plan);
    } catch (error) {
      rendered = error;
    }
    load();
    const real = await stored.whenHydrated;
    for (const { name, ask } of READS) expect(early.get(name), name).toEqual(ask(real, ids));
    expect(rendered).toEqual(renders(real));
    // What the plan holds is in the answers: the walk reaches the deeper step, the review waits on the draft.
    expect(early.get('descendants')).toEqual([ids.step, ids.deep]);
    expect(early.get('blockedReasons')).toEqual(
      expect.arrayContaining([[ids.review, expect.objectContaining({ blockedBy: [ids.draft] })]]),
    );
    await stored.close();
  });

  it('refuses every other method, as storage, changing nothing', async () => {
    const { doc: content, ids } = storedContent();
    const { stored, load } = openBeforeLoad(content);
    const { plan } = await stored.firstRead;
    const before = plan.toJSON();
    for (const name of REFUSED) {
      const method = (plan as unknown as Record<string, () => unknown>)[name]!;
      let refused: unknown = null;
      try {
        method();
      } catch (error) {
        refused = error;
      }
      expect(refused, name).toBeInstanceOf(CairnError);
      expect((refused as CairnError).code, name).toBe('storage');
    }
    expect(plan.toJSON()).toEqual(before);
    load();
    await stored.whenHydrated;
    expect(plan.require(ids.review).status).toBe('pending');
    await stored.close();
  });
});
