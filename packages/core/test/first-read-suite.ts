// The first-read tests of the persistence that keeps a snapshot (fs, IndexedDB in Node and in Chromium): a stored
// plan answers reads from its snapshot while the document loads, only when the snapshot reflects exactly what is
// stored, and takes writes only once loaded.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { CairnError } from '../src/errors.js';
import type { StoredPlan } from '../src/first-read.js';
import { type CreatePlanOptions, createPlan, type Plan } from '../src/plan.js';
import { renderPlan } from '../src/render/render-plan.js';
import type { DocPersistence } from '../src/storage.js';
import { seeded } from '../src/testing/seeded.js';

/** One isolated store (a fresh temp dir, a fresh database prefix), made for each test. */
export interface FirstReadHarness {
  /** Opens `name` as a plain persistence (the adapter's open). */
  open(name: string, doc: Y.Doc): DocPersistence;
  /** Opens `name` for a fast first read (the adapter's openPlan). */
  openPlan(name: string, plan?: Omit<CreatePlanOptions, 'doc'>): StoredPlan;
  /** Stores `update` after everything stored under `name` (the plan closed), as any other writer would. */
  appendRaw(name: string, update: Uint8Array): Promise<void>;
  /** Flips one bit in the middle of the snapshot stored for `name`. */
  damageSnapshot(name: string): Promise<void>;
  teardown?(): Promise<void> | void;
}

/** Registers the first-read tests for one persistence; what they open is closed after each. */
export function runFirstReadTests(
  name: string,
  setup: () => Promise<FirstReadHarness> | FirstReadHarness,
): void {
  describe(`first read: ${name}`, () => {
    let h: FirstReadHarness;
    const opened: DocPersistence[] = [];
    beforeEach(async () => {
      h = await setup();
    });
    afterEach(async () => {
      await Promise.allSettled(opened.splice(0).map((p) => p.close()));
      await h.teardown?.();
    });
    firstReadTests(() => ({
      open: (plan, doc) => {
        const p = h.open(plan, doc);
        opened.push(p);
        return p;
      },
      openPlan: (plan, options) => {
        const stored = h.openPlan(plan, options);
        opened.push(stored.persistence);
        return stored;
      },
      appendRaw: (plan, update) => h.appendRaw(plan, update),
      damageSnapshot: (plan) => h.damageSnapshot(plan),
    }));
  });
}

const NOW = 1_700_000_000_000;
const options = { actor: 'agent:suite', now: () => NOW } as const;

/** Everything a reader sees: the snapshot view must give the same answers as the loaded document. */
function reads(plan: Plan): unknown {
  return {
    json: plan.toJSON(),
    ready: plan.ready().map((t) => t.id),
    blocked: plan.blocked().map((b) => b.task.id),
    open: plan.list({ state: 'open' }).map((t) => t.id),
    rendered: renderPlan(plan, { format: 'checklist', now: NOW }),
  };
}

/** Opens, writes with `edit` through a hydrated Plan, closes (which stores the snapshot). */
async function session(h: FirstReadHarness, name: string, edit: (plan: Plan) => void): Promise<void> {
  const stored = h.openPlan(name, options);
  edit(await stored.whenHydrated);
  await stored.close();
}

function firstReadTests(harness: () => FirstReadHarness): void {
  it('first read: answers from a fresh snapshot before the document has loaded, the same as the document', async () => {
    const h = harness();
    await session(h, 'fr-fresh', (plan) => {
      const [a, b] = plan.addMany([
        { title: 'Write the draft', key: 'a' },
        { title: 'Review it', blockedBy: ['a'] },
      ]);
      plan.update(a!.id, { status: 'done' });
      plan.add({ title: 'Step', parent: b!.id });
    });
    const stored = h.openPlan('fr-fresh', options);
    let hydrated = false;
    void stored.whenHydrated.then(() => {
      hydrated = true;
    });
    const { plan, fromSnapshot } = await stored.firstRead;
    expect(fromSnapshot).toBe(true);
    expect(hydrated).toBe(false);
    const early = reads(plan);
    const real = await stored.whenHydrated;
    expect(early).toEqual(reads(real));
    // "Review it" waits on its open step, so only the step is ready.
    expect(plan.ready().map((t) => t.title)).toEqual(['Step']);
    await stored.close();
  });

  it('first read: an update stored after the snapshot makes it stale: ignored, the document answers', async () => {
    const h = harness();
    let id = '';
    await session(h, 'fr-stale', (plan) => {
      id = plan.add({ title: 'Ship it' }).id;
    });
    // Another writer changes the plan after the snapshot was stored.
    const other = new Y.Doc();
    const loaded = h.open('fr-stale', other);
    await loaded.whenLoaded;
    await loaded.close();
    const before = Y.encodeStateVector(other);
    createPlan({ doc: other, actor: 'agent:other' }).update(id, { status: 'done' });
    await h.appendRaw('fr-stale', Y.encodeStateAsUpdate(other, before));

    const stored = h.openPlan('fr-stale', options);
    const { plan, fromSnapshot } = await stored.firstRead;
    expect(fromSnapshot).toBe(false);
    expect(plan.get(id)?.status).toBe('done');
    expect(plan.ready()).toEqual([]);
    await stored.close();
  });

  it('first read: a corrupt snapshot is ignored, never served', async () => {
    const h = harness();
    await session(h, 'fr-corrupt', (plan) => {
      plan.addMany([{ title: 'One' }, { title: 'Two' }]);
    });
    await h.damageSnapshot('fr-corrupt');
    const stored = h.openPlan('fr-corrupt', options);
    const { plan, fromSnapshot } = await stored.firstRead;
    expect(fromSnapshot).toBe(false);
    expect(plan.list().map((t) => t.title)).toEqual(['One', 'Two']);
    await stored.close();
  });

  it('first read: data stored without a snapshot (by the previous version) opens and loads', async () => {
    const h = harness();
    const doc = new Y.Doc();
    createPlan({ doc, ...options }).add({ title: 'Older' });
    await h.appendRaw('fr-old', Y.encodeStateAsUpdate(doc));
    const stored = h.openPlan('fr-old', options);
    const { plan, fromSnapshot } = await stored.firstRead;
    expect(fromSnapshot).toBe(false);
    expect(plan.list().map((t) => t.title)).toEqual(['Older']);
    await stored.close();
  });

  it('first read: writes wait for the load: refused on the snapshot view, then applied on the real document', async () => {
    const h = harness();
    let id = '';
    await session(h, 'fr-write', (plan) => {
      id = plan.add({ title: 'Claim me' }).id;
    });
    const stored = h.openPlan('fr-write', options);
    const { plan, fromSnapshot } = await stored.firstRead;
    expect(fromSnapshot).toBe(true);
    let refused: unknown = null;
    try {
      plan.update(id, { status: 'done' });
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(CairnError);
    expect((refused as CairnError).code).toBe('storage');
    expect((refused as CairnError).message).toMatch(/whenHydrated/);
    expect(plan.get(id)?.status).toBe('pending');

    const real = await stored.whenHydrated;
    real.update(id, { status: 'done' });
    // The first-read Plan now reads the loaded document, and takes writes too.
    expect(plan.get(id)?.status).toBe('done');
    plan.update(id, { title: 'Claimed' });
    expect(real.get(id)?.title).toBe('Claimed');
    await stored.close();

    const again = h.openPlan('fr-write', options);
    const reopened = await again.firstRead;
    expect(reopened.fromSnapshot).toBe(true);
    expect(reopened.plan.get(id)).toMatchObject({ status: 'done', title: 'Claimed' });
    expect((await again.whenHydrated).get(id)).toMatchObject({ status: 'done', title: 'Claimed' });
    await again.close();
  });

  it('first read: after random histories the snapshot reads equal the document reads (seeded)', async () => {
    const h = harness();
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const random = seeded(seed);
      const name = `fr-seed-${seed}`;
      const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(random() * items.length)];
      for (let round = 0; round < 4; round++) {
        await session(h, name, (plan) => {
          for (let i = 0; i < 25; i++) {
            const ids = plan.list({ state: 'all' }).map((t) => t.id);
            const target = pick(ids);
            const roll = random();
            try {
              if (roll < 0.3 || !target)
                plan.add({ title: `T${seed}.${round}.${i}`, parent: random() < 0.3 ? target : undefined });
              else if (roll < 0.6)
                plan.update(target, {
                  status: pick(['pending', 'in_progress', 'done', 'cancelled'] as const),
                });
              else if (roll < 0.75) plan.update(target, { addBlockedBy: [pick(ids)!] });
              else if (roll < 0.85) plan.update(target, { title: `Renamed ${i}` });
              else if (roll < 0.93) plan.move(target, { after: pick(ids) === target ? null : pick(ids) });
              else plan.remove(target);
            } catch (error) {
              // A refused write (a cycle, a rule) changes nothing: part of a random history.
              if (!(error instanceof CairnError)) throw error;
            }
          }
        });
        const stored = h.openPlan(name, options);
        const { plan, fromSnapshot } = await stored.firstRead;
        expect(fromSnapshot).toBe(true);
        const early = reads(plan);
        expect(early, `seed ${seed}, round ${round}`).toEqual(reads(await stored.whenHydrated));
        await stored.close();
      }
    }
  });
}
