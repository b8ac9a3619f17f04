// The HTTP side of the server: health, Prometheus metrics, the static app with its index.html fallback, JSON
// errors for everything else.
import { mkdir, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import { authorizeRequest, jsonResponse, signToken } from '../src/index.js';
import { cairnClient, rawUpgrade, startServer, tempDir } from './helpers.js';

/** A built app in a temp dir: index.html (the shell) and assets/app.js holding `script`. */
async function builtApp(script: string): Promise<string> {
  const app = await tempDir();
  await mkdir(join(app, 'assets'));
  await writeFile(join(app, 'index.html'), '<!doctype html><title>demo</title>');
  await writeFile(join(app, 'assets', 'app.js'), script);
  return app;
}

describe('http', () => {
  it('answers /healthz and /metrics', async () => {
    const { http, url } = await startServer();
    const conn = cairnClient(url, 'p', new Y.Doc());
    await conn.whenSynced();
    const health = await fetch(`${http}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true, rooms: 1, connections: 1, damagedLogs: 0 });
    const metrics = await fetch(`${http}/metrics`);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await metrics.text();
    for (const name of [
      'cairn_connections 1',
      'cairn_rooms 1',
      'cairn_updates_total',
      'cairn_store_duration_seconds_bucket{le="0.001",op="load"}',
      'cairn_errors_total',
      'cairn_messages_total{type="sync"}',
    ]) {
      expect(text).toContain(name);
    }
  });

  it('serves a built app with an index.html fallback, and JSON 404s for the API', async () => {
    const { http } = await startServer({ staticDir: await builtApp('console.log(1)') });

    const index = await fetch(`${http}/`);
    expect(index.headers.get('content-type')).toMatch(/text\/html/);
    expect(await index.text()).toContain('<title>demo</title>');
    const asset = await fetch(`${http}/assets/app.js`);
    expect(asset.headers.get('content-type')).toMatch(/javascript/);
    expect(await (await fetch(`${http}/plans/acme/board`)).text()).toContain('<title>demo</title>');
    expect((await fetch(`${http}/assets/missing.js`)).status).toBe(404);
    expect((await fetch(`${http}/..%2f..%2fetc%2fpasswd`)).status).toBe(404);

    const api = await fetch(`${http}/api/plans/x/unknown`);
    expect(api.status).toBe(404);
    expect(await api.json()).toMatchObject({
      error: { code: 'not_found', message: expect.stringMatching(/healthz/) },
    });
    const wrongMethod = await fetch(`${http}/healthz`, { method: 'POST' });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('GET');
  });

  it('serves the app with revalidated pages, cached assets, ETag 304s and byte ranges', async () => {
    const { http } = await startServer({ staticDir: await builtApp('0123456789') });

    for (const path of ['/', '/plans/acme/board']) {
      expect((await fetch(`${http}${path}`)).headers.get('cache-control')).toBe('no-cache');
    }
    const asset = await fetch(`${http}/assets/app.js`);
    expect(asset.headers.get('cache-control')).toBe('public,max-age=3600');
    expect(asset.headers.get('content-length')).toBe('10');
    const etag = asset.headers.get('etag');
    expect(etag).toMatch(/^W\/"/);
    const again = await fetch(`${http}/assets/app.js`, { headers: { 'if-none-match': etag! } });
    expect(again.status).toBe(304);

    const part = await fetch(`${http}/assets/app.js`, { headers: { range: 'bytes=2-4' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe('bytes 2-4/10');
    expect(await part.text()).toBe('234');
    // A range it does not serve exactly (from the end, or reversed) gets the whole file, as HTTP allows.
    for (const range of ['bytes=-3', 'bytes=5-2', 'bytes=0-1,4-5']) {
      const whole = await fetch(`${http}/assets/app.js`, { headers: { range } });
      expect(whole.status).toBe(200);
      expect(await whole.text()).toBe('0123456789');
    }
    const head = await fetch(`${http}/assets/app.js`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    const post = await fetch(`${http}/assets/app.js`, { method: 'POST' });
    expect(post.status).toBe(404);
    expect(await post.json()).toMatchObject({ error: { code: 'not_found' } });
  });

  it('answers an upgrade outside /sync/ with HTTP 404', async () => {
    const { port } = await startServer();
    const { socket, reply } = rawUpgrade(port, '/elsewhere');
    expect(await reply).toMatch(/^HTTP\/1.1 404/);
    socket.destroy();
  });

  it('lets plan routes drop in beside the core ones, authorized by bearer token', async () => {
    const secret = 'http-test-secret-long-enough-for-hs256!';
    const { http, server } = await startServer({ secret });
    server.app.get('/api/plans/:plan/whoami', async (c) => {
      const grant = await authorizeRequest(server.hub, c.req.raw, c.req.param('plan'), 'write');
      return jsonResponse({ plan: grant.planId, sub: grant.sub });
    });
    const call = (token?: string) =>
      fetch(`${http}/api/plans/acme%3A1/whoami`, {
        headers: token ? { authorization: `Bearer ${token}` } : {},
      });
    expect((await call()).status).toBe(401);
    expect((await call(await signToken(secret, { plan: 'acme:2', role: 'write' }))).status).toBe(403);
    const reader = await call(await signToken(secret, { plan: 'acme:1', role: 'read' }));
    expect(reader.status).toBe(403);
    expect(await reader.json()).toMatchObject({ error: { code: 'forbidden', message: /needs role write/ } });
    const ok = await call(await signToken(secret, { plan: 'acme:*', role: 'write', sub: 'ana' }));
    expect(await ok.json()).toEqual({ plan: 'acme:1', sub: 'ana' });
  });

  it('closes a kept-alive connection whose body it refused unread (413, 415), so the next request is answered', async () => {
    const server = await startServer();
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const send = (method: string, path: string, headers: Record<string, string>, body?: Buffer | string) =>
      new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port: server.port, method, path, headers, agent }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
        });
        req.on('error', reject);
        req.end(body);
      });
    try {
      const big = Buffer.alloc(2 * 1024 * 1024, 0x20);
      const tooLarge = await send(
        'POST',
        '/api/plans/p/tools/add_tasks',
        { 'content-type': 'application/json' },
        big,
      );
      expect(tooLarge).toEqual({ status: 413, connection: 'close' });
      const started = performance.now();
      expect((await send('GET', '/healthz', {})).status).toBe(200);
      const notJson = await send(
        'POST',
        '/api/plans/p/tools/add_tasks',
        { 'content-type': 'text/plain' },
        'x'.repeat(100_000),
      );
      expect(notJson).toEqual({ status: 415, connection: 'close' });
      expect((await send('GET', '/healthz', {})).status).toBe(200);
      expect(performance.now() - started).toBeLessThan(3_000); // a dead kept-alive socket waited about 6 s here
    } finally {
      agent.destroy();
    }
  });

  it('answers a path that is not valid percent-encoding with 400, on HTTP as on WebSocket', async () => {
    const server = await startServer();
    const api = await fetch(`${server.http}/api/plans/%ZZ/tasks`);
    expect(api.status).toBe(400);
    expect(await api.json()).toMatchObject({
      error: { code: 'invalid_argument', message: /percent-encoding/ },
    });
    const { socket, reply } = rawUpgrade(server.port, '/sync/%ZZ');
    expect(await reply).toMatch(/^HTTP\/1.1 400/);
    socket.destroy();
  });

  it('limits /api/ requests per token (429 with Retry-After), as the WebSocket side limits each connection', async () => {
    const secret = 'http-test-secret-long-enough-for-hs256!';
    const server = await startServer({
      secret,
      httpRateLimits: { requestsPerSecond: 0.25, requestBurst: 5 },
    });
    const ann = await signToken(secret, { plan: 'acme:*', role: 'read', sub: 'ann' });
    const bob = await signToken(secret, { plan: 'acme:*', role: 'read', sub: 'bob' });
    const tools = (token: string) =>
      fetch(`${server.http}/api/plans/acme%3A1/tools`, { headers: { authorization: `Bearer ${token}` } });
    for (let i = 0; i < 5; i++) expect((await tools(ann)).status).toBe(200);
    const limited = await tools(ann);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await limited.json()).toMatchObject({
      error: { code: 'limit', message: /at most 0.25 per second/ },
    });
    // Another token, and the server's own endpoints, are not affected.
    expect((await tools(bob)).status).toBe(200);
    expect((await fetch(`${server.http}/healthz`)).status).toBe(200);
    // The bucket refills at the sustained rate (one request every 4 s; slow, so a loaded machine cannot refill it
    // before the limit is checked above).
    await vi.waitFor(async () => expect((await tools(ann)).status).toBe(200), {
      timeout: 15_000,
      interval: 500,
    });
  });

  it('counts callers without a token by address, and body bytes by Content-Length', async () => {
    const server = await startServer({
      httpRateLimits: { requestsPerSecond: 100, requestBurst: 100, bytesPerSecond: 10, byteBurst: 3000 },
    });
    const post = () =>
      fetch(`${server.http}/api/plans/p/tools/list_tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ pad: 'x'.repeat(1400) }),
      });
    expect((await post()).status).not.toBe(429);
    expect((await post()).status).not.toBe(429);
    const third = await post();
    expect(third.status).toBe(429);
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await third.json()).error.message).toMatch(
      /^Too many requests: at most 100 per second and 10 body bytes per second for one address without a token\. Retry after \d+ s\.$/,
    );
  });
});
