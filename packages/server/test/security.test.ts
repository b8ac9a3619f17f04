// Auth through the real server, beyond what every host answers alike (test/contract/auth.ts: refusals, tokens as
// query or subprotocol, read-only clients): a token expiring on an open socket, plan patterns, the CLI's tokens,
// readers that are not taken for writers, plans readers do not create, open mode kept on loopback.

import { readdir } from 'node:fs/promises';
import { CloseCode } from '@cairn/core/protocol';
import { generateKeyPair, SignJWT } from 'jose';
import { describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import * as Y from 'yjs';
import { main } from '../src/cli.js';
import { createAuthenticator, createCairnServer, MemoryStore, planMatches, signToken } from '../src/index.js';
import {
  cairnClient,
  onCleanup,
  rawClient,
  seedPlan,
  serverState,
  startServer,
  type TestServer,
} from './helpers.js';

const secret = 'test-secret-with-at-least-thirty-two-bytes';
const write = (plan: string, sub = 'writer') => signToken(secret, { plan, role: 'write', sub });
const read = (plan: string, sub = 'reader') => signToken(secret, { plan, role: 'read', sub });

async function stored(server: Awaited<ReturnType<typeof startServer>>['server'], planId: string) {
  const handle = await server.hub.openPlan(planId);
  const snapshot = handle.doc.getMap('tasks').toJSON();
  handle.release();
  return snapshot;
}

describe('refused connections', () => {
  it('closes a connection when its token expires', async () => {
    const { url } = await startServer({ secret });
    const token = await signToken(secret, { plan: 'acme:1', role: 'write' }, { ttl: 1 });
    const client = rawClient(url, 'acme:1', { token });
    await client.next((m) => m[0] === 0);
    expect(await client.closed).toEqual({ code: 4401, reason: 'Token expired.' });
  });

  it('refuses to listen open on a non-loopback host, and short secrets', async () => {
    const server = createCairnServer({ store: new MemoryStore() });
    await expect(server.listen(0, '0.0.0.0')).rejects.toMatchObject({
      code: 'invalid_argument',
      message: expect.stringMatching(/without a secret/),
    });
    await server.close();
    expect(() => createAuthenticator({ secret: 'short' })).toThrow(/at least 32/);
  });
});

describe('tokens', () => {
  it('matches plan patterns: * is any run of characters, nothing else is special', () => {
    expect(planMatches('acme:*', 'acme:1:conv:2')).toBe(true);
    expect(planMatches('acme:*', 'acme')).toBe(false);
    expect(planMatches('*', 'anything')).toBe(true);
    expect(planMatches('a.c', 'abc')).toBe(false);
    expect(planMatches('acme:1', 'acme:10')).toBe(false);
  });

  it('matches patterns as a backtracking glob would, on every small pattern and id', () => {
    // The reference: the regular expression the glob means (fine on inputs this small).
    const reference = (pattern: string, id: string) =>
      new RegExp(`^${pattern.split('*').join('.*')}$`, 's').test(id);
    const words = (alphabet: string, max: number): string[] => {
      const out = [''];
      for (let n = 1; n <= max; n++) {
        for (const w of out.filter((x) => x.length === n - 1)) for (const c of alphabet) out.push(w + c);
      }
      return out;
    };
    const ids = words('ab', 5);
    for (const pattern of words('ab*', 4)) {
      for (const id of ids)
        expect(planMatches(pattern, id), `${pattern} ~ ${id}`).toBe(reference(pattern, id));
    }
  });

  it('matches a many-star pattern against a long id in linear time, at minting and at reading', async () => {
    const pattern = 'acme-*-*-*-*-*-end';
    const id = `acme-${'-'.repeat(185)}`; // 190 characters that never end in "-end"
    const started = performance.now();
    expect(planMatches(pattern, id)).toBe(false);
    expect(planMatches(pattern, `${id}-end`)).toBe(true);
    // The same through a real server: a valid token with this pattern, a socket on that long plan id.
    const { url } = await startServer({ secret });
    const refused = rawClient(url, id, { token: await signToken(secret, { plan: pattern, role: 'read' }) });
    expect((await refused.closed).code).toBe(CloseCode.Forbidden);
    expect(performance.now() - started).toBeLessThan(5_000); // a backtracking regex took 22.7 s here
  });

  it('bounds a plan pattern when a token is signed and when one is read', async () => {
    const nineStars = 'a*b*c*d*e*f*g*h*i*j';
    const long = `acme:${'x'.repeat(260)}`;
    for (const plan of [nineStars, long]) {
      await expect(signToken(secret, { plan, role: 'read' })).rejects.toMatchObject({
        code: 'invalid_argument',
        message: expect.stringMatching(/at most 256 characters with at most 8 "\*"/),
      });
    }
    let err = '';
    const io = { stdout: () => undefined, stderr: (t: string) => (err += t), env: { CAIRN_SECRET: secret } };
    expect(await main(['token', '--plan', nineStars, '--role', 'read'], io)).toBe(2);
    expect(err).toMatch(/at most 8 "\*"/);
    // A token signed with the secret by other means is still refused when read.
    const auth = createAuthenticator({ secret });
    for (const plan of [nineStars, long]) {
      const token = await new SignJWT({ plan, role: 'admin' })
        .setProtectedHeader({ alg: 'HS256' })
        .setExpirationTime('1h')
        .sign(new TextEncoder().encode(secret));
      await expect(auth.authorize(token, 'abcdefghij')).rejects.toMatchObject({
        code: 'unauthorized',
        message: expect.stringMatching(/malformed.*at most 8 "\*"/),
      });
    }
  });

  it('`cairn token` prints a token the server accepts', async () => {
    let out = '';
    const io = { stdout: (t: string) => (out += t), stderr: () => undefined, env: { CAIRN_SECRET: secret } };
    expect(
      await main(['token', '--plan', 'acme:*', '--role', 'read', '--sub', 'ana', '--ttl', '10m'], io),
    ).toBe(0);
    const grant = await createAuthenticator({ secret }).authorize(out.trim(), 'acme:7');
    expect(grant).toMatchObject({ role: 'read', sub: 'ana', pattern: 'acme:*' });
    let err = '';
    const bad = { ...io, stderr: (t: string) => (err += t) };
    expect(await main(['token', '--plan', 'x', '--role', 'owner'], bad)).toBe(2);
    expect(err).toMatch(/--role must be one of read, write, admin/);
  });

  it('`cairn serve` refuses a bad --idle-unload or --max-loaded-plans, saying what is valid', async () => {
    let help = '';
    await main(['serve', '--help'], { stdout: (t) => (help += t), stderr: () => undefined, env: {} });
    expect(help).toMatch(/--idle-unload S\] \[--max-loaded-plans N\]/);
    for (const [flag, value] of [
      ['--idle-unload', '0'],
      ['--idle-unload', '1.5'],
      ['--max-loaded-plans', '0'],
      ['--max-loaded-plans', 'many'],
    ] as const) {
      let err = '';
      const io = { stdout: () => undefined, stderr: (t: string) => (err += t), env: {} };
      expect(await main(['serve', '--port', '0', flag, value], io), `${flag} ${value}`).toBe(2);
      expect(err).toContain(`${flag} must be a whole number, 1 or more, not "${value}".`);
    }
  });

  it('`cairn <command> --help` and `cairn help <command>` print that command’s usage on stdout and exit 0', async () => {
    for (const command of ['serve', 'token', 'mcp', 'agents', 'log']) {
      for (const argv of [
        [command, '--help'],
        [command, '-h'],
        ['help', command],
      ]) {
        let out = '';
        let err = '';
        const io = { stdout: (t: string) => (out += t), stderr: (t: string) => (err += t), env: {} };
        expect(await main(argv, io), argv.join(' ')).toBe(0);
        expect(err, argv.join(' ')).toBe('');
        expect(out, argv.join(' ')).toMatch(new RegExp(`^Usage:\\n  cairn ${command} `));
        // Only that command: no other command's line.
        const others = ['serve', 'token', 'mcp', 'agents'].filter((c) => c !== command);
        for (const other of others) expect(out, argv.join(' ')).not.toContain(`\n  cairn ${other} `);
      }
    }
    let all = '';
    expect(await main(['--help'], { stdout: (t) => (all += t), stderr: () => undefined, env: {} })).toBe(0);
    for (const command of ['serve', 'token', 'mcp', 'agents', 'log'])
      expect(all).toContain(`  cairn ${command} `);
    // No command at all is a mistake: the usage goes to stderr, exit 2.
    let err = '';
    let out = '';
    expect(await main([], { stdout: (t) => (out += t), stderr: (t) => (err += t), env: {} })).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(/^Usage:/);
  });
});

describe('read-only connections', () => {
  it('a reader whose doc repeats the plan (deletions included) is not taken for a writer', async () => {
    const { url, server } = await startServer({ secret });
    const writerDoc = new Y.Doc();
    const writer = cairnClient(url, 'acme:del', writerDoc, { token: await write('acme:del') });
    await writer.whenSynced();
    writerDoc.getMap('tasks').set('a', 1);
    writerDoc.getMap('tasks').set('b', 2);
    writerDoc.getMap('tasks').delete('a');
    await writer.whenAcknowledged();

    const readerDoc = new Y.Doc();
    Y.applyUpdate(readerDoc, Y.encodeStateAsUpdate(writerDoc)); // a reader that already has the plan
    const reader = cairnClient(url, 'acme:del', readerDoc, { token: await read('acme:del') });
    const errors: unknown[] = [];
    reader.on('error', (e) => errors.push(e));
    await reader.whenSynced();
    // Its sync step 2 (the whole delete set) was handled before this ack: no refusal was counted.
    writerDoc.getMap('tasks').set('c', 3);
    await writer.whenAcknowledged();
    await vi.waitFor(() => expect(readerDoc.getMap('tasks').get('c')).toBe(3));
    expect(errors).toEqual([]);
    expect(server.hub.metrics.refusedUpdatesTotal.get({ reason: 'read_only' })).toBe(0);
  });

  it('leave no file behind for plans that do not exist; the first write creates the plan, durably', async () => {
    const server = await startServer({ secret, idleUnloadMs: 50 });
    const readers = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const c = rawClient(server.url, `acme:ghost:${i}`, { token: await read('acme:*') });
        await c.next((m) => m[0] === 0);
        return c;
      }),
    );
    for (const c of readers) c.ws.close();
    await vi.waitFor(() => expect(server.server.hub.roomCount).toBe(0), { timeout: 10_000 });
    expect((await readdir(server.dir)).filter((f) => !f.startsWith('.'))).toEqual([]);

    // A writer's first acknowledged edit creates the plan; a new server reads it back.
    const doc = new Y.Doc();
    const writer = cairnClient(server.url, 'acme:born', doc, { token: await write('acme:born') });
    await writer.whenSynced();
    expect(await readdir(server.dir)).not.toContain('acme%3Aborn.log');
    doc.getMap('tasks').set('t1', 'first');
    doc.getMap('tasks').set('t2', 'second');
    await writer.whenAcknowledged();
    expect((await readdir(server.dir)).filter((f) => f.endsWith('.log'))).toHaveLength(1);
    writer.destroy();
    await server.server.close();
    const again = await startServer({ secret, dataDir: server.dir });
    expect(await stored(again.server, 'acme:born')).toEqual({ t1: 'first', t2: 'second' });
  });
});

describe('open mode', () => {
  it('grants admin to everyone when no secret is set', async () => {
    const auth = createAuthenticator();
    expect(auth.open).toBe(true);
    expect(await auth.authorize(null, 'p')).toMatchObject({ role: 'admin', sub: 'anonymous' });
  });
});

describe('auth edges', () => {
  const key = new TextEncoder().encode(secret);
  const claims = { plan: 'acme:edge', role: 'write' };
  const now = () => Math.floor(Date.now() / 1000);
  /** HTTP status and WebSocket close (or open) for one token, on the same plan. */
  async function both(server: TestServer, token: string) {
    const http = await fetch(`${server.http}/api/plans/acme%3Aedge/tasks`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const body = (await http.json()) as { error?: { message: string } };
    const ws = rawClient(server.url, 'acme:edge', { token });
    const outcome = await Promise.race([
      ws.next((m) => m[0] === 0).then(() => 'open' as const),
      ws.closed.then((c) => c),
    ]);
    return { status: http.status, message: body.error?.message ?? '', ws: outcome, client: ws };
  }

  it('refuses alg none and every algorithm but HS256, on HTTP and WebSocket alike', async () => {
    const server = await startServer({ secret });
    await seedPlan(server, 'acme:edge', [{ title: 'T' }]);
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const unsigned = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ ...claims, exp: now() + 600 })}.`;
    const hs512 = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS512' })
      .setExpirationTime('10m')
      .sign(key);
    const { privateKey } = await generateKeyPair('RS256');
    const rs256 = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256' })
      .setExpirationTime('10m')
      .sign(privateKey);
    for (const token of [unsigned, hs512, rs256]) {
      const answer = await both(server, token);
      expect(answer.status, token.slice(0, 20)).toBe(401);
      expect(answer.ws).toMatchObject({ code: CloseCode.Unauthorized });
    }
    expect((await both(server, hs512)).message).toBe('Token must be signed with HS256.');
    // The same claims signed with HS256 pass: the refusals were about the algorithm.
    const good = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime('10m')
      .sign(key);
    expect(await both(server, good)).toMatchObject({ status: 200, ws: 'open' });
  });

  it('refuses tokens without exp, on HTTP and WebSocket alike', async () => {
    const server = await startServer({ secret });
    await seedPlan(server, 'acme:edge', [{ title: 'T' }]);
    const forever = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(key);
    const answer = await both(server, forever);
    expect(answer).toMatchObject({ status: 401, message: expect.stringMatching(/no expiry/) });
    expect(answer.ws).toEqual({ code: CloseCode.Unauthorized, reason: expect.stringMatching(/no expiry/) });
  });

  it('applies one expiry tolerance (5 s) on HTTP, at the upgrade and to an open connection', async () => {
    const server = await startServer({ secret });
    await seedPlan(server, 'acme:edge', [{ title: 'T' }]);
    const expiredAgo = (seconds: number) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256' })
        .setExpirationTime(now() - seconds)
        .sign(key);
    const withinTolerance = await both(server, await expiredAgo(1));
    expect(withinTolerance).toMatchObject({ status: 200, ws: 'open' });
    // The connection ends when the tolerance does, not at once and not never.
    const opened = Date.now();
    expect(await withinTolerance.client.closed).toEqual({ code: 4401, reason: 'Token expired.' });
    expect(Date.now() - opened).toBeGreaterThan(500);
    const beyond = await both(server, await expiredAgo(7));
    expect(beyond).toMatchObject({ status: 401, message: 'Token expired.' });
    expect(beyond.ws).toEqual({ code: 4401, reason: 'Token expired.' });
  });

  it('tells an HTTP caller to use the Authorization header, never ?token=', async () => {
    const server = await startServer({ secret, model: { baseUrl: 'http://127.0.0.1:1/v1', model: 'm' } });
    const answers = [
      await fetch(`${server.http}/api/plans/acme%3Aedge/tasks`),
      await fetch(`${server.http}/api/plans/acme%3Aedge/tasks?token=${await write('acme:edge')}`),
      await fetch(`${server.http}/api/model/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-cairn-plan': 'acme:edge' },
        body: '{"messages":[]}',
      }),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(401);
      const { error } = (await answer.json()) as { error: { message: string } };
      expect(error.message).toBe('No token: send it as the header Authorization: Bearer <jwt>.');
    }
  });

  it('never echoes a token offered as the only subprotocol', async () => {
    const server = await startServer({ secret });
    const token = await write('acme:edge');
    const headers = await new Promise<Record<string, unknown>>((resolve) => {
      const ws = new WebSocket(`${server.url}/sync/acme%3Aedge`, [`cairn.token.${token}`]);
      ws.on('upgrade', (res) => resolve(res.headers));
      ws.on('error', () => undefined);
      onCleanup(() => ws.terminate());
    });
    expect(JSON.stringify(headers)).not.toContain(token);
    expect(headers['sec-websocket-protocol']).toBeUndefined();
    // Offered beside cairn.v1 (what the Cairn client does), cairn.v1 is selected.
    const both = rawClient(server.url, 'acme:edge', { protocols: ['cairn.v1', `cairn.token.${token}`] });
    await both.next((m) => m[0] === 0);
    expect(both.ws.protocol).toBe('cairn.v1');
  });

  it('refuses a body with a __proto__ key instead of storing it and losing it on read', async () => {
    const server = await startServer({ secret });
    await seedPlan(server, 'acme:edge', [{ title: 'T' }]);
    const before = await serverState(server, 'acme:edge');
    const response = await fetch(`${server.http}/api/plans/acme%3Aedge/tools/add_tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await write('acme:edge')}`, 'content-type': 'application/json' },
      body: '{"tasks":[{"title":"With context","context":{"__proto__":{"admin":true},"ok":1}}]}',
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(/"__proto__"/);
    expect(await serverState(server, 'acme:edge')).toEqual(before);
  });
});
