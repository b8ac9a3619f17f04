// The server's model proxy for the demo (packages/server/src/model-proxy.ts), mounted on the server's HTTP app in
// a plain node:http server: it says which model it offers without the key, forwards chat completions with the
// server's key and model, refuses bad bodies and unauthorized callers before forwarding anything.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CairnError } from '@cairn/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp } from '../../../packages/server/src/http/app.js';
import { nodeListener } from '../../../packages/server/src/http/node-listener.js';
import {
  type ModelProxyOptions,
  modelProxyFromEnv,
  registerModelRoutes,
} from '../../../packages/server/src/model-proxy.js';

let upstream: Server;
let upstreamUrl: string;
const seen: Array<{ url: string; headers: IncomingMessage['headers']; body: Record<string, unknown> }> = [];
const open: Server[] = [];

beforeAll(async () => {
  upstream = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => {
      text += chunk;
    });
    req.on('end', () => {
      seen.push({ url: req.url ?? '', headers: req.headers, body: JSON.parse(text) });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'hi' } }] }));
    });
  });
  await new Promise<void>((done) => upstream.listen(0, '127.0.0.1', done));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
});

afterEach(async () => {
  seen.length = 0;
  await Promise.all(open.splice(0).map((s) => new Promise<void>((done) => s.close(() => done()))));
});

afterAll(() => new Promise<void>((done) => upstream.close(() => done())));

async function mount(options: ModelProxyOptions): Promise<string> {
  const app = createHttpApp();
  registerModelRoutes(app, options);
  const server = createServer(nodeListener(app));
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  open.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const post = (base: string, body: unknown) =>
  fetch(`${base}/api/model/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('model proxy', () => {
  it('offers the configured model without revealing the key or the upstream', async () => {
    const base = await mount({ baseUrl: upstreamUrl, model: 'm-1', apiKey: 'sk-server' });
    const response = await fetch(`${base}/api/model`);
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({ available: true, model: 'm-1', label: 'm-1' });
    expect(text).not.toContain('sk-server');
    expect(text).not.toContain('127.0.0.1');
  });

  it("forwards a chat completion with the server's key and model, and answers with the upstream's reply", async () => {
    const base = await mount({ baseUrl: `${upstreamUrl}/`, model: 'm-1', apiKey: 'sk-server' });
    const response = await post(base, {
      model: 'gpt-expensive',
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ choices: [{ message: { role: 'assistant', content: 'hi' } }] });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.url).toBe('/v1/chat/completions');
    expect(seen[0]!.headers.authorization).toBe('Bearer sk-server');
    expect(seen[0]!.body).toEqual({
      model: 'm-1',
      stream: false,
      messages: [{ role: 'user', content: 'x' }],
    });
  });

  it('refuses a body that is not a chat request, and a caller the server does not authorize, forwarding nothing', async () => {
    const base = await mount({
      baseUrl: upstreamUrl,
      model: 'm-1',
      authorize: (request) => {
        if (request.headers.get('x-cairn-plan') !== 'ok')
          throw new CairnError('unauthorized', 'A token for the plan is needed.');
      },
    });
    const unauthorized = await post(base, { messages: [] });
    expect(unauthorized.status).toBe(401);
    const bad = await fetch(`${base}/api/model/chat/completions`, {
      method: 'POST',
      headers: { 'x-cairn-plan': 'ok', 'content-type': 'application/json' },
      body: '{"prompt":"hi"}',
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toContain('messages');
    expect(seen).toHaveLength(0);
  });

  it('says when no model is configured, and when the upstream cannot be reached', async () => {
    const none = await mount(modelProxyFromEnv({}));
    expect(await (await fetch(`${none}/api/model`)).json()).toEqual({ available: false });
    expect((await post(none, { messages: [] })).status).toBe(404);

    const down = await mount({ baseUrl: 'http://127.0.0.1:1/v1', model: 'm-1', timeoutMs: 2000 });
    const response = await post(down, { messages: [] });
    expect(response.status).toBe(502);
    expect(
      modelProxyFromEnv({
        CAIRN_LLM_BASE_URL: 'http://x/v1',
        CAIRN_LLM_MODEL: 'm',
        CAIRN_LLM_API_KEY: 'k',
        CAIRN_LLM_LABEL: 'M',
      }),
    ).toEqual({ baseUrl: 'http://x/v1', model: 'm', apiKey: 'k', label: 'M' });
  });
});
