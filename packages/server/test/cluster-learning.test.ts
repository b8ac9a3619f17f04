// The learning queue in a cluster: a distillation queued on an instance that is then killed with kill -9 (its model
// call failed, so the job waits for its retry) is run by the survivors, which never loaded the plan, and run once
// although both sweep at the same moment. And a task on which a skill was offered counts once for that skill, though
// every instance holding the plan sees it close.
import { traceDocId } from '@cairn/core/learning';
import { describe, expect, it, vi } from 'vitest';
import { type ClusterInstance, serveChild, startInstance, useClusterServices } from './cluster-helpers.js';
import { startFakeLlm } from './fake-llm.js';
import { freePort } from './services.js';

const services = useClusterServices();

async function tool(http: string, planId: string, name: string, args: unknown): Promise<{ taskId: number }> {
  const response = await fetch(
    `${http}/api/plans/${encodeURIComponent(planId)}/tools/${name}?families=ongoing_task`,
    { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(args) },
  );
  expect(response.status).toBe(200);
  return (await response.json()) as { taskId: number };
}

describe('the learning queue shared through Redis', () => {
  it('a job queued on an instance killed with kill -9 runs once on the survivors', async () => {
    const llm = await startFakeLlm(() => ({ error: 500 }));
    const killed = await serveChild(services, await freePort(), [], {
      CAIRN_JUDGE_URL: llm.url,
      CAIRN_JUDGE_MODEL: 'judge',
    });
    let offset = 0;
    const now = () => Date.now() + offset;
    const survivors = await Promise.all(
      [0, 1].map(() => startInstance(services, { learning: { timer: false, now } })),
    );
    const http = killed.url.replace('ws', 'http');
    const planId = 'acme:learn-kill';
    const goal = 'Book a table for two';
    const { taskId } = await tool(http, planId, 'set_ongoing_task', { task: goal, status: 'in_progress' });
    await tool(http, planId, 'clear_ongoing_task', { outcome: 'done', taskId });

    // The killed instance queued the job and tried it once: the model failed, the retry waits 30 s.
    const learner = survivors[0]!.server.learner!;
    await vi.waitFor(
      async () => {
        const jobs = await learner.pending(planId);
        expect(jobs).toMatchObject([{ attempts: 1, goal }]);
      },
      { timeout: 15_000, interval: 100 },
    );
    expect(llm.calls.length).toBeGreaterThan(0);
    killed.child.kill('SIGKILL');
    await killed.exited;

    offset = 60_000; // the retry is due
    const sweeps = await Promise.all(survivors.map((s) => s.server.learner!.sweep()));
    expect(sweeps.reduce((n, s) => n + s.learned, 0)).toBe(1);
    expect(await learner.pending(planId)).toEqual([]);
    const skills = await fetch(`${survivors[1]!.http}/api/scopes/acme/skills`);
    expect(((await skills.json()) as { skills: unknown[] }).skills).toHaveLength(1);
    // Sweeping again finds nothing left to run.
    const again = await Promise.all(survivors.map((s) => s.server.learner!.sweep()));
    expect(again.reduce((n, s) => n + s.learned + s.retried, 0)).toBe(0);
  }, 120_000);
});

describe('skill outcomes in a cluster', () => {
  it('a task closing on three instances that hold its plan counts once for the skill offered on it', async () => {
    const instances = await Promise.all(
      [0, 1, 2].map(() => startInstance(services, { learning: { timer: false, settleMs: 200 } })),
    );
    const [first] = instances as [ClusterInstance, ...ClusterInstance[]];
    // A skill learned offline from one booking.
    const learnedFrom = 'acme:outcome-1';
    const booked = await tool(first.http, learnedFrom, 'set_ongoing_task', {
      task: 'Book a table for 4',
      status: 'in_progress',
    });
    await tool(first.http, learnedFrom, 'clear_ongoing_task', { outcome: 'done', taskId: booked.taskId });
    await vi.waitFor(async () => expect(await first.server.learner!.pending(learnedFrom)).toHaveLength(1), {
      timeout: 15_000,
      interval: 100,
    });
    const sweeps = await Promise.all(instances.map((i) => i.server.learner!.sweep()));
    expect(sweeps.reduce((n, s) => n + s.learned, 0)).toBe(1);
    const [skill] = await first.server.learner!.skillsFor(learnedFrom);
    expect(skill).toBeDefined();

    // The next booking is held on every instance and offered the skill; it closes as done.
    const planId = 'acme:outcome-2';
    // (The trace, where the offer is noted, too: clients syncing it on each instance keep it loaded there.)
    const holds = await Promise.all(
      instances.flatMap((i) => [i.server.hub.openPlan(planId), i.server.hub.openPlan(traceDocId(planId))]),
    );
    const outcomes: string[] = [];
    for (const [n, i] of instances.entries())
      i.server.learner!.on('outcome', (e) => outcomes.push(`${n}:${e.outcome}`));
    const next = await tool(first.http, planId, 'set_ongoing_task', {
      task: 'Book a table for 2',
      status: 'in_progress',
    });
    expect(
      await (await fetch(`${first.http}/api/plans/${encodeURIComponent(planId)}/learned`)).text(),
    ).toContain(skill!.id);
    await tool(first.http, planId, 'clear_ongoing_task', { outcome: 'done', taskId: next.taskId });

    await vi.waitFor(() => expect(outcomes).toHaveLength(1), { timeout: 10_000, interval: 50 });
    // Every instance has settled the close by now (200 ms) and has had time to count it again, were it to.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(outcomes).toHaveLength(1);
    for (const i of instances) {
      await vi.waitFor(async () => {
        const answer = await fetch(`${i.http}/api/scopes/acme/skills/${skill!.id}`);
        const { skill: counted, changes } = (await answer.json()) as {
          skill: { versions: Array<{ stats: { done: number; failed: number } }> };
          changes: Array<{ change: string }>;
        };
        expect(counted.versions.map((v) => v.stats)).toMatchObject([{ done: 1, failed: 0 }]);
        expect(changes.filter((c) => c.change === 'outcome')).toHaveLength(1);
      });
    }
    for (const hold of holds) hold.release();
  }, 120_000);
});
