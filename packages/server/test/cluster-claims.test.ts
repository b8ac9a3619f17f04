// Claims across three instances sharing plans through Redis: K agents spread over the instances race for one
// task, trial after trial, over WebSocket and over the HTTP tool API; exactly one wins and every replica ends with
// that winner. claimNext over the instances hands each ready task out once, on either path. CAIRN_RACE_TRIALS
// sets the trial count (default below).
import { createPlan, type Plan } from '@cairn/core';
import { until } from '@cairn/core/testing';
import { connectPlan, type PlanConnection } from '@cairn/core/websocket';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import * as Y from 'yjs';
import {
  expectOneWinner,
  expectReplicasSettle,
  raceForNewTask,
  takeAllReady,
} from '../../../test/race-trial.js';
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
        await expectReplicasSettle(
          racers.map((r) => r.plan),
          taskId,
          winner,
        );
      }
    },
    60_000 + TRIALS[k]! * k * 60,
  );
});

/** A tool call over HTTP on one instance, as `actor` (an open server takes `?as=`). */
async function httpTool(
  instance: ClusterInstance,
  planId: string,
  tool: string,
  actor: string,
  args: Record<string, unknown>,
  // biome-ignore lint/suspicious/noExplicitAny: a tool's JSON result, whose shape each assertion states
): Promise<any> {
  const response = await fetch(
    `${instance.http}/api/plans/${encodeURIComponent(planId)}/tools/${tool}?as=${encodeURIComponent(actor)}`,
    { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(args) },
  );
  return response.json();
}

/**
 * An instance for HTTP races: the per-address rate limit (20 requests a second without a token) is off, since a
 * race sends trials as fast as the instances answer and is about claims, not about that limit (http.test.ts).
 */
const httpInstance = () => startInstance(services, { httpRateLimits: false });

describe('the HTTP tool API over three instances', () => {
  it('claim: K = 6 agents on different instances, exactly one winner in each of 100 trials, every replica agrees', async () => {
    const instances = await Promise.all([0, 1, 2].map(() => httpInstance()));
    const planId = 'race:cluster:http';
    // One replica per instance, to create each task and to see where every instance's copy ends up.
    const replicas = await agents(instances, planId, 3);
    const actors = Array.from({ length: 6 }, (_, i) => `agent:h${i}`);
    const trials = FULL > 0 ? FULL : 100;
    for (let trial = 0; trial < trials; trial++) {
      const task = replicas[trial % 3]!.plan.add({ title: `Task ${trial}` });
      await Promise.all(replicas.map((r) => until(r.plan, () => r.plan.has(task.id))));
      const results = await Promise.all(
        actors.map((actor, i) => httpTool(instances[i % 3]!, planId, 'claim', actor, { id: task.id })),
      );
      const winner = expectOneWinner(results, actors, `trial ${trial}`);
      await expectReplicasSettle(
        replicas.map((r) => r.plan),
        task.id,
        winner,
      );
    }
  }, 120_000);

  it('claim_next and hand_off: each ready task goes to one agent; a hand-off moves the reservation', async () => {
    const instances = await Promise.all([0, 1, 2].map(() => httpInstance()));
    const planId = 'race:cluster:http-next';
    const [replica] = await agents(instances, planId, 1);
    const n = 12;
    replica!.plan.addMany(Array.from({ length: n }, (_, i) => ({ title: `Ready ${i}` })));
    await replica!.connection.whenAcknowledged();
    const actors = Array.from({ length: 6 }, (_, i) => `agent:n${i}`);
    const taken = await takeAllReady(actors, async (i) => {
      const result = await httpTool(instances[i % 3]!, planId, 'claim_next', actors[i]!, {});
      return { ...result, taskId: result.task?.id };
    });
    expect(taken.size).toBe(n);
    expect([...taken.values()].every((holders) => holders.length === 1)).toBe(true);
    // A hand-off over HTTP on one instance: the new holder, not the old one, keeps the task everywhere.
    const [taskId, [holder]] = [...taken][0]! as [string, string[]];
    const handed = await httpTool(instances[0]!, planId, 'hand_off', holder!, {
      id: taskId,
      to: 'agent:next',
    });
    expect(handed).toMatchObject({ outcome: 'won', holder: 'agent:next' });
    const stolen = await httpTool(instances[1]!, planId, 'claim', holder!, { id: taskId });
    expect(stolen).toMatchObject({ outcome: 'lost', holder: 'agent:next' });
  });
});

describe('claimNext over three instances', () => {
  it('hands out each of N ready tasks exactly once to agents on different instances', async () => {
    const instances = await Promise.all([0, 1, 2].map(() => startInstance(services)));
    const n = 30;
    const racers = await agents(instances, 'race:cluster:next', 6);
    racers[0]!.plan.addMany(Array.from({ length: n }, (_, i) => ({ title: `Ready ${i}` })));
    await Promise.all(racers.map((r) => until(r.plan, () => r.plan.list().length === n)));
    const taken = await takeAllReady(
      racers.map((r) => r.actor),
      (i) => racers[i]!.plan.claimNext(),
    );
    expect(taken.size).toBe(n);
    expect([...taken.values()].every((holders) => holders.length === 1)).toBe(true);
  });
});
