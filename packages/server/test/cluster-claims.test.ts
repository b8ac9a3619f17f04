// Claims across three instances sharing plans through Redis: K agents spread over the instances race for one
// task, trial after trial; exactly one wins and every replica ends with that winner. claimNext over the
// instances hands each ready task out once. CAIRN_RACE_TRIALS sets the trial count (default below).
import { createPlan, type Plan } from '@cairn/core';
import { until } from '@cairn/core/testing';
import { connectPlan, type PlanConnection } from '@cairn/core/websocket';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import * as Y from 'yjs';
import { raceForNewTask } from '../../../test/race-trial.js';
import { type ClusterInstance, startInstance, useClusterServices } from './cluster-helpers.js';
import { onCleanup } from './helpers.js';

const FULL = Number(process.env.CAIRN_RACE_TRIALS ?? 0);
/** Trials per K: 100 each take a few seconds on 2 shared cores. */
const TRIALS: Record<number, number> = FULL > 0 ? { 8: FULL, 32: FULL } : { 8: 100, 32: 100 };

process.setMaxListeners(200);
const services = useClusterServices();

interface Agent {
  actor: string;
  plan: Plan;
  connection: PlanConnection;
}

async function agents(instances: ClusterInstance[], planId: string, k: number): Promise<Agent[]> {
  return Promise.all(
    Array.from({ length: k }, async (_, i) => {
      const actor = `agent:r${i}`;
      const doc = new Y.Doc();
      const plan = createPlan({ doc, actor });
      const connection = connectPlan(doc, {
        url: instances[i % instances.length]!.url,
        planId,
        WebSocketPolyfill: WebSocket,
        plan,
        presence: { id: actor, name: actor, kind: 'agent' },
      });
      onCleanup(() => {
        connection.destroy();
        plan.destroy();
      });
      await connection.whenSynced(20_000);
      return { actor, plan, connection };
    }),
  );
}

describe.each([8, 32])('K = %i agents over three instances racing for one task', (k) => {
  it(
    `has exactly one winner in each of ${TRIALS[k]} trials, and every replica agrees`,
    async () => {
      const instances = await Promise.all([0, 1, 2].map(() => startInstance(services)));
      const racers = await agents(instances, `race:cluster:${k}`, k);
      for (let trial = 0; trial < TRIALS[k]!; trial++) {
        const { taskId, winner } = await raceForNewTask(racers, trial);
        await Promise.all(racers.map((r) => until(r.plan, () => r.plan.get(taskId)?.assignee === winner)));
        for (const r of racers) {
          expect(r.plan.get(taskId)).toMatchObject({
            assignee: winner,
            status: 'in_progress',
            updatedBy: winner,
          });
        }
      }
    },
    60_000 + TRIALS[k]! * k * 60,
  );
});

describe('claimNext over three instances', () => {
  it('hands out each of N ready tasks exactly once to agents on different instances', async () => {
    const instances = await Promise.all([0, 1, 2].map(() => startInstance(services)));
    const n = 30;
    const racers = await agents(instances, 'race:cluster:next', 6);
    racers[0]!.plan.addMany(Array.from({ length: n }, (_, i) => ({ title: `Ready ${i}` })));
    await Promise.all(racers.map((r) => until(r.plan, () => r.plan.list().length === n)));
    const taken = new Map<string, string[]>();
    await Promise.all(
      racers.map(async (r) => {
        for (;;) {
          const result = await r.plan.claimNext();
          if (result.outcome === 'none') return;
          expect(result).toMatchObject({ outcome: 'won', holder: r.actor });
          taken.set(result.taskId!, [...(taken.get(result.taskId!) ?? []), r.actor]);
        }
      }),
    );
    expect(taken.size).toBe(n);
    expect([...taken.values()].every((holders) => holders.length === 1)).toBe(true);
  });
});
