// The plan's conversation over HTTP, as an agent without a Yjs client meets it: it reads the chat since a cursor
// (a wake-up notice included), appends attributed turns that auto-close then judges, and reads the decision log.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatCompletionsJudge, signToken } from '../src/index.js';
import { seedPlan, startServer, type TestServer } from './helpers.js';

const secret = 'conversation-test-secret-at-least-32-bytes';
const token = (role: 'read' | 'write' | 'admin', sub = 'ana') =>
  signToken(secret, { plan: 'acme:*', role, sub });
const T0 = Date.parse('2026-12-02T09:00:00Z');

// biome-ignore lint/suspicious/noExplicitAny: JSON answers, read field by field in the assertions
type Json = any;

async function call(
  server: TestServer,
  method: string,
  path: string,
  auth: string,
  body?: unknown,
): Promise<{ status: number; body: Json }> {
  const response = await fetch(`${server.http}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${auth}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, body: await response.json() };
}

/** A judge: a small local HTTP server speaking chat completions, rating every task it is shown as completed. */
let judge: Server;
let judgeUrl = '';
beforeAll(async () => {
  judge = createServer(async (req, res) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    const asked = JSON.parse(JSON.parse(text).messages.at(-1).content) as { tasks: Array<{ id: string }> };
    const content = JSON.stringify({
      tasks: asked.tasks.map((t) => ({ id: t.id, completed: 0.9, abandoned: 0, reason: 'It was booked.' })),
    });
    const answer = JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      model: 'judge-1',
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }],
      usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
    });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(answer);
  });
  await new Promise<void>((resolve) => judge.listen(0, '127.0.0.1', resolve));
  judgeUrl = `http://127.0.0.1:${(judge.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((resolve) => judge.close(() => resolve())));

describe('the conversation over HTTP', () => {
  it('appends attributed turns with the token’s rights and reads them since a cursor', async () => {
    const server = await startServer({ secret, wake: false });
    await seedPlan(server, 'acme:c1', [{ title: 'Book a table' }]);
    const writer = await token('write');

    const first = await call(server, 'GET', '/api/plans/acme%3Ac1/chat', await token('read'));
    expect(first.status).toBe(200);
    expect(first.body.messages).toEqual([]);
    expect(typeof first.body.cursor).toBe('string');

    const user = await call(server, 'POST', '/api/plans/acme%3Ac1/chat', writer, {
      role: 'user',
      text: 'Book it',
    });
    expect(user.status).toBe(201);
    expect(user.body.message).toMatchObject({ role: 'user', actor: 'user:ana', text: 'Book it' });
    const reply = await call(server, 'POST', '/api/plans/acme%3Ac1/chat?as=agent:ana/scout', writer, {
      role: 'assistant',
      text: 'Booked.',
    });
    expect(reply.body.message).toMatchObject({ role: 'assistant', actor: 'agent:ana/scout' });

    const since = await call(server, 'GET', `/api/plans/acme%3Ac1/chat?since=${first.body.cursor}`, writer);
    expect(since.body.messages.map((m: { text: string }) => m.text)).toEqual(['Book it', 'Booked.']);
    const none = await call(server, 'GET', `/api/plans/acme%3Ac1/chat?since=${since.body.cursor}`, writer);
    expect(none.body.messages).toEqual([]);

    // A system turn is what a model trusts most: a writer may not add one, an admin may, under its own name.
    const refused = await call(server, 'POST', '/api/plans/acme%3Ac1/chat', writer, {
      role: 'system',
      text: 'x',
    });
    expect(refused.status).toBe(403);
    const system = await call(server, 'POST', '/api/plans/acme%3Ac1/chat', await token('admin', 'ops'), {
      role: 'system',
      text: 'Maintenance at noon.',
    });
    expect(system.body.message).toMatchObject({ role: 'system', actor: 'agent:ops' });

    const reader = await call(server, 'POST', '/api/plans/acme%3Ac1/chat', await token('read'), {
      role: 'user',
      text: 'x',
    });
    expect(reader.status).toBe(403);
    const bad = await call(server, 'POST', '/api/plans/acme%3Ac1/chat', writer, { role: 'tool', text: 'x' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/"role": user \| assistant \| system/);
    const cursor = await call(server, 'GET', '/api/plans/acme%3Ac1/chat?since=not*a*cursor', writer);
    expect(cursor.status).toBe(400);
    expect(cursor.body.error.message).toMatch(/A cursor is the opaque string an earlier answer gave/);
    const after = await call(server, 'GET', '/api/plans/acme%3Ac1/chat', writer);
    expect(after.body.messages).toHaveLength(3);
  });

  it('shows a wake-up notice to the next read since a cursor', async () => {
    const time = { now: T0 };
    const server = await startServer({ secret, wake: { timer: false, now: () => time.now } });
    await seedPlan(
      server,
      'acme:c2',
      [
        {
          title: "Book a table at Luigi's",
          status: 'waiting_user',
          wakeAt: new Date(T0 + 60_000).toISOString(),
          nextStep: 'Ask whether 8 pm works',
        },
      ],
      () => T0,
    );
    const reader = await token('read');
    const { cursor } = (await call(server, 'GET', '/api/plans/acme%3Ac2/chat', reader)).body;
    time.now = T0 + 120_000;
    expect(await server.server.wake!.sweep()).toHaveLength(1);
    const next = await call(server, 'GET', `/api/plans/acme%3Ac2/chat?since=${cursor}`, reader);
    expect(next.body.messages).toEqual([
      expect.objectContaining({
        role: 'system',
        actor: 'wake',
        text: 'Task wake-up: "Book a table at Luigi\'s" is due. Next step: Ask whether 8 pm works',
      }),
    ]);
  });

  it('lets auto-close judge turns added over HTTP, and logs each decision as task_close', async () => {
    const server = await startServer({
      secret,
      wake: false,
      judge: chatCompletionsJudge({ baseUrl: judgeUrl, model: 'judge-1' }),
      autoClose: { settleMs: 0 },
    });
    const [id] = await seedPlan(server, 'acme:c3', [
      { title: 'Book a table', status: 'in_progress', steps: [{ title: 'Confirm with the user' }] },
    ]);
    const writer = await token('write');
    const judged = new Promise((resolve) => server.server.autoClose!.once('judged', resolve));
    await call(server, 'POST', '/api/plans/acme%3Ac3/chat', writer, { role: 'user', text: 'Book it for 8' });
    await call(server, 'POST', '/api/plans/acme%3Ac3/chat', writer, {
      role: 'assistant',
      text: 'Booked for 8.',
    });
    await judged;

    const task = await call(server, 'GET', `/api/plans/acme%3Ac3/tasks/${id}`, writer);
    // Its open step is closed with it, not left pending under a closed task.
    expect(task.body.task).toMatchObject({
      status: 'done',
      updatedBy: 'auto_close',
      steps: [{ status: 'skipped' }],
    });
    const log = await call(server, 'GET', '/api/plans/acme%3Ac3/decisions', await token('read'));
    expect(log.status).toBe(200);
    expect(log.body).toMatchObject({ plan: 'acme:c3', judge: 'judge-1' });
    expect(log.body.decisions).toEqual([
      expect.objectContaining({
        kind: 'task_close',
        taskId: id,
        decision: 'done',
        completed: 0.9,
        reason: 'It was booked.',
        at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      }),
    ]);
    const line = server.logger.lines.find((l) => l.message === 'task_close');
    expect(line).toMatchObject({
      level: 'info',
      fields: { kind: 'task_close', taskId: id, decision: 'done' },
    });
  });
});
