// The example worker (apps/cloudflare) in workerd: sync with the stock y-websocket client and Cairn's client,
// acknowledgements, auth refusals, the plan API's answers, bad input, a wake-up, a lease lapse and a judge's close
// fired from the object's one alarm, hibernation, and kill -9 of the runtime during acknowledged writes.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createChat, createPlan } from '@cairn/core';
import { until } from '@cairn/core/testing';
import * as encoding from 'lib0/encoding';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import { CloseCode, MessageType, signToken } from '../../../packages/server/src/index.js';
import { SUBPROTOCOL } from '../../../packages/server/src/wire.js';
import { cairnClient, rawClient } from '../../../packages/server/test/helpers.js';
import { writerAndStockReader } from './clients.js';
import { type RunningWorkerd, startWorkerd } from './workerd.js';

const SECRET = 'edge-test-secret-edge-test-secret-0123456789';
const LEASE_MS = 600;

/** A judge endpoint speaking the chat-completions protocol: completes every task it is shown. */
function startJudge(): Promise<{ url: string; calls: number; server: Server }> {
  const judge = { url: '', calls: 0, server: null as unknown as Server };
  judge.server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    judge.calls++;
    const shown = JSON.parse(body.messages.at(-1).content) as { tasks: Array<{ id: string }> };
    const content = JSON.stringify({
      tasks: shown.tasks.map((t) => ({
        id: t.id,
        completed: 0.95,
        abandoned: 0.01,
        reason: 'Done in the chat.',
      })),
    });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: `chatcmpl-${judge.calls}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      }),
    );
  });
  return new Promise((resolve) =>
    judge.server.listen(0, '127.0.0.1', () => {
      judge.url = `http://127.0.0.1:${(judge.server.address() as AddressInfo).port}/v1`;
      resolve(judge);
    }),
  );
}

const token = (plan: string, role: 'read' | 'write' | 'admin' = 'write', sub = 'agent:edge', ttl?: number) =>
  signToken(SECRET, { plan, role, sub }, ttl === undefined ? {} : { ttl });

async function api(
  w: RunningWorkerd,
  plan: string,
  path: string,
  init: RequestInit & { token?: string } = {},
) {
  const { token: bearer, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (bearer) headers.set('authorization', `Bearer ${bearer}`);
  if (rest.body) headers.set('content-type', 'application/json');
  const response = await fetch(`${w.url}/api/plans/${encodeURIComponent(plan)}${path}`, { ...rest, headers });
  // biome-ignore lint/suspicious/noExplicitAny: JSON answers, read only by the assertions
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

let w: RunningWorkerd;
let judge: Awaited<ReturnType<typeof startJudge>>;
const ws = () => `ws://127.0.0.1:${w.port}`;

beforeAll(async () => {
  judge = await startJudge();
  w = await startWorkerd({
    vars: {
      CAIRN_SECRET: SECRET,
      CAIRN_LEASE_MS: String(LEASE_MS),
      CAIRN_JUDGE_URL: judge.url,
      CAIRN_JUDGE_MODEL: 'judge-1',
    },
  });
});
afterAll(async () => {
  await w?.dispose();
  judge?.server.close();
});

describe('the Durable Object host in workerd', () => {
  it('syncs a stock y-websocket client with Cairn client edits, and acknowledges them once stored', async () => {
    const plan = 'acme:sync';
    const {
      writerDoc: writer,
      writer: conn,
      readerDoc: reader,
    } = await writerAndStockReader(ws(), plan, {
      write: await token(plan),
      read: await token(plan, 'read'),
    });
    const task = createPlan({ doc: writer, actor: 'agent:edge' }).add({ title: 'Ship to the edge' });
    await conn.whenAcknowledged();
    const view = createPlan({ doc: reader, actor: 'user:reader' });
    await until(view, (p) => p.get(task.id)?.title === 'Ship to the edge');
    const read = await api(w, plan, `/tasks/${task.id}`, { token: await token(plan, 'read') });
    expect(read.status).toBe(200);
    expect(read.body.task).toMatchObject({ id: task.id, title: 'Ship to the edge', createdBy: 'agent:edge' });
  });

  it('refuses sockets as cairn serve does: no token, a bad one, an expired one, another plan', async () => {
    const plan = 'acme:auth';
    const cases: Array<[string, { token?: string }, number]> = [
      ['none', {}, CloseCode.Unauthorized],
      ['bad', { token: 'not-a-jwt' }, CloseCode.Unauthorized],
      ['expired', { token: await token(plan, 'write', 'agent:edge', -60) }, CloseCode.Unauthorized],
      ['other plan', { token: await token('acme:other') }, CloseCode.Forbidden],
    ];
    for (const [name, options, code] of cases) {
      const client = rawClient(ws(), plan, options);
      expect((await client.closed).code, name).toBe(code);
    }
    // The token may travel as a subprotocol too; the server never echoes it back.
    const viaProtocol = rawClient(ws(), plan, {
      protocols: [SUBPROTOCOL, `cairn.token.${await token(plan)}`],
    });
    await viaProtocol.opened;
    expect(viaProtocol.ws.protocol).toBe(SUBPROTOCOL);
  });

  it('answers the plan API as cairn serve does: 401, 403 for a reader, 404 for an unknown plan, 400 for bad input', async () => {
    const plan = 'acme:api';
    expect((await api(w, plan, '/tasks')).status).toBe(401);
    const unknown = await api(w, plan, '/tasks', { token: await token(plan, 'read') });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
    const denied = await api(w, plan, '/tools/add_tasks', {
      method: 'POST',
      token: await token(plan, 'read'),
      body: JSON.stringify({ tasks: [{ title: 'x' }] }),
    });
    expect(denied.status).toBe(403);
    const bad = await api(w, plan, '/tools/add_tasks', {
      method: 'POST',
      token: await token(plan),
      body: JSON.stringify({ tasks: [{ nope: 1 }] }),
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/title/);
    const added = await api(w, plan, '/tools/add_tasks', {
      method: 'POST',
      token: await token(plan),
      body: JSON.stringify({ tasks: [{ title: 'Over HTTP' }] }),
    });
    expect(added.status).toBe(200);
    const list = await api(w, plan, '/tasks', { token: await token(plan, 'read') });
    expect(list.body.tasks.map((t: { title: string }) => t.title)).toEqual(['Over HTTP']);
  });

  it('refuses bad input as on Node: text frames, garbage, oversized messages, a flood', async () => {
    const plan = 'acme:bad';
    const t = await token(plan);
    const text = rawClient(ws(), plan, { token: t });
    await text.opened;
    text.ws.send('hello');
    expect((await text.closed).code).toBe(CloseCode.BadMessage);
    const garbage = rawClient(ws(), plan, { token: t });
    await garbage.opened;
    garbage.send([0, 9, 255, 255, 255, 255, 255]);
    expect((await garbage.closed).code).toBe(CloseCode.BadMessage);
    const big = rawClient(ws(), plan, { token: t });
    await big.opened;
    big.send(new Uint8Array(8 * 1024 * 1024 + 1));
    expect((await big.closed).code).toBe(CloseCode.MessageTooLarge);
    const flood = rawClient(ws(), plan, { token: t });
    await flood.opened;
    const ping = awarenessQuery();
    for (let i = 0; i < 2_500; i++) flood.send(ping);
    expect((await flood.closed).code).toBe(CloseCode.RateLimited);
    // None of it changed the plan: it was never written.
    expect((await api(w, plan, '/tasks', { token: await token(plan, 'read') })).status).toBe(404);
  }, 90_000);

  it('wakes a waiting task once, from the alarm, with nobody connected', async () => {
    const plan = 'acme:wake';
    const wakeAt = new Date(Date.now() + 700).toISOString();
    const added = await api(w, plan, '/tools/add_tasks', {
      method: 'POST',
      token: await token(plan),
      body: JSON.stringify({ tasks: [{ title: 'Call back', status: 'waiting_user', wakeAt }] }),
    });
    expect(added.status).toBe(200);
    const id = added.body.added[0].id as string;
    const read = await token(plan, 'read');
    await vi.waitFor(async () => {
      expect((await api(w, plan, `/tasks/${id}`, { token: read })).body.task).toMatchObject({
        status: 'in_progress',
        updatedBy: 'wake',
      });
    });
    const chat = await api(w, plan, '/chat', { token: read });
    const notices = chat.body.messages.filter((m: { text: string }) => m.text.startsWith('Task wake-up'));
    expect(notices).toHaveLength(1);
  });

  it('frees the claim of a holder gone for CAIRN_LEASE_MS, once, as lease, from the alarm', async () => {
    const plan = 'acme:lease';
    const doc = new Y.Doc();
    const agentPlan = createPlan({ doc, actor: 'agent:a' });
    const conn = cairnClient(ws(), plan, doc, {
      token: await token(plan, 'write', 'agent:a'),
      plan: agentPlan,
      presence: { id: 'agent:a', name: 'agent:a', kind: 'agent' },
    });
    await conn.whenSynced();
    const task = agentPlan.add({ title: 'Mine for now' });
    expect(await agentPlan.claim(task.id)).toMatchObject({ outcome: 'won', arbitrated: true });
    conn.destroy();
    const read = await token(plan, 'read');
    await vi.waitFor(async () => {
      expect((await api(w, plan, `/tasks/${task.id}`, { token: read })).body.task).toMatchObject({
        assignee: null,
        updatedBy: 'lease',
      });
    });
  });

  it('lets the judge (CAIRN_JUDGE_URL) close a task after a finished turn', async () => {
    const plan = 'acme:judge';
    const doc = new Y.Doc();
    const conn = cairnClient(ws(), plan, doc, { token: await token(plan, 'write', 'agent:scout') });
    await conn.whenSynced();
    const view = createPlan({ doc, actor: 'agent:scout' });
    const task = view.add({ title: 'Book the table', status: 'in_progress' });
    createChat(doc, { actor: 'user:ann' }).append({ role: 'user', text: 'Thanks, 8 pm is fine.' });
    createChat(doc, { actor: 'agent:scout' }).append({ role: 'assistant', text: 'Booked for 8 pm.' });
    await conn.whenAcknowledged();
    await until(view, (p) => p.get(task.id)?.status === 'done');
    expect(view.get(task.id)).toMatchObject({ updatedBy: 'auto_close' });
    expect(judge.calls).toBeGreaterThan(0);
  });
});

/** A valid, cheap message (an awareness query) for flooding. */
function awarenessQuery(): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, MessageType.QueryAwareness);
  return encoding.toUint8Array(encoder);
}
