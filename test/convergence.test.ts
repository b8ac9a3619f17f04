// Seeded randomized convergence: several replicas make random edits through the Plan API while their updates
// travel in random order, with partitions; afterwards every replica must hold the same plan and the graph
// invariants must hold. Failures print the seed; CAIRN_CONVERGENCE_SEEDS=2000 runs more.
import { CairnError, createPlan, type Plan } from '@cairn/core';
import { satisfiesDependency } from '@cairn/core/protocol';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { seeded } from '../packages/core/src/testing/seeded.js';
import { type EditWeights, randomEdit } from '../packages/core/test/random-edits.js';

const SEEDS = Number(process.env['CAIRN_CONVERGENCE_SEEDS'] ?? 200);
const REMOTE = Symbol('remote');

/** Replicas joined by per-pair message queues that deliver in random order and can be cut (partitions). */
class Network {
  readonly queues = new Map<string, Uint8Array[]>();
  readonly cut = new Set<number>();
  constructor(
    readonly docs: Y.Doc[],
    private readonly random: () => number,
  ) {
    docs.forEach((doc, from) => {
      doc.on('update', (update: Uint8Array, origin: unknown) => {
        if (origin === REMOTE) return;
        docs.forEach((_, to) => {
          if (to !== from) this.queue(from, to).push(update);
        });
      });
    });
  }

  private queue(from: number, to: number): Uint8Array[] {
    const key = `${from}>${to}`;
    const q = this.queues.get(key) ?? [];
    this.queues.set(key, q);
    return q;
  }

  /** Delivers one random pending message between connected replicas; false when none can move. */
  deliverOne(): boolean {
    const open = [...this.queues.entries()].filter(([key, q]) => {
      const [from, to] = key.split('>').map(Number) as [number, number];
      return q.length > 0 && !this.cut.has(from) && !this.cut.has(to);
    });
    if (open.length === 0) return false;
    const [key, q] = open[Math.floor(this.random() * open.length)]!;
    const to = Number(key.split('>')[1]);
    // Take any message of the queue, not only the oldest: Yjs must cope with out-of-order updates.
    const [update] = q.splice(Math.floor(this.random() * q.length), 1);
    Y.applyUpdate(this.docs[to]!, update!, REMOTE);
    return true;
  }

  /** Ends every partition and brings all replicas up to date (as a reconnect's sync step would). */
  healAndSettle(): void {
    this.cut.clear();
    this.queues.clear();
    // Repairs written while receiving (integer aliases) produce new updates: exchange until quiet.
    for (let round = 0; round < 4; round++) {
      for (const a of this.docs) {
        for (const b of this.docs) {
          if (a !== b) Y.applyUpdate(b, Y.encodeStateAsUpdate(a, Y.encodeStateVector(b)), REMOTE);
        }
      }
      if ([...this.queues.values()].every((q) => q.length === 0)) return;
      this.queues.clear();
    }
    throw new Error('replicas kept writing after the partitions healed');
  }
}

/** Every kind of edit, claims and typing among them, so merges meet each of them concurrently. */
const EDITS: EditWeights = {
  add: 0.2,
  status: 0.15,
  block: 0.15,
  unblock: 0.05,
  move: 0.12,
  remove: 0.08,
  assign: 0.12,
  type: 0.13,
};

function checkInvariants(plan: Plan): void {
  const { tasks } = plan.toJSON();
  const byId = new Map(tasks.map((t) => [t.id, t]));
  // No duplicate or lost task: tree order lists each live task exactly once.
  expect(byId.size).toBe(tasks.length);
  expect(tasks.length).toBe(plan.doc.getMap('tasks').size);
  // Order is total: siblings strictly increase by (rank, id).
  const seen = new Map<string | null, { rank: string; id: string }>();
  for (const t of tasks) {
    const parent = plan.effectiveParent(t);
    const prev = seen.get(parent);
    if (prev) expect(prev.rank < t.rank || (prev.rank === t.rank && prev.id < t.id)).toBe(true);
    seen.set(parent, t);
  }
  // Every cycle is reported: a task reaches itself through blockedBy iff it is in a reported cycle.
  const inCycle = new Set(plan.cycles().flat());
  for (const t of tasks) {
    const stack = [...t.blockedBy];
    const visited = new Set<string>();
    let reaches = false;
    while (stack.length > 0 && !reaches) {
      const id = stack.pop()!;
      if (id === t.id) reaches = true;
      if (visited.has(id) || !byId.has(id)) continue;
      visited.add(id);
      stack.push(...byId.get(id)!.blockedBy);
    }
    expect(inCycle.has(t.id)).toBe(reaches);
  }
  // Nothing is ready while one of its blockers is unsatisfied, or while it sits in a cycle.
  for (const actor of ['agent:r0', 'agent:r1']) {
    for (const t of plan.ready({ actor })) {
      for (const blocker of t.blockedBy) {
        const b = byId.get(blocker);
        if (b) expect(satisfiesDependency(b.status)).toBe(true);
      }
      expect(inCycle.has(t.id)).toBe(false);
      expect(t.assignee === null || t.assignee === actor).toBe(true);
    }
  }
}

function runSeed(seed: number): void {
  const random = seeded(seed);
  const count = 4 + Math.floor(random() * 5);
  const actors = Array.from({ length: count }, (_, i) => `agent:r${i}`);
  let clock = 0;
  const plans = actors.map((actor, i) =>
    createPlan({ actor, doc: new Y.Doc(), random: seeded(seed * 31 + i), now: () => ++clock }),
  );
  const net = new Network(
    plans.map((p) => p.doc),
    random,
  );
  const steps = 40 + Math.floor(random() * 40);
  for (let step = 0; step < steps; step++) {
    const r = random();
    if (r < 0.08) net.cut.add(Math.floor(random() * count));
    else if (r < 0.14) net.cut.clear();
    else if (r < 0.45) for (let k = Math.floor(random() * 4); k > 0; k--) net.deliverOne();
    const plan = plans[Math.floor(random() * count)]!;
    // A snapshot (state vector + delete set) is a cheap, exact witness of "nothing changed".
    const before = Y.snapshot(plan.doc);
    try {
      randomEdit(plan, random, EDITS, actors);
    } catch (error) {
      // Refusals (a cycle, a task removed by a peer) must be CairnErrors that changed nothing.
      if (!(error instanceof CairnError)) throw error;
      expect(Y.equalSnapshots(Y.snapshot(plan.doc), before)).toBe(true);
    }
  }
  net.healAndSettle();
  const reference = JSON.stringify(plans[0]!.toJSON());
  for (const plan of plans) expect(JSON.stringify(plan.toJSON())).toBe(reference);
  for (const plan of plans) checkInvariants(plan);
}

describe('convergence under random concurrent edits', () => {
  it(`${SEEDS} seeds: every replica converges and the invariants hold`, () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      try {
        runSeed(seed);
      } catch (error) {
        throw new Error(`seed ${seed} failed: ${(error as Error).message}`, { cause: error });
      }
    }
  }, 180_000);
});
