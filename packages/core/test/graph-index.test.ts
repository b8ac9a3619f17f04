// The incrementally maintained views (tree order, blocked set, cycles) must equal the same views computed from
// scratch, after every edit and every merge. Replicas edit concurrently and exchange updates at random, so
// merges close and split cycles that no single replica would have allowed.
import { describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import { classifyBlocked, findCycles } from '../src/graph.js';
import { CairnError, createPlan, type Plan } from '../src/index.js';
import { PlanIndex } from '../src/plan-index.js';
import { seeded } from '../src/testing/seeded.js';
import { type EditWeights, randomEdit } from './random-edits.js';

const SEEDS = Number(process.env['CAIRN_GRAPH_INDEX_SEEDS'] ?? 120);

/**
 * The same views from scratch: the tree order of a fresh index, and the blocked set and cycles from the
 * one-pass functions (graph.ts), which share none of the incremental code.
 */
function fromScratch(plan: Plan) {
  const index = new PlanIndex({ ids: () => plan.doc.getMap('tasks').keys(), get: (id) => plan.get(id) });
  const tasks = index.ordered();
  const cycles = findCycles(tasks);
  const cycleOf = new Map<string, string[]>();
  for (const cycle of cycles) for (const id of cycle) cycleOf.set(id, cycle);
  const blocked = classifyBlocked(tasks, cycleOf, (id) => index.effectiveParent(id));
  return {
    order: tasks,
    blocked: [...blocked.values()].sort((a, b) => (a.id < b.id ? -1 : 1)),
    cycles,
  };
}

function live(plan: Plan) {
  return {
    order: plan.list(),
    blocked: plan
      .blocked()
      .map(({ task: _task, ...info }) => info)
      .sort((a, b) => (a.id < b.id ? -1 : 1)),
    cycles: plan.cycles(),
  };
}

/** Edits that make and break cycles and steps often: status, dependency and parent changes. */
const EDITS: EditWeights = { add: 0.2, status: 0.25, block: 0.3, unblock: 0.09, move: 0.08, remove: 0.08 };

/** Runs one seed; returns how many checks saw a cycle, and how many a task waiting on its open steps. */
function runSeed(seed: number): { withCycles: number; withOpenSteps: number } {
  let withCycles = 0;
  let withOpenSteps = 0;
  const random = seeded(seed);
  const plans = [0, 1, 2].map((i) =>
    createPlan({ actor: `agent:r${i}`, doc: new Y.Doc(), random: seeded(seed * 7 + i) }),
  );
  // A shared start, so concurrent edges among the same tasks can close cycles when they merge.
  plans[0]!.addMany(Array.from({ length: 8 }, (_, i) => ({ title: `t${i}` })));
  for (const plan of plans.slice(1)) Y.applyUpdate(plan.doc, Y.encodeStateAsUpdate(plans[0]!.doc));
  // Every replica's views are read after each step, so each step's changes are applied incrementally.
  const check = () => {
    for (const plan of plans) {
      const views = live(plan);
      expect(views).toEqual(fromScratch(plan));
      if (views.cycles.length > 0) withCycles++;
      if (views.blocked.some((b) => b.reason === 'waiting_on_steps')) withOpenSteps++;
    }
  };
  for (let step = 0; step < 80; step++) {
    const plan = plans[Math.floor(random() * plans.length)]!;
    try {
      randomEdit(plan, random, EDITS);
    } catch (error) {
      if (!(error instanceof CairnError)) throw error;
    }
    if (random() < 0.2) {
      const [a, b] = [pick2(plans, random), pick2(plans, random)];
      if (a !== b) {
        Y.applyUpdate(b.doc, Y.encodeStateAsUpdate(a.doc, Y.encodeStateVector(b.doc)));
        Y.applyUpdate(a.doc, Y.encodeStateAsUpdate(b.doc, Y.encodeStateVector(a.doc)));
      }
    }
    check();
  }
  return { withCycles, withOpenSteps };
}

function pick2<T>(items: readonly T[], random: () => number): T {
  return items[Math.floor(random() * items.length)]!;
}

describe('incremental views', () => {
  it(`${SEEDS} seeds of concurrent edits and merges: order, blocked set and cycles equal a fresh computation`, () => {
    let withCycles = 0;
    let withOpenSteps = 0;
    for (let seed = 1; seed <= SEEDS; seed++) {
      try {
        const seen = runSeed(seed);
        withCycles += seen.withCycles;
        withOpenSteps += seen.withOpenSteps;
      } catch (error) {
        throw new Error(`seed ${seed} failed: ${(error as Error).message}`, { cause: error });
      }
    }
    // Merges must actually have closed cycles, or the cycle patching went untested.
    expect(withCycles).toBeGreaterThan(SEEDS);
    // And tasks must have waited on their open steps (steps opened, closed, added, moved and merged under them).
    expect(withOpenSteps).toBeGreaterThan(SEEDS);
  }, 120_000);

  it('a write that changes nothing leaves the views indexed: later reads do not walk every task', () => {
    const plan = createPlan({ actor: 'agent:a', doc: new Y.Doc() });
    const ids = plan.addMany([{ title: '0' }, { title: '1' }, { title: '2' }]).map((t) => t.id);
    plan.update(ids[0]!, { status: 'in_progress' });
    plan.ready();
    const walks = vi.spyOn(plan.doc.getMap('tasks'), 'entries');
    plan.update(ids[0]!, { status: 'in_progress' }); // already so: the transaction writes nothing
    plan.ready();
    plan.list();
    plan.children(null);
    expect(walks).not.toHaveBeenCalled();
    plan.update(ids[1]!, { status: 'done' });
    expect(plan.ready().map((t) => t.id)).toEqual([ids[0], ids[2]]);
    expect(walks).not.toHaveBeenCalled();
    walks.mockRestore();
    expect(live(plan)).toEqual(fromScratch(plan));
  });

  it('a merge that closes a ring, then an edge inside it removed, splits it back', () => {
    const a = createPlan({ actor: 'agent:a', doc: new Y.Doc() });
    const ids = a.addMany([{ title: '0' }, { title: '1' }, { title: '2' }, { title: '3' }]).map((t) => t.id);
    for (let i = 1; i < 3; i++) a.update(ids[i]!, { addBlockedBy: [ids[i - 1]!] });
    const b = createPlan({ actor: 'agent:b', doc: new Y.Doc() });
    Y.applyUpdate(b.doc, Y.encodeStateAsUpdate(a.doc));
    // Each side's edge is legal where it is made; together they close 0 → 3 → 2 → 1 → 0.
    a.update(ids[3]!, { addBlockedBy: [ids[2]!] });
    expect(a.cycles()).toEqual([]);
    b.update(ids[0]!, { addBlockedBy: [ids[3]!] });
    Y.applyUpdate(a.doc, Y.encodeStateAsUpdate(b.doc));
    expect(a.cycles()).toEqual([[...ids].sort()]);
    expect(a.ready()).toEqual([]);
    a.update(ids[2]!, { removeBlockedBy: [ids[1]!] });
    expect(a.cycles()).toEqual([]);
    expect(a.ready().map((t) => t.id)).toEqual([ids[2]]);
    expect(live(a)).toEqual(fromScratch(a));
  });
});
