// Learning at the edge (decision 049): tool calls through a plan's object are traced in the trace's own object, a
// task closed as done is queued and distilled from the plan object's alarm, with nobody connected and no request,
// and the skill lands in the scope's skills object, whose route answers it with cairn serve's access rules.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { signToken } from '../../../packages/server/src/index.js';
import { type RunningWorkerd, startWorkerd } from './workerd.js';

const SECRET = 'edge-learning-secret-edge-learning-0123456789';

let w: RunningWorkerd;
beforeAll(async () => {
  // No judge: the offline distiller writes the skill, as on `cairn serve` without CAIRN_JUDGE_URL.
  w = await startWorkerd({ vars: { CAIRN_SECRET: SECRET } });
});
afterAll(() => w?.dispose());

const token = (plan: string, role: 'read' | 'write' = 'write') =>
  signToken(SECRET, { plan, role, sub: 'agent:booker' });

async function call(path: string, bearer: string, body?: unknown, on = w) {
  const response = await fetch(`${on.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Bearer ${bearer}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: JSON answers, read only by the assertions
  return { status: response.status, body: (await response.json()) as any };
}

describe('learning at the edge', () => {
  it('turns a task closed with tool calls into a skill the scope’s skills route returns', async () => {
    const plan = 'acme:conv:learn';
    const api = `/api/plans/${encodeURIComponent(plan)}`;
    const write = await token(plan);
    const added = await call(`${api}/tools/add_tasks`, write, {
      tasks: [{ title: 'Book a table for 4 at Luigi’s' }],
    });
    expect(added.status).toBe(200);
    const taskId = added.body.added[0].id as string;
    const done = await call(`${api}/tools/update_tasks`, write, {
      updates: [{ id: taskId, status: 'done' }],
    });
    expect(done.status).toBe(200);

    // Both calls are in the plan's trace, which lives in the object `acme:conv:learn#traces`.
    const trace = await call(`${api}/traces`, await token(plan, 'read'));
    expect(trace.body.calls.map((c: { tool: string }) => c.tool)).toEqual(['add_tasks', 'update_tasks']);

    // Settled (2 s), queued and distilled from the plan object's alarm: no request or socket wakes it.
    const reader = await token('acme:*', 'read');
    await vi.waitFor(
      async () => {
        const skills = await call('/api/scopes/acme/skills', reader);
        expect(skills.status).toBe(200);
        expect(skills.body.skills).toHaveLength(1);
      },
      { timeout: 20_000, interval: 250 },
    );
    const [skill] = (await call('/api/scopes/acme/skills', reader)).body.skills;
    expect(skill).toMatchObject({ scope: 'acme', status: 'active', writtenByModel: false });
    const learned = skill.versions.at(-1);
    expect(learned.steps.map((s: { tool: string }) => s.tool)).toContain('add_tasks');
    expect(learned).toMatchObject({ learnedBy: 'learning', source: { planId: plan, taskId } });

    // The scope's skills keep cairn serve's rules: another scope's token is refused, and so is a write with a
    // token for one plan of the scope.
    const stranger = await call('/api/scopes/acme/skills', await token('other:*', 'read'));
    expect(stranger.status).toBe(403);
    const onePlan = await fetch(`${w.url}/api/scopes/acme/skills/${skill.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${write}`, 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'retired' }),
    });
    expect(onePlan.status).toBe(403);
  }, 40_000);
});

describe('the alarm of an object killed while it runs', () => {
  /** The distiller's endpoint: it never answers its first request, and answers the later ones. */
  let model: { url: string; requests: number; server: Server };
  let killed: RunningWorkerd;
  beforeAll(async () => {
    model = { url: '', requests: 0, server: createServer() };
    model.server.on('request', (req, res) => {
      model.requests++;
      if (model.requests === 1) return; // held until the runtime dies
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          choices: [{ index: 0, message: { role: 'assistant', content: 'not a procedure' } }],
        }),
      );
    });
    await new Promise<void>((resolve) => model.server.listen(0, '127.0.0.1', () => resolve()));
    model.url = `http://127.0.0.1:${(model.server.address() as AddressInfo).port}/v1`;
    killed = await startWorkerd({
      vars: { CAIRN_SECRET: SECRET, CAIRN_JUDGE_URL: model.url, CAIRN_JUDGE_MODEL: 'distiller-1' },
    });
  });
  afterAll(async () => {
    await killed?.dispose();
    model?.server.closeAllConnections();
    model?.server.close();
  });

  it('runs a learning job cut short by kill -9 again after the restart, with no request to the plan', async () => {
    const plan = 'acme:conv:killed';
    const api = `/api/plans/${encodeURIComponent(plan)}`;
    const write = await token(plan);
    const added = await call(`${api}/tools/add_tasks`, write, { tasks: [{ title: 'Book a room' }] }, killed);
    const taskId = added.body.added[0].id as string;
    await call(`${api}/tools/update_tasks`, write, { updates: [{ id: taskId, status: 'done' }] }, killed);
    // The sweep, from the alarm, is waiting on the model: the runtime dies then.
    await vi.waitFor(() => expect(model.requests).toBe(1), { timeout: 15_000, interval: 100 });
    await killed.kill9();
    await killed.restart();
    // Only the alarm can run the job again: the skills route is the scope's object, not the plan's.
    const reader = await token('acme:*', 'read');
    await vi.waitFor(
      async () => {
        const skills = await call('/api/scopes/acme/skills', reader, undefined, killed);
        expect(skills.body.skills).toHaveLength(1);
      },
      { timeout: 30_000, interval: 500 },
    );
    expect(model.requests).toBe(2);
  }, 60_000);
});
