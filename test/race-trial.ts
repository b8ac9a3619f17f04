// One trial of agents racing to claim a new task, shared by the race tests on one server and over a cluster: a
// different agent creates each task (so the race starts from a task some replicas just received), every agent
// claims it at once, and exactly one wins while every loser is told who won.

import type { Plan } from '@cairn/core';
import type { ClaimResult } from '@cairn/core/protocol';
import { until } from '@cairn/core/testing';
import { expect } from 'vitest';

export interface Racer {
  actor: string;
  plan: Plan;
}

export async function raceForNewTask(
  racers: readonly Racer[],
  trial: number,
): Promise<{ taskId: string; winner: string; results: ClaimResult[] }> {
  const task = racers[trial % racers.length]!.plan.add({ title: `Task ${trial}` });
  await Promise.all(racers.map((r) => until(r.plan, () => r.plan.has(task.id))));
  const results: ClaimResult[] = await Promise.all(racers.map((r) => r.plan.claim(task.id)));
  const winners = results.filter((r) => r.outcome === 'won');
  expect(winners, `trial ${trial}`).toHaveLength(1);
  const winner = winners[0]!.holder!;
  for (const [i, result] of results.entries()) {
    if (result.outcome === 'won') expect(result.holder).toBe(racers[i]!.actor);
    else expect(result, `trial ${trial}`).toMatchObject({ outcome: 'lost', holder: winner });
  }
  return { taskId: task.id, winner, results };
}
