// The plan API over real HTTP against a real server and data directory: the task list and status changes, the
// rendered context, tool definitions and dispatch, refusals that change nothing, and edits reaching live clients.
import { readdir } from 'node:fs/promises';
import { createPlan, type Plan, type TaskInput } from '@cairn/core';
import { until } from '@cairn/core/testing';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { signToken } from '../src/index.js';
import { cairnClient, seedPlan, serverState, startServer, type TestServer } from './helpers.js';

const secret = 'api-test-secret-with-at-least-32-bytes!';
const token = (plan: string, role: 'read' | 'write' | 'admin', sub = 'ana') =>
  signToken(secret, { plan, role, sub });

interface Answer {
  status: number;
  type: string | null;
  // biome-ignore lint/suspicious/noExplicitAny: JSON answers, read field by field in the assertions
  body: any;
}

async function call(
  server: TestServer,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; raw?: string } = {},
): Promise<Answer> {
  const response = await fetch(`${server.http}${path}`, {
    method,
    headers: {
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      // Every write says it is JSON, even without a body (the server refuses it otherwise: 415).
      ...(method !== 'GET' ? { 'content-type': 'application/json' } : {}),
    },
    ...(options.raw !== undefined
      ? { body: options.raw }
      : options.body !== undefined
        ? { body: JSON.stringify(options.body) }
        : {}),
  });
  const type = response.headers.get('content-type');
  const text = await response.text();
  return {
    status: response.status,
    type,
    body: type?.startsWith('application/json') ? JSON.parse(text) : text,
  };
}

/** A Cairn WebSocket client's view of a plan, once synced. */
async function watcher(server: TestServer, planId: string, options: { token?: string } = {}): Promise<Plan> {
  const doc = new Y.Doc();
  const conn = cairnClient(server.url, planId, doc, options.token ? { token: options.token } : {});
  await conn.whenSynced();
  return createPlan({ doc, actor: 'user:watcher' });
}

/** Seeds tasks created at increasing times from `start`, one millisecond apart, so their order is known. */
function seed(server: TestServer, planId: string, inputs: TaskInput[], start = 1_000): Promise<string[]> {
  let clock = start;
  return seedPlan(server, planId, inputs, () => clock++);
}

describe('GET /api/plans/:plan/tasks', () => {
  it('lists open tasks first, newest first, at most 30 unless a limit is given', async () => {
    const server = await startServer({ secret });
    const open = Array.from({ length: 35 }, (_, i) => ({ title: `Open ${i + 1}` }));
    const openIds = await seed(server, 'acme:1', open, 1_000);
    const closedIds = await seed(
      server,
      'acme:1',
      [
        { title: 'Closed A', status: 'done' },
        { title: 'Closed B', status: 'cancelled', steps: [{ title: 'A step' }] },
      ],
      5_000,
    );
    await seed(server, 'acme:1', [{ title: 'A step of Open 1', parent: openIds[0]! }], 6_000);
    const reader = await token('acme:1', 'read');

    const first = await call(server, 'GET', '/api/plans/acme%3A1/tasks', { token: reader });
    expect(first.status).toBe(200);
    expect(first.body.total).toBe(35);
    expect(first.body.limit).toBe(30);
    expect(first.body.tasks.map((t: { title: string }) => t.title)).toEqual(
      open
        .map((t) => t.title)
        .reverse()
        .slice(0, 30),
    );

    const all = await call(server, 'GET', '/api/plans/acme%3A1/tasks?includeClosed=1&limit=40', {
      token: reader,
    });
    expect(all.body.total).toBe(37);
    expect(all.body.tasks.map((t: { id: string }) => t.id)).toEqual([
      ...[...openIds].reverse(),
      closedIds[1],
      closedIds[0],
    ]);
    // Steps come with their task, not as tasks of their own.
    const openOne = all.body.tasks.find((t: { id: string }) => t.id === openIds[0]);
    expect(openOne.steps).toEqual([{ id: expect.any(String), title: 'A step of Open 1', status: 'pending' }]);

    const one = await call(server, 'GET', `/api/plans/acme%3A1/tasks/${openIds[0]}`, { token: reader });
    expect(one.body.task).toMatchObject({ id: openIds[0], title: 'Open 1', createdBy: 'agent:seed' });
  });

  it('refuses bad query values and unknown plans, saying what is valid, and creates nothing', async () => {
    const server = await startServer({ secret });
    await seed(server, 'acme:1', [{ title: 'Only' }]);
    const reader = await token('acme:*', 'read');
    const before = (await readdir(server.dir)).sort();

    const limit = await call(server, 'GET', '/api/plans/acme%3A1/tasks?limit=0', { token: reader });
    expect(limit.status).toBe(400);
    expect(limit.body.error).toMatchObject({ code: 'invalid_argument', field: 'limit', min: 1, max: 500 });
    expect(limit.body.error.message).toMatch(/integer from 1 to 500/);
    const flag = await call(server, 'GET', '/api/plans/acme%3A1/tasks?includeClosed=maybe', {
      token: reader,
    });
    expect(flag.body.error.message).toMatch(/includeClosed=1 or includeClosed=0/);

    const unknown = await call(server, 'GET', '/api/plans/acme%3A404/tasks', { token: reader });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ code: 'not_found', planId: 'acme:404' });
    expect(unknown.body.error.message).toMatch(/created by its first write/);
    const unknownByTool = await call(server, 'POST', '/api/plans/acme%3A404/tools/list_tasks', {
      token: reader,
      body: {},
    });
    expect(unknownByTool.status).toBe(404);
    const unknownTask = await call(server, 'GET', '/api/plans/acme%3A1/tasks/nope', { token: reader });
    expect(unknownTask.status).toBe(404);
    expect(unknownTask.body.error.message).toMatch(/known ids: /);
    expect((await readdir(server.dir)).sort()).toEqual(before);
  });
});

describe('PATCH /api/plans/:plan/tasks/:taskId', () => {
  it('changes the status as user:<sub>, appends the note, and live clients see it at once', async () => {
    const server = await startServer({ secret });
    const [id] = await seed(server, 'acme:1', [{ title: "Book a table at Luigi's", status: 'waiting_user' }]);
    const live = await watcher(server, 'acme:1', { token: await token('acme:1', 'read', 'viewer') });
    const seen = until(live, (p) => p.get(id!)?.status === 'done');

    const patched = await call(server, 'PATCH', `/api/plans/acme%3A1/tasks/${id}`, {
      token: await token('acme:1', 'write', 'ana'),
      body: { status: 'done', note: 'Booked for 8 pm.' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.task).toMatchObject({
      id,
      status: 'done',
      updatedBy: 'user:ana',
      note: 'Booked for 8 pm.',
    });
    await seen;
    expect(live.get(id!)).toMatchObject({ status: 'done', updatedBy: 'user:ana' });

    // Closed tasks leave the default list; the change was stored before the answer (it survives a restart).
    const list = await call(server, 'GET', '/api/plans/acme%3A1/tasks', {
      token: await token('acme:1', 'read'),
    });
    expect(list.body.tasks).toEqual([]);
    await server.server.close();
    const again = await startServer({ secret, dataDir: server.dir });
    const stored = await call(again, 'GET', `/api/plans/acme%3A1/tasks/${id}`, {
      token: await token('acme:1', 'read'),
    });
    expect(stored.body.task).toMatchObject({ status: 'done', note: 'Booked for 8 pm.' });
  });

  it('takes the task number the tools give, and closing a task closes its open steps with it', async () => {
    const server = await startServer({ secret });
    const [trip, passport] = await seed(server, 'acme:1', [
      {
        title: 'Plan the trip',
        steps: [
          { title: 'Book flights', status: 'done' },
          { title: 'Book the hotel' },
          { title: 'Rent a car' },
        ],
      },
      { title: 'Renew the passport', steps: [{ title: 'Take a photo', status: 'in_progress' }] },
    ]);
    const writer = await token('acme:1', 'write');
    // The second task is number 2 (steps use up no numbers), as ongoing_task's taskId says.
    const read = await call(server, 'GET', '/api/plans/acme%3A1/tasks/2', { token: writer });
    expect(read.body.task).toMatchObject({ id: passport, number: 2 });
    const patched = await call(server, 'PATCH', '/api/plans/acme%3A1/tasks/2', {
      token: writer,
      body: { status: 'done' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.task).toMatchObject({ id: passport, status: 'done', steps: [{ status: 'skipped' }] });
    const cancelled = await call(server, 'PATCH', `/api/plans/acme%3A1/tasks/${trip}`, {
      token: writer,
      body: { status: 'cancelled' },
    });
    expect(cancelled.body.task.steps.map((s: { status: string }) => s.status)).toEqual([
      'done',
      'skipped',
      'skipped',
    ]);
    const list = await call(server, 'GET', '/api/plans/acme%3A1/tasks?includeClosed=1', { token: writer });
    expect(list.body.tasks.map((t: { number: number }) => t.number).sort()).toEqual([1, 2]);
    const missing = await call(server, 'PATCH', '/api/plans/acme%3A1/tasks/3', {
      token: writer,
      body: { status: 'done' },
    });
    expect(missing.status).toBe(404);
  });

  it('refuses bad bodies, unknown tasks and forbidden transitions, changing nothing', async () => {
    const server = await startServer({ secret });
    const [id] = await seed(server, 'acme:1', [{ title: 'Top level' }]);
    const writer = await token('acme:1', 'write');
    const before = await serverState(server, 'acme:1');
    const path = `/api/plans/acme%3A1/tasks/${id}`;

    const badJson = await call(server, 'PATCH', path, { token: writer, raw: '{"status": "done"' });
    expect(badJson.status).toBe(400);
    expect(badJson.body.error).toMatchObject({ code: 'invalid_argument', field: 'body' });
    expect(badJson.body.error.message).toMatch(/not valid JSON/);
    const empty = await call(server, 'PATCH', path, { token: writer, raw: '' });
    expect(empty.body.error.message).toMatch(/empty/);
    const badStatus = await call(server, 'PATCH', path, { token: writer, body: { status: 'finished' } });
    expect(badStatus.status).toBe(400);
    expect(badStatus.body.error.valid.status).toContain('cancelled');
    expect(badStatus.body.error.message).toMatch(/pending \| in_progress/);
    const extra = await call(server, 'PATCH', path, { token: writer, body: { status: 'done', title: 'x' } });
    expect(extra.body.error.message).toMatch(/title/);
    const skipped = await call(server, 'PATCH', path, { token: writer, body: { status: 'skipped' } });
    expect(skipped.status).toBe(409);
    expect(skipped.body.error).toMatchObject({ code: 'invalid_transition' });
    expect(skipped.body.error.message).toMatch(/use cancelled instead/);
    const unknownTask = await call(server, 'PATCH', '/api/plans/acme%3A1/tasks/nope', {
      token: writer,
      body: { status: 'done' },
    });
    expect(unknownTask.status).toBe(404);
    expect(unknownTask.body.error.known).toEqual([id]);
    const unknownPlan = await call(
      server,
      'PATCH',
      `/api/plans/acme%3A1/tasks/${id}`.replace('acme%3A1', 'acme%3A2'),
      {
        token: await token('acme:*', 'write'),
        body: { status: 'done' },
      },
    );
    expect(unknownPlan.status).toBe(404);
    const wrongMethod = await call(server, 'DELETE', path, { token: writer });
    expect(wrongMethod.status).toBe(405);

    expect(await serverState(server, 'acme:1')).toEqual(before);
  });
});

describe('GET /api/plans/:plan/context', () => {
  it('renders each format as text/plain, with who is here from awareness', async () => {
    const server = await startServer({ secret });
    const [id] = await seed(server, 'acme:1', [
      {
        title: 'Write the report',
        status: 'in_progress',
        assignee: 'agent:scout',
        steps: [{ title: 'Outline' }],
      },
    ]);
    const doc = new Y.Doc();
    const conn = cairnClient(server.url, 'acme:1', doc, {
      token: await token('acme:1', 'read', 'scout'),
      presence: { id: 'agent:scout', name: 'Scout', kind: 'agent', activeTask: id! },
    });
    await conn.whenSynced();
    const reader = await token('acme:1', 'read', 'boss');
    const expected: Record<string, RegExp> = {
      checklist: /### Current Tasks[\s\S]*Write the report/,
      reminder: /Write the report/,
      'open-tasks': /## Open Tasks In This Conversation[\s\S]*Write the report[\s\S]*Outline/,
      native: /Write the report/,
    };
    for (const [format, pattern] of Object.entries(expected)) {
      const answer = await call(server, 'GET', `/api/plans/acme%3A1/context?format=${format}`, {
        token: reader,
      });
      expect(answer.status).toBe(200);
      expect(answer.type).toMatch(/^text\/plain/);
      expect(answer.body).toMatch(pattern);
    }
    // Awareness reaches the server a moment after the sync; the native format then says who is here.
    await expect
      .poll(async () => (await call(server, 'GET', '/api/plans/acme%3A1/context', { token: reader })).body)
      .toMatch(/Here now: agent:scout/);

    const bad = await call(server, 'GET', '/api/plans/acme%3A1/context?format=xml', { token: reader });
    expect(bad.status).toBe(400);
    expect(bad.body.error.valid).toEqual(['checklist', 'reminder', 'open-tasks', 'native']);
  });

  it('answers a plan nobody wrote yet with an empty context (200), as for a cleared plan, creating nothing', async () => {
    const server = await startServer({ secret });
    const answer = await call(server, 'GET', '/api/plans/acme%3Anew/context?format=checklist', {
      token: await token('acme:*', 'read'),
    });
    expect(answer).toMatchObject({ status: 200, body: '' });
    expect(answer.type).toMatch(/^text\/plain/);
    expect((await readdir(server.dir)).filter((name) => name.includes('new'))).toEqual([]);
  });
});

describe('GET /api/plans/:plan/context?since=', () => {
  it('answers with what others changed since a cursor, and a new cursor (header or JSON)', async () => {
    const server = await startServer({ secret });
    const [id] = await seed(server, 'acme:1', [{ title: 'Write the report' }, { title: 'Send it' }]);
    const scout = await token('acme:1', 'write', 'scout');
    const path = '/api/plans/acme%3A1/context?format=checklist';
    const first = await fetch(`${server.http}${path}`, { headers: { authorization: `Bearer ${scout}` } });
    expect(first.headers.get('cairn-context')).toBe('full');
    expect(await first.text()).toMatch(/- \[ \] 1\. Write the report/);
    const cursor = first.headers.get('cairn-cursor')!;
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);

    // Nothing changed: an empty answer, which costs no tokens.
    const quiet = await call(server, 'GET', `${path}&since=${cursor}`, { token: scout });
    expect(quiet).toMatchObject({ status: 200, body: '' });
    // Another agent finishes a task; the scout's own change is left out of its delta.
    await call(server, 'POST', '/api/plans/acme%3A1/tools/update_tasks', {
      token: await token('acme:1', 'write', 'b'),
      body: { updates: [{ id, status: 'done' }] },
    });
    const delta = await fetch(`${server.http}${path}&since=${cursor}`, {
      headers: { authorization: `Bearer ${scout}`, accept: 'application/json' },
    });
    const body = await delta.json();
    expect(body).toMatchObject({
      kind: 'delta',
      text: 'Changes since your last turn:\n- task 1 "Write the report" done by agent:b',
    });
    expect(body.cursor).not.toBe(cursor);
    const after = await call(server, 'GET', `${path}&since=${body.cursor}`, { token: scout });
    expect(after.body).toBe('');

    // A cursor of another plan: the whole plan, and it says so.
    await seed(server, 'acme:2', [{ title: 'Other' }, { title: 'More' }, { title: 'Still more' }]);
    const other = await fetch(`${server.http}/api/plans/acme%3A2/context`, {
      headers: { authorization: `Bearer ${await token('acme:2', 'read')}` },
    });
    const foreign = other.headers.get('cairn-cursor')!;
    const unknown = await fetch(`${server.http}${path}&since=${foreign}`, {
      headers: { authorization: `Bearer ${scout}` },
    });
    expect(unknown.headers.get('cairn-context')).toBe('full_unknown_cursor');
    expect(await unknown.text()).toMatch(/^\(The cursor given is not one of this plan's[\s\S]*Send it/);
    const malformed = await call(server, 'GET', `${path}&since=%25%25`, { token: scout });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.message).toMatch(/A cursor is the opaque string/);
  });
});

describe('tool calls with a cursor', () => {
  it('add what others did since the caller’s previous call, and a new cursor', async () => {
    const server = await startServer({ secret });
    const [id] = await seed(server, 'acme:1', [{ title: 'Write the report' }, { title: 'Send it' }]);
    const scout = await token('acme:1', 'write', 'scout');
    const first = await fetch(`${server.http}/api/plans/acme%3A1/tools/list_tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${scout}`, 'content-type': 'application/json' },
      body: '{}',
    });
    const cursor = first.headers.get('cairn-cursor')!;
    expect((await first.json()).count).toBe(2); // without since, the result as it is
    await call(server, 'POST', '/api/plans/acme%3A1/tools/update_tasks', {
      token: await token('acme:1', 'write', 'b'),
      body: { updates: [{ id, status: 'done' }] },
    });
    const next = await call(server, 'POST', `/api/plans/acme%3A1/tools/add_tasks?since=${cursor}`, {
      token: scout,
      body: { tasks: [{ title: 'Archive it' }] },
    });
    expect(next.status).toBe(200);
    expect(next.body.result.added[0]).toMatchObject({ title: 'Archive it' });
    // Its own add is not news; agent:b's change is.
    expect(next.body.sinceLastCall).toBe(
      'Since your last call:\n- task 1 "Write the report" done by agent:b',
    );
    const again = await call(
      server,
      'POST',
      `/api/plans/acme%3A1/tools/list_tasks?since=${next.body.cursor}`,
      {
        token: scout,
        body: {},
      },
    );
    expect(again.body.sinceLastCall).toBe('');
  });
});

describe('POST /api/plans/:plan/context', () => {
  const seed002 = [
    { section: 'agent_identity', role: 'system', tool: 'agent_identity', skip_if_empty: true },
    { section: 'agent_profile', role: 'system', tool: 'nostr_agent_profile', skip_if_empty: true },
    { section: 'changes', role: 'system', tool: 'plan_changes', skip_if_empty: true },
    { section: 'tasks', role: 'system', tool: 'task_list', skip_if_empty: true },
  ];

  it("resolves seed 002's template for the token's agent, with what others did since a cursor", async () => {
    const server = await startServer({ secret });
    const [id] = await seed(server, 'acme:1', [{ title: 'Publish the relay list' }]);
    const reader = await token('acme:1', 'read', 'local');
    const first = await call(server, 'POST', '/api/plans/acme%3A1/context', {
      token: reader,
      body: { template: seed002, identity: { name: 'Didactyl' } },
    });
    expect(first.status).toBe(200);
    expect(first.body.messages).toEqual([
      {
        role: 'system',
        content: 'You are Didactyl (agent:local). Your changes to the plan are recorded as agent:local.',
      },
      {
        role: 'system',
        content:
          '### Current Tasks\n\nYour active task list - short-term working memory for tracking plan steps.\n\n' +
          '- [ ] 1. Publish the relay list',
      },
    ]);
    expect(first.body.warnings).toEqual([expect.stringMatching(/"agent_profile" left out/)]);

    await call(server, 'POST', '/api/plans/acme%3A1/tools/update_tasks', {
      token: await token('acme:1', 'write', 'b'),
      body: { updates: [{ id, status: 'done' }] },
    });
    const next = await call(server, 'POST', '/api/plans/acme%3A1/context', {
      token: reader,
      body: { template: seed002, since: first.body.cursor },
    });
    expect(next.body.messages[1]).toEqual({
      role: 'system',
      content: 'Changes since your last turn:\n- task 1 "Publish the relay list" done by agent:b',
    });

    const bad = await call(server, 'POST', '/api/plans/acme%3A1/context', {
      token: reader,
      body: { template: [{ section: 'x', role: 'robot', content: 'x' }] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/template\.0\.role/);
    const badCursor = await call(server, 'POST', '/api/plans/acme%3A1/context', {
      token: reader,
      body: { template: seed002, since: '***' },
    });
    expect(badCursor.status).toBe(400);
    const required = await call(server, 'POST', '/api/plans/acme%3A1/context', {
      token: reader,
      body: { template: [{ section: 'p', role: 'system', tool: 'nostr_agent_profile' }] },
    });
    expect(required.status).toBe(400);
    expect(required.body.error.message).toMatch(
      /Unknown context tool "nostr_agent_profile"; known: .*task_list/,
    );
  });
});

describe('tools over HTTP', () => {
  it('hands out definitions in each format and family', async () => {
    const server = await startServer({ secret });
    const reader = await token('acme:1', 'read');
    const openai = await call(server, 'GET', '/api/plans/acme%3A1/tools?format=openai', { token: reader });
    expect(openai.status).toBe(200);
    expect(openai.body.families).toEqual(['cairn']);
    expect(openai.body.tools[0]).toMatchObject({ type: 'function', function: { name: 'add_tasks' } });
    const anthropic = await call(server, 'GET', '/api/plans/acme%3A1/tools?format=anthropic', {
      token: reader,
    });
    expect(anthropic.body.tools[0]).toMatchObject({ name: 'add_tasks', input_schema: { type: 'object' } });
    const mcp = await call(server, 'GET', '/api/plans/acme%3A1/tools?format=mcp&families=ongoing_task,todo', {
      token: reader,
    });
    expect(mcp.body.tools.map((t: { name: string }) => t.name)).toEqual(
      expect.arrayContaining(['set_ongoing_task', 'get_ongoing_task', 'clear_ongoing_task']),
    );
    expect(mcp.body.tools[0].inputSchema).toMatchObject({ type: 'object' });
    // The compact native tools are a family of their own.
    const compact = await call(server, 'GET', '/api/plans/acme%3A1/tools?families=cairn_compact', {
      token: reader,
    });
    expect(compact.body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual([
      'read_tasks',
      'write_tasks',
      'claim_task',
    ]);

    const badFormat = await call(server, 'GET', '/api/plans/acme%3A1/tools?format=gemini', { token: reader });
    expect(badFormat.body.error).toMatchObject({
      code: 'invalid_argument',
      valid: ['openai', 'anthropic', 'mcp'],
    });
    const badFamily = await call(server, 'GET', '/api/plans/acme%3A1/tools?families=cairn,jira', {
      token: reader,
    });
    expect(badFamily.body.error.message).toMatch(/Unknown tool family jira; families: cairn, task_manage/);
  });

  it('runs calls as agent:<sub> (or an actor of the token via ?as=), and clients see the edits', async () => {
    const server = await startServer({ secret });
    const live = await watcher(server, 'acme:1', { token: await token('acme:1', 'read', 'viewer') });
    const writer = await token('acme:1', 'write', 'scout');
    const added = await call(server, 'POST', '/api/plans/acme%3A1/tools/add_tasks', {
      token: writer,
      body: { tasks: [{ title: 'Draft the post', steps: ['Outline', 'Write'] }] },
    });
    expect(added.status).toBe(200);
    const id = added.body.added[0].id as string;
    await until(live, (p) => p.has(id));
    expect(live.get(id)).toMatchObject({ title: 'Draft the post', createdBy: 'agent:scout' });

    // Arguments as the raw JSON text a model produced work too; ?as= picks another actor of the same subject.
    const asUser = await call(server, 'POST', '/api/plans/acme%3A1/tools/update_tasks?as=user:scout', {
      token: writer,
      raw: JSON.stringify({ updates: [{ id, status: 'in_progress' }] }),
    });
    expect(asUser.status).toBe(200);
    await until(live, (p) => p.get(id)?.status === 'in_progress');
    expect(live.get(id)?.updatedBy).toBe('user:scout');
    const asHelper = await call(
      server,
      'POST',
      '/api/plans/acme%3A1/tools/set_ongoing_task?as=agent:scout/helper',
      {
        token: writer,
        body: { task: 'Book a table', status: 'waiting_user', nextStep: 'Ask for the time' },
      },
    );
    expect(asHelper.status).toBe(200);
    expect(asHelper.body).toMatchObject({ created: true, updatedBy: 'agent:scout/helper', source: 'agent' });

    // A read-only tool needs only a read token; a write needs write.
    const reader = await token('acme:1', 'read', 'viewer');
    const listed = await call(server, 'POST', '/api/plans/acme%3A1/tools/list_tasks', {
      token: reader,
      body: {},
    });
    expect(listed.status).toBe(200);
    expect(listed.body.count).toBeGreaterThan(0);
    const noArgs = await call(server, 'POST', '/api/plans/acme%3A1/tools/get_ongoing_task', {
      token: reader,
    });
    expect(noArgs.body).toMatchObject({ count: 2 }); // the drafted post and the booking
  });

  it('answers refused calls with the tool error and its status, changing nothing', async () => {
    const server = await startServer({ secret });
    const [id] = await seed(server, 'acme:1', [{ title: 'Existing' }]);
    const writer = await token('acme:1', 'write', 'scout');
    const before = await serverState(server, 'acme:1');

    const unknownId = await call(server, 'POST', '/api/plans/acme%3A1/tools/update_tasks', {
      token: writer,
      body: { updates: [{ id: 'nope', status: 'done' }] },
    });
    expect(unknownId.status).toBe(404);
    expect(unknownId.body.error).toMatchObject({ code: 'not_found' });
    expect(unknownId.body.error.message).toContain(id);
    const badArgs = await call(server, 'POST', '/api/plans/acme%3A1/tools/add_tasks', {
      token: writer,
      body: { task: 'wrong shape' },
    });
    expect(badArgs.status).toBe(400);
    expect(badArgs.body.error.message).toMatch(/Expected: add_tasks\(/);
    const badJson = await call(server, 'POST', '/api/plans/acme%3A1/tools/add_tasks', {
      token: writer,
      raw: '{tasks',
    });
    expect(badJson.status).toBe(400);
    expect(badJson.body.error.message).toMatch(/not valid JSON/);
    const unknownTool = await call(server, 'POST', '/api/plans/acme%3A1/tools/drop_database', {
      token: writer,
      body: {},
    });
    expect(unknownTool.status).toBe(404);
    expect(unknownTool.body.error).toMatchObject({ code: 'unknown_tool' });
    expect(unknownTool.body.error.valid).toEqual(
      expect.arrayContaining(['add_tasks', 'set_ongoing_task', 'TodoWrite']),
    );
    const outsideFamilies = await call(server, 'POST', '/api/plans/acme%3A1/tools/add_tasks?families=todo', {
      token: writer,
      body: { tasks: [{ title: 'x' }] },
    });
    expect(outsideFamilies.body.error.message).toMatch(/in the families todo/);
    const someoneElse = await call(server, 'POST', '/api/plans/acme%3A1/tools/add_tasks?as=agent:mallory', {
      token: writer,
      body: { tasks: [{ title: 'Impersonated' }] },
    });
    expect(someoneElse.status).toBe(403);
    expect(someoneElse.body.error.message).toMatch(/may act as agent:scout/);
    const system = await call(server, 'POST', '/api/plans/acme%3A1/tools/add_tasks?as=wake', {
      token: writer,
      body: { tasks: [{ title: 'As the sweeper' }] },
    });
    expect(system.status).toBe(400);

    expect(await serverState(server, 'acme:1')).toEqual(before);
  });

  it('bounds the work one request may ask for: at most 1,000 objects and arrays in a body (413), changing nothing', async () => {
    const server = await startServer();
    await seed(server, 'p', [{ title: 'T' }]);
    const before = await serverState(server, 'p');
    const tasks = Array.from({ length: 200 }, (_, i) => ({
      title: `t${i}`,
      steps: Array.from({ length: 200 }, (_, j) => ({ title: `s${j}` })),
    }));
    const started = performance.now();
    const huge = await call(server, 'POST', '/api/plans/p/tools/add_tasks', { body: { tasks } });
    expect(huge.status).toBe(413);
    expect(huge.body.error).toMatchObject({
      code: 'limit',
      maxNodes: 1000,
      message: expect.stringMatching(/split the call/),
    });
    expect(performance.now() - started).toBeLessThan(5_000); // it held the server for about 10 s before
    expect(await serverState(server, 'p')).toEqual(before);
    const fits = Array.from({ length: 20 }, (_, i) => ({
      title: `u${i}`,
      steps: [{ title: 'a' }, { title: 'b' }],
    }));
    expect(
      (await call(server, 'POST', '/api/plans/p/tools/add_tasks', { body: { tasks: fits } })).status,
    ).toBe(200);
  });

  it('runs open on loopback without a secret, as agent:local and user:local', async () => {
    const server = await startServer();
    const added = await call(server, 'POST', '/api/plans/demo/tools/add_tasks', {
      body: { tasks: [{ title: 'Open mode task' }] },
    });
    const id = added.body.added[0].id as string;
    const patched = await call(server, 'PATCH', `/api/plans/demo/tasks/${id}`, {
      body: { status: 'cancelled' },
    });
    expect(patched.body.task).toMatchObject({
      createdBy: 'agent:local',
      updatedBy: 'user:local',
      status: 'cancelled',
    });
    const asAnyone = await call(server, 'POST', '/api/plans/demo/tools/add_tasks?as=agent:scout', {
      body: { tasks: [{ title: 'Named' }] },
    });
    expect(asAnyone.status).toBe(200);
  });
});

describe('security over HTTP', () => {
  it('refuses no token, a bad signature, an expired token, another plan and a read-only writer; nothing changes', async () => {
    const server = await startServer({ secret });
    const [id] = await seed(server, 'acme:1', [{ title: 'Guarded' }]);
    const [otherId] = await seed(server, 'acme:2', [{ title: 'Neighbour' }]);
    const neighbour = await watcher(server, 'acme:2', { token: await token('acme:2', 'read', 'viewer') });
    const before = await serverState(server, 'acme:1');
    const otherBefore = await serverState(server, 'acme:2');

    const forged = await signToken('another-secret-that-is-also-long-enough!', {
      plan: 'acme:1',
      role: 'admin',
    });
    const expired = await new SignJWT({ plan: 'acme:1', role: 'admin' })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime(Math.floor(Date.now() / 1000) - 3600)
      .sign(new TextEncoder().encode(secret));
    const otherPlan = await token('acme:2', 'admin');
    const readOnly = await token('acme:1', 'read');
    const refusals: Array<[string, string | undefined, number, RegExp]> = [
      ['no token', undefined, 401, /Authorization: Bearer/],
      ['bad signature', forged, 401, /signature/],
      ['expired', expired, 401, /expired/],
      ['another plan', otherPlan, 403, /for plan "acme:2", not "acme:1"/],
      ['garbage', 'not-a-jwt', 401, /malformed/],
    ];
    const writes = [
      { method: 'PATCH', path: `/api/plans/acme%3A1/tasks/${id}`, body: { status: 'done' } },
      {
        method: 'POST',
        path: '/api/plans/acme%3A1/tools/add_tasks',
        body: { tasks: [{ title: 'Intruder' }] },
      },
      { method: 'POST', path: '/api/plans/acme%3A1/tools/remove_tasks', body: { ids: [id] } },
      { method: 'POST', path: '/api/plans/acme%3A1/judge', body: {} },
    ];
    const reads = [
      { method: 'GET', path: '/api/plans/acme%3A1/tasks' },
      { method: 'GET', path: '/api/plans/acme%3A1/context' },
      { method: 'GET', path: '/api/plans/acme%3A1/tools' },
      { method: 'POST', path: '/api/plans/acme%3A1/tools/list_tasks', body: {} },
    ];
    for (const [what, bearer, status, message] of refusals) {
      for (const request of [...writes, ...reads]) {
        const answer = await call(server, request.method, request.path, {
          ...(bearer ? { token: bearer } : {}),
          ...(request.body ? { body: request.body } : {}),
        });
        expect({ what, path: request.path, status: answer.status }).toEqual({
          what,
          path: request.path,
          status,
        });
        expect(answer.body.error.message).toMatch(message);
      }
    }
    for (const request of writes) {
      const answer = await call(server, request.method, request.path, {
        token: readOnly,
        body: request.body,
      });
      expect(answer.status).toBe(403);
      expect(answer.body.error).toMatchObject({ code: 'forbidden', role: 'read', needs: 'write' });
    }

    expect(await serverState(server, 'acme:1')).toEqual(before);
    expect(await serverState(server, 'acme:2')).toEqual(otherBefore);
    expect(neighbour.list().map((t) => t.id)).toEqual([otherId]);
    // The neighbour's plan still works for its own token.
    const ok = await call(server, 'PATCH', `/api/plans/acme%3A2/tasks/${otherId}`, {
      token: await token('acme:2', 'write'),
      body: { status: 'done' },
    });
    expect(ok.status).toBe(200);
    await until(neighbour, (p) => p.get(otherId!)?.status === 'done');
  });
});

describe('a task with open steps over HTTP', () => {
  it('claim_next hands out its steps first, and PATCH closing it closes them as skipped, by the same actor', async () => {
    const server = await startServer({ secret });
    const [launch] = await seed(server, 'acme:p', [
      {
        title: 'Product launch',
        steps: [{ title: 'Write the announcement', status: 'done' }, { title: 'Review it' }],
      },
    ]);
    const writer = await token('acme:p', 'write');
    const claimed = await call(server, 'POST', '/api/plans/acme%3Ap/tools/claim_next', {
      token: writer,
      body: {},
    });
    expect(claimed.body).toMatchObject({ outcome: 'won', task: { title: 'Review it' } });
    const none = await call(server, 'POST', '/api/plans/acme%3Ap/tools/claim_next', {
      token: writer,
      body: {},
    });
    expect(none.body).toMatchObject({ outcome: 'none' });

    const patched = await call(server, 'PATCH', `/api/plans/acme%3Ap/tasks/${launch}`, {
      token: writer,
      body: { status: 'done' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.task.steps.map((s: { status: string }) => s.status)).toEqual(['done', 'skipped']);
    const plan = await watcher(server, 'acme:p', { token: writer });
    const review = plan.children(launch!).find((s) => s.title === 'Review it')!;
    expect(review.updatedBy).toBe(patched.body.task.updatedBy);
    expect(plan.list({ state: 'open' })).toEqual([]);
  });
});
