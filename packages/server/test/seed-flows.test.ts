// Issue 30's seed-flow rough edges, over real HTTP against a real server: one answer for reads of a plan nobody
// wrote to, one task number, the dashboard's note where the agent looks, closes that name the steps they skip,
// and a context cursor too old to be worth its delta.
import { readdir } from 'node:fs/promises';
import type { TaskInput } from '@cairn/core';
import { describe, expect, it } from 'vitest';
import { signToken } from '../src/index.js';
import { seedPlan, startServer, type TestServer } from './helpers.js';

const secret = 'seed-flows-test-secret-with-32-bytes-or-more';
const token = (plan: string, role: 'read' | 'write', sub = 'ana') => signToken(secret, { plan, role, sub });

async function call(
  server: TestServer,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; accept?: string } = {},
  // biome-ignore lint/suspicious/noExplicitAny: JSON answers, read field by field in the assertions
): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(`${server.http}${path}`, {
    method,
    headers: {
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...(method !== 'GET' ? { 'content-type': 'application/json' } : {}),
      ...(options.accept ? { accept: options.accept } : {}),
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await response.text();
  const json = response.headers.get('content-type')?.startsWith('application/json');
  return { status: response.status, headers: response.headers, body: json ? JSON.parse(text) : text };
}

function seed(server: TestServer, planId: string, inputs: TaskInput[]): Promise<string[]> {
  let clock = 1_000;
  return seedPlan(server, planId, inputs, () => clock++);
}

describe('issue 30: reads of a plan nobody wrote to', () => {
  it('answer 200 and empty from every family, creating nothing', async () => {
    const server = await startServer({ secret });
    const reader = await token('acme:*', 'read');
    const writer = await token('acme:*', 'write');
    const answers: Record<string, unknown> = {};
    const ask = async (tool: string, args: object, who: string) => {
      const answer = await call(server, 'POST', `/api/plans/acme%3Anobody/tools/${tool}`, {
        token: who,
        body: args,
      });
      expect(answer.status, tool).toBe(200);
      answers[tool] = answer.body;
    };
    await ask('get_ongoing_task', {}, reader);
    await ask('list_ready_tasks', {}, reader);
    await ask('list_tasks', {}, reader);
    // Nothing of the plan was stored: no log, and no trace of the read-only calls.
    expect((await readdir(server.dir)).filter((f) => f.startsWith('acme%3Anobody'))).toEqual([]);
    await ask('task_manage', { action: 'list' }, writer);
    await ask('todo', { action: 'list' }, writer);
    expect(answers.get_ongoing_task).toEqual({ count: 0, tasks: [] });
    expect(answers.list_tasks).toMatchObject({ tasks: [] });
    expect(answers.list_ready_tasks).toEqual([]);
  });
});

describe('issue 30: one task number over HTTP', () => {
  it('lists each task with the number PATCH and the ongoing_task tools take, in `number` and `num` alike', async () => {
    const server = await startServer({ secret });
    const [, second] = await seed(server, 'acme:1', [
      { title: 'Plan the trip', steps: [{ title: 'Book flights' }, { title: 'Book the hotel' }] },
      { title: 'Renew the passport', steps: [{ title: 'Take a photo' }] },
    ]);
    const writer = await token('acme:1', 'write');
    const list = await call(server, 'GET', '/api/plans/acme%3A1/tasks', { token: writer });
    const listed = list.body.tasks.find((t: { id: string }) => t.id === second);
    expect(listed).toMatchObject({ number: 2, num: 2 });
    const patched = await call(server, 'PATCH', `/api/plans/acme%3A1/tasks/${listed.num}`, {
      token: writer,
      body: { status: 'in_progress' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.task).toMatchObject({ id: second, status: 'in_progress', number: 2, num: 2 });
    const agent = await call(server, 'POST', '/api/plans/acme%3A1/tools/get_ongoing_task', {
      token: writer,
      body: {},
    });
    expect(agent.body.tasks.find((t: { task: string }) => t.task === 'Renew the passport').taskId).toBe(2);
  });
});

describe("issue 30: the dashboard's note reaches the ongoing_task agent", () => {
  it('shows a PATCH note in get_ongoing_task and in the open-tasks block', async () => {
    const server = await startServer({ secret });
    await seed(server, 'acme:1', [{ title: "Book a table at Luigi's", status: 'waiting_user' }]);
    const writer = await token('acme:1', 'write');
    const patched = await call(server, 'PATCH', '/api/plans/acme%3A1/tasks/1', {
      token: writer,
      body: { status: 'in_progress', note: 'Luigi is closed on Tuesdays;\ntry Wednesday.' },
    });
    expect(patched.status).toBe(200);
    const agent = await call(server, 'POST', '/api/plans/acme%3A1/tools/get_ongoing_task', {
      token: writer,
      body: {},
    });
    expect(agent.body.tasks[0]).toMatchObject({
      taskId: 1,
      status: 'in_progress',
      note: 'Luigi is closed on Tuesdays;\ntry Wednesday.',
      source: 'user',
    });
    const block = await call(server, 'GET', '/api/plans/acme%3A1/context?format=open-tasks', {
      token: writer,
    });
    expect(block.body).toContain('- Note: Luigi is closed on Tuesdays; ⏎ try Wednesday.');
  });
});

describe('issue 30: closing a parent names the steps it skipped', () => {
  it('in PATCH, clear_ongoing_task, set_ongoing_task and update_tasks', async () => {
    const server = await startServer({ secret });
    const ids = await seed(server, 'acme:1', [
      {
        title: 'Plan the trip',
        steps: [{ title: 'Book flights', status: 'done' }, { title: 'Book the hotel' }],
      },
      { title: 'Renew the passport', steps: [{ title: 'Take a photo' }] },
      { title: 'Move house', steps: [{ title: 'Pack' }, { title: 'Hire a van', status: 'in_progress' }] },
      { title: 'Pay the tax', steps: [{ title: 'Fill the form' }] },
    ]);
    const writer = await token('acme:1', 'write');
    const patched = await call(server, 'PATCH', '/api/plans/acme%3A1/tasks/1', {
      token: writer,
      body: { status: 'done' },
    });
    expect(patched.body.skippedSteps).toEqual([{ id: expect.any(String), title: 'Book the hotel' }]);
    const tool = (name: string, args: object) =>
      call(server, 'POST', `/api/plans/acme%3A1/tools/${name}`, { token: writer, body: args });
    const cleared = await tool('clear_ongoing_task', { taskId: 2, outcome: 'cancelled' });
    expect(cleared.body).toMatchObject({ status: 'cancelled', skippedSteps: ['Take a photo'] });
    const set = await tool('set_ongoing_task', { taskId: 3, task: 'Move house', status: 'done' });
    expect(set.body).toMatchObject({ status: 'done', skippedSteps: ['Pack', 'Hire a van'] });
    const updated = await tool('update_tasks', { updates: [{ id: ids[3], status: 'done' }] });
    expect(updated.body.updated[0]).toMatchObject({
      id: ids[3],
      skippedSteps: [{ id: expect.any(String), title: 'Fill the form' }],
    });
    // A close with nothing open under it says nothing of steps.
    const again = await tool('update_tasks', { updates: [{ id: ids[3], status: 'failed' }] });
    expect(again.body.updated[0].skippedSteps).toBeUndefined();
  });
});

describe('issue 30: a context cursor so old that its delta is longer than the plan', () => {
  it('answers the whole plan instead, marked full_old_cursor, while a short delta stays a delta', async () => {
    const server = await startServer({ secret });
    const titles = Array.from({ length: 20 }, (_, i) => ({
      title: `Call supplier number ${i + 1} about the order`,
    }));
    const ids = await seed(server, 'acme:1', titles);
    const reader = await token('acme:1', 'read', 'scout');
    const other = await token('acme:1', 'write', 'b');
    const path = '/api/plans/acme%3A1/context?format=checklist';
    const first = await call(server, 'GET', path, { token: reader, accept: 'application/json' });
    const cursor = first.body.cursor;

    await call(server, 'POST', '/api/plans/acme%3A1/tools/update_tasks', {
      token: other,
      body: { updates: [{ id: ids[0], status: 'done' }] },
    });
    const small = await call(server, 'GET', `${path}&since=${cursor}`, {
      token: reader,
      accept: 'application/json',
    });
    expect(small.body.kind).toBe('delta');

    // Another agent removes all but one task: telling each removal costs more than the one task left.
    await call(server, 'POST', '/api/plans/acme%3A1/tools/remove_tasks', {
      token: other,
      body: { ids: ids.slice(1) },
    });
    const old = await call(server, 'GET', `${path}&since=${cursor}`, {
      token: reader,
      accept: 'application/json',
    });
    const whole = await call(server, 'GET', path, { token: reader, accept: 'application/json' });
    expect(old.body).toMatchObject({ kind: 'full_old_cursor', text: whole.body.text });
    const plain = await call(server, 'GET', `${path}&since=${cursor}`, { token: reader });
    expect(plain.headers.get('cairn-context')).toBe('full_old_cursor');
    expect(plain.body).toMatch(
      /^\(So much changed since the cursor given[\s\S]*Call supplier number 1 about/,
    );
  });
});
