// The in-page agent on a server with auth, writing with its person's (non-admin) token: when the model fails,
// the notice that ends the turn reaches the server and the other people, and the connection stays open. A
// `system` turn from a non-admin connection is refused with 4403 (docs/THREAT_MODEL.md), so a notice written as
// one closed the page's connection and was never stored.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createChat, createPlan } from '@cairn/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { signToken } from '../../../packages/server/src/index.js';
import { cairnClient, startServer } from '../../../packages/server/test/helpers.js';
import { BrowserAgent } from '../src/agent/agent.js';
import { createOpenAIModel } from '../src/agent/model.js';

const SECRET = 's'.repeat(32);
let endpoint: Server;
let baseUrl: string;

beforeAll(async () => {
  // A chat-completions endpoint that is down: every request answers 503.
  endpoint = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"overloaded"}}');
    });
  });
  await new Promise<void>((done) => endpoint.listen(0, '127.0.0.1', done));
  baseUrl = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/v1`;
});

afterAll(() => new Promise<void>((done) => endpoint.close(() => done())));

describe('the agent on a server with auth', () => {
  it("ends a failed turn with a notice the server stores and relays, without losing the person's connection", async () => {
    const planId = 'acme:conv:notice';
    const s = await startServer({ secret: SECRET });
    const writer = await signToken(SECRET, { plan: planId, role: 'write', sub: 'ann' }, { ttl: '1h' });
    const doc = new Y.Doc();
    const conn = cairnClient(s.url, planId, doc, { token: writer });
    await conn.whenSynced();
    const closes: number[] = [];
    conn.on('closed', ({ code }) => closes.push(code));

    const plan = createPlan({ doc, actor: 'user:ann' });
    const agent = new BrowserAgent(
      {
        plan,
        chat: createChat(doc, { actor: 'agent:ann' }),
        actor: 'agent:ann',
        name: () => 'Ann’s agent',
        owner: 'user:ann',
        nameOf: (actor) => actor,
        presence: () => [],
        traces: new Y.Doc(),
        skills: () => [],
      },
      createOpenAIModel({ baseUrl, model: 'm-1' }),
    );
    const asked = createChat(doc, { actor: 'user:ann' }).append({ role: 'user', text: 'plan a launch' });
    await agent.respond(asked.id);
    await conn.whenAcknowledged(10_000);

    // Another person, with a reader's token, sees the notice after the request.
    const other = new Y.Doc();
    const reader = await signToken(SECRET, { plan: planId, role: 'read', sub: 'bo' }, { ttl: '1h' });
    await cairnClient(s.url, planId, other, { token: reader }).whenSynced();
    const seen = createChat(other, { actor: 'user:bo' }).list();
    expect(seen.map((m) => [m.role, m.actor])).toEqual([
      ['user', 'user:ann'],
      ['assistant', 'agent:ann'],
    ]);
    expect(seen[1]!.text).toContain('The model could not answer: 503');
    expect(closes).toEqual([]);
    expect(conn.status).toBe('connected');
    plan.destroy();
  });
});
