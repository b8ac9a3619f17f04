// The learning queue in a cluster: a distillation queued on an instance that is then killed with kill -9 (its model
// call failed, so the job waits for its retry) is run by the survivors, which never loaded the plan, and run once
// although both sweep at the same moment.
import { describe, expect, it, vi } from 'vitest';
import { serveChild, startInstance, useClusterServices } from './cluster-helpers.js';
import { startFakeLlm } from './fake-llm.js';
import { freePort } from './services.js';

const services = useClusterServices();

async function tool(http: string, planId: string, name: string, args: unknown) {
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
