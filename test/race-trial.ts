// Agents racing to claim, shared by the race tests on one server, on every host (test/contract/races.ts) and over a
// cluster: a trial where a different agent creates each task (so the race starts from a task some replicas just
// received) and every agent claims it at once, and the checks every race makes, whichever path the claims take
// (Plan, the HTTP tool, MCP): exactly one wins and every loser is told who won; each ready task goes to one agent.

import type { Plan } from '@cairn/core';
import type { ClaimResult } from '@cairn/core/protocol';
import { until } from '@cairn/core/testing';
import { expect } from 'vitest';

export interface Racer {
  actor: string;
  plan: Plan;
}

/** What a claim answered, however it was asked. */
export interface ClaimAnswer {
  outcome?: string;
  holder?: string | null;
}

/**
 * Exactly one of `answers` (the answer to `actors[i]`'s claim at `i`) won, naming its own actor; every other lost
 * and names the winner. Returns the winner.
 */
export function expectOneWinner(
  answers: readonly ClaimAnswer[],
  actors: readonly string[],
  label: string,
): string {
  const winners = answers.filter((a) => a.outcome === 'won');
  expect(winners, `${label}: ${JSON.stringify(answers)}`).toHaveLength(1);
  const winner = winners[0]!.holder!;
  expect(winner, label).toBe(actors[answers.indexOf(winners[0]!)]);
  for (const answer of answers) {
    if (answer !== winners[0]) expect(answer, label).toMatchObject({ outcome: 'lost', holder: winner });
  }
  return winner;
}

/** Every replica shows `taskId` claimed by `winner`, now. */
export function expectReplicasAgree(plans: readonly Plan[], taskId: string, winner: string): void {
  for (const plan of plans) {
    expect(plan.get(taskId)).toMatchObject({ assignee: winner, status: 'in_progress', updatedBy: winner });
  }
}

/** Waits until every replica has `winner` as the task's assignee (writes that travel between servers), then checks. */
export async function expectReplicasSettle(
  plans: readonly Plan[],
  taskId: string,
  winner: string,
): Promise<void> {
  await Promise.all(plans.map((plan) => until(plan, () => plan.get(taskId)?.assignee === winner)));
  expectReplicasAgree(plans, taskId, winner);
}

export async function raceForNewTask(
  racers: readonly Racer[],
  trial: number,
): Promise<{ taskId: string; winner: string; results: ClaimResult[] }> {
  const task = racers[trial % racers.length]!.plan.add({ title: `Task ${trial}` });
  await Promise.all(racers.map((r) => until(r.plan, () => r.plan.has(task.id))));
  const results: ClaimResult[] = await Promise.all(racers.map((r) => r.plan.claim(task.id)));
  const winner = expectOneWinner(
    results,
    racers.map((r) => r.actor),
    `trial ${trial}`,
  );
  return { taskId: task.id, winner, results };
}

/**
 * `trials` races on one server: each has one winner, an arbiter decided every answer, and the winning write
 * reached each replica before that replica's own answer (one socket, in order).
 */
export async function raceTrials(racers: readonly Racer[], trials: number): Promise<void> {
  for (let trial = 0; trial < trials; trial++) {
    const { taskId, winner, results } = await raceForNewTask(racers, trial);
    expect(results.every((r) => r.arbitrated)).toBe(true);
    expectReplicasAgree(
      racers.map((r) => r.plan),
      taskId,
      winner,
    );
  }
}

/**
 * Each of `actors` asks for the next ready task (`claimNext(i)`) until none is left, all at once; every answer
 * but `none` must be won by the asker (and match `also`). Returns who took each task.
 */
export async function takeAllReady(
  actors: readonly string[],
  claimNext: (i: number) => Promise<ClaimAnswer & { taskId?: string | null }>,
  also: Record<string, unknown> = {},
): Promise<Map<string, string[]>> {
  const taken = new Map<string, string[]>();
  await Promise.all(
    actors.map(async (actor, i) => {
      for (;;) {
        const result = await claimNext(i);
        if (result.outcome === 'none') return;
        expect(result).toMatchObject({ outcome: 'won', holder: actor, ...also });
        taken.set(result.taskId!, [...(taken.get(result.taskId!) ?? []), actor]);
      }
    }),
  );
  return taken;
}
