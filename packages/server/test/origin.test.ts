// Open mode against other sites' pages: a request must be addressed to this server (Host: its address, a loopback
// name or an allowed name, against DNS rebinding) and come from its own page or an allowed origin (Origin), on
// HTTP and WebSocket upgrades alike; a write must be JSON, which no cross-site form or text/plain POST can be.

import { readdir } from 'node:fs/promises';
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import * as Y from 'yjs';
import { signToken } from '../src/index.js';
import {
  seedPlan,
  serverState,
  startServer,
  stockClient,
  type TestServer,
  whenProviderSynced,
} from './helpers.js';

interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP request with exactly these headers (fetch would not let a test set Host). */
function raw(
  server: TestServer,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: server.port, method, path, headers, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** How an upgrade ends: `open`, or the HTTP status it was refused with. */
function upgrade(server: TestServer, planId: string, options: { origin?: string; host?: string } = {}) {
  return new Promise<number | 'open'>((resolve) => {
    const ws = new WebSocket(`${server.url}/sync/${encodeURIComponent(planId)}`, {
      ...(options.origin ? { origin: options.origin } : {}),
      ...(options.host ? { headers: { host: options.host } } : {}),
    });
    ws.on('open', () => {
      ws.terminate();
      resolve('open');
    });
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on('error', () => undefined);
  });
}

const addTask = JSON.stringify({ tasks: [{ title: 'Planted by another site' }] });

/** POST `body` (by default a task another site would plant) to plan p's add_tasks tool with `headers`. */
function addTasks(server: TestServer, headers: Record<string, string>, body = addTask) {
  return raw(server, 'POST', '/api/plans/p/tools/add_tasks', headers, body);
}

describe('open mode and other sites', () => {
  it('refuses a cross-site text/plain POST, a foreign Origin and a rebound Host; writes and creates nothing', async () => {
    const server = await startServer();
    const self = `http://127.0.0.1:${server.port}`;
    const evil = 'https://evil.example';

    const crossSite = await addTasks(server, { origin: evil, 'content-type': 'text/plain' });
    expect(crossSite.status).toBe(403);
    expect(JSON.parse(crossSite.body).error.message).toMatch(/evil\.example may not use this server/);
    const foreignJson = await addTasks(server, { origin: evil, 'content-type': 'application/json' });
    expect(foreignJson.status).toBe(403);
    // Without an Origin (no browser page), a write must still say it is JSON.
    const textPlain = await addTasks(server, { 'content-type': 'text/plain' });
    expect(textPlain.status).toBe(415);
    expect(JSON.parse(textPlain.body).error.message).toMatch(
      /Content-Type: application\/json, not text\/plain/,
    );
    const noType = await raw(server, 'POST', '/api/plans/p/tools/list_tasks');
    expect(noType.status).toBe(415);
    expect(await readdir(server.dir)).not.toContain('p.log');

    // DNS rebinding: a name that resolved to this machine, in the Host header.
    await seedPlan(server, 'p', [{ title: 'Secret plan' }]);
    const rebound = await raw(server, 'GET', '/api/plans/p/tasks', {
      host: `rebind.evil.example:${server.port}`,
    });
    expect(rebound.status).toBe(403);
    expect(rebound.body).not.toContain('Secret plan');
    expect(JSON.parse(rebound.body).error.message).toMatch(/DNS rebinding/);
    expect((await raw(server, 'GET', '/healthz', { host: 'rebind.evil.example' })).status).toBe(403);

    // WebSocket upgrades: a foreign page or a rebound name gets no socket at all.
    expect(await upgrade(server, 'p', { origin: evil })).toBe(403);
    expect(await upgrade(server, 'p', { origin: 'null' })).toBe(403);
    expect(await upgrade(server, 'p', { host: `rebind.evil.example:${server.port}` })).toBe(403);
    expect(server.server.hub.metrics.refusedTotal.get({ reason: 'origin' })).toBe(3);

    const before = await serverState(server, 'p');
    expect(JSON.stringify(createdTitles(before))).not.toContain('Planted');

    // The server's own page, loopback names and clients without an Origin are served as before.
    const own = await addTasks(
      server,
      { origin: self, 'content-type': 'application/json; charset=utf-8' },
      JSON.stringify({ tasks: [{ title: 'From the demo' }] }),
    );
    expect(own.status).toBe(200);
    const viaLocalhost = await raw(server, 'GET', '/api/plans/p/tasks', {
      host: `localhost:${server.port}`,
      origin: `http://localhost:${server.port}`,
    });
    expect(viaLocalhost.status).toBe(200);
    expect(viaLocalhost.body).toContain('From the demo');
    expect(await upgrade(server, 'p', { origin: self })).toBe('open');
    expect(
      await upgrade(server, 'p', {
        host: `localhost:${server.port}`,
        origin: `http://localhost:${server.port}`,
      }),
    ).toBe('open');
    const stock = stockClient(server.url, 'p', new Y.Doc());
    await whenProviderSynced(stock);
  });

  it('lets configured host names and origins in, and nothing else', async () => {
    const server = await startServer({
      allowedHosts: ['cairn.internal'],
      allowedOrigins: ['https://app.example'],
    });
    await seedPlan(server, 'p', [{ title: 'T' }]);
    const named = { host: `cairn.internal:${server.port}` };
    expect((await raw(server, 'GET', '/api/plans/p/tasks', named)).status).toBe(200);
    expect((await raw(server, 'GET', '/api/plans/p/tasks', { host: 'other.internal' })).status).toBe(403);
    expect(
      (
        await raw(server, 'GET', '/api/plans/p/tasks', {
          ...named,
          origin: `http://cairn.internal:${server.port}`,
        })
      ).status,
    ).toBe(200);
    expect((await raw(server, 'GET', '/api/plans/p/tasks', { origin: 'https://app.example' })).status).toBe(
      200,
    );
    expect((await raw(server, 'GET', '/api/plans/p/tasks', { origin: 'https://evil.example' })).status).toBe(
      403,
    );
    expect(await upgrade(server, 'p', { origin: 'https://app.example' })).toBe('open');
    expect(await upgrade(server, 'p', { ...named })).toBe('open');
    expect(await upgrade(server, 'p', { origin: 'https://evil.example' })).toBe(403);
  });

  it('with a secret, a page of any origin must still present a token (the browser never adds one by itself)', async () => {
    const secret = 'origin-test-secret-with-at-least-32-bytes';
    const server = await startServer({ secret });
    await seedPlan(server, 'p', [{ title: 'T' }]);
    const evil = { origin: 'https://evil.example', host: `rebind.evil.example:${server.port}` };
    expect((await raw(server, 'GET', '/api/plans/p/tasks', evil)).status).toBe(401);
    const token = await signToken(secret, { plan: 'p', role: 'read' });
    const withToken = await raw(server, 'GET', '/api/plans/p/tasks', {
      ...evil,
      authorization: `Bearer ${token}`,
    });
    expect(withToken.status).toBe(200);
    // A write still has to be JSON.
    const write = await signToken(secret, { plan: 'p', role: 'write' });
    const plain = await addTasks(server, { authorization: `Bearer ${write}`, 'content-type': 'text/plain' });
    expect(plain.status).toBe(415);
  });
});

function createdTitles(state: Uint8Array): unknown {
  const doc = new Y.Doc();
  Y.applyUpdate(doc, state);
  return doc.getMap('tasks').toJSON();
}
