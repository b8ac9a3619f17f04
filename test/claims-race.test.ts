// The claim property through a real server: K agents (2, 8) race for one task, trial after trial; exactly one is
// told it won, the others are told who holds it, and every replica shows that winner (32 agents race on every
// host in test/contract/races.ts). Racing claimNext over N ready tasks hands out each task exactly once.
// CAIRN_RACE_TRIALS=1000 runs the full trial count.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPlan, type Plan } from '@cairn/core';
import { until } from '@cairn/core/testing';
import { connectPlan, type PlanConnection } from '@cairn/core/websocket';
import { type CairnServer, createCairnServer, signToken, silentLogger } from '@cairn/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import * as Y from 'yjs';
import { raceTrials, takeAllReady } from './race-trial.js';

const SECRET = 'race-test-secret-race-test-secret-0123456789';
const FULL = Number(process.env.CAIRN_RACE_TRIALS ?? 0);
/** Trials per K: enough to catch a broken arbiter at once, small enough for 2 shared cores. */
const TRIALS: Record<number, number> = FULL > 0 ? { 2: FULL, 8: FULL } : { 2: 100, 8: 60 };

interface Agent {
  actor: string;
  plan: Plan;
  connection: PlanConnection;
}

let server: CairnServer;
let url: string;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-race-'));
  server = createCairnServer({ dataDir: dir, secret: SECRET, logger: silentLogger });
  const info = await server.listen(0, '127.0.0.1');
  url = `ws://127.0.0.1:${info.port}`;
});

afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

/** K agents on their own docs and sockets, each with a token whose subject is the agent. */
async function agents(planId: string, k: number): Promise<Agent[]> {
  const out = await Promise.all(
    Array.from({ length: k }, async (_, i) => {
      const actor = `agent:r${i}`;
      const token = await signToken(SECRET, { plan: planId, role: 'write', sub: actor });
      const doc = new Y.Doc();
      const plan = createPlan({ doc, actor });
      const connection = connectPlan(doc, {
        url,
        planId,
        token,
        WebSocketPolyfill: WebSocket,
        plan,
        presence: { id: actor, name: actor, kind: 'agent' },
      });
      await connection.whenSynced(10_000);
      return { actor, plan, connection };
    }),
  );
  return out;
}

function closeAll(list: Agent[]): void {
  for (const agent of list) {
    agent.connection.destroy();
    agent.plan.destroy();
  }
}

describe.each([2, 8])('K = %i agents racing for one task', (k) => {
  // About 5 ms per agent and trial on 2 busy cores.
  const timeout = 30_000 + TRIALS[k]! * k * 10;
  it(
    `has exactly one winner in each of ${TRIALS[k]} trials, and every replica agrees`,
    async () => {
      const planId = `race:one:${k}`;
      const racers = await agents(planId, k);
      try {
        await raceTrials(racers, TRIALS[k]!);
      } finally {
        closeAll(racers);
      }
    },
    timeout,
  );
});

describe('racing claimNext', () => {
  it('hands out each of N ready tasks exactly once to K agents, skipping none', async () => {
    const n = 40;
    const k = 8;
    const planId = 'race:next';
    const racers = await agents(planId, k);
    try {
      const created = racers[0]!.plan.addMany(Array.from({ length: n }, (_, i) => ({ title: `Ready ${i}` })));
      // One task waits on another: it must not be handed out while its blocker is open.
      racers[0]!.plan.update(created[n - 1]!.id, { addBlockedBy: [created[0]!.id] });
      await Promise.all(racers.map((r) => until(r.plan, () => r.plan.list().length === n)));

      const taken = await takeAllReady(
        racers.map((r) => r.actor),
        (i) => racers[i]!.plan.claimNext(),
        { arbitrated: true },
      );
      expect([...taken.values()].every((holders) => holders.length === 1)).toBe(true);
      expect(taken.size).toBe(n - 1);
      expect(taken.has(created[n - 1]!.id)).toBe(false);

      // Once the blocker is done the last task is ready, and exactly one of the racers gets it.
      const blockerHolder = racers.find((r) => r.actor === taken.get(created[0]!.id)![0])!;
      blockerHolder.plan.update(created[0]!.id, { status: 'done' });
      await Promise.all(
        racers.map((r) => until(r.plan, () => r.plan.get(created[0]!.id)!.status === 'done')),
      );
      const last = await Promise.all(racers.map((r) => r.plan.claimNext()));
      expect(last.filter((r) => r.outcome === 'won').map((r) => r.taskId)).toEqual([created[n - 1]!.id]);
      expect(last.filter((r) => r.outcome === 'none')).toHaveLength(k - 1);

      const views = racers.map((r) => JSON.stringify(r.plan.list().map((t) => [t.id, t.assignee, t.status])));
      expect(new Set(views).size).toBe(1);
    } finally {
      closeAll(racers);
    }
  });
});
