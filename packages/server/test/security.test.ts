// Auth through the real server: refused sockets get named close codes before reaching a room, tokens are bound to
// plans, read-only connections never write, open mode stays on loopback.
import { CloseCode } from '@cairn/core/websocket';
import { SignJWT } from 'jose';
import { describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import { main } from '../src/cli.js';
import { createAuthenticator, createCairnServer, MemoryStore, planMatches, signToken } from '../src/index.js';
import { cairnClient, rawClient, startServer, stockClient, whenProviderSynced } from './helpers.js';

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
  it('closes with 4401 without a token, with a bad signature or an expired token', async () => {
    const { url, server } = await startServer({ secret });
    const none = rawClient(url, 'acme:1');
    const forged = rawClient(url, 'acme:1', {
      token: await signToken('another-secret-that-is-also-long-enough', { plan: 'acme:1', role: 'admin' }),
    });
    const expired = rawClient(url, 'acme:1', {
      token: await new SignJWT({ plan: 'acme:1', role: 'write' })
        .setProtectedHeader({ alg: 'HS256' })
        .setExpirationTime(Math.floor(Date.now() / 1000) - 3600)
        .sign(new TextEncoder().encode(secret)),
    });
    const garbage = rawClient(url, 'acme:1', { token: 'not-a-jwt' });
    expect(await none.closed).toEqual({
      code: CloseCode.Unauthorized,
      reason: expect.stringMatching(/No token/),
    });
    expect(await forged.closed).toEqual({ code: 4401, reason: expect.stringMatching(/signature/) });
    expect(await expired.closed).toEqual({ code: 4401, reason: 'Token expired.' });
    expect(await garbage.closed).toEqual({ code: 4401, reason: expect.stringMatching(/malformed/) });
    // None of them reached a room or received a byte of the plan.
    for (const c of [none, forged, expired, garbage]) expect(c.messages).toEqual([]);
    expect(server.hub.roomCount).toBe(0);
    expect(server.hub.metrics.refusedTotal.get({ reason: 'unauthorized' })).toBe(4);
  });

  it('closes with 4403 for a token of another plan; a glob token opens only its plans', async () => {
    const { url } = await startServer({ secret });
    const other = rawClient(url, 'acme:2', { token: await write('acme:1') });
    expect(await other.closed).toEqual({
      code: CloseCode.Forbidden,
      reason: expect.stringMatching(/acme:1/),
    });
    const outside = rawClient(url, 'globex:1', { token: await write('acme:*') });
    expect((await outside.closed).code).toBe(4403);
    const inside = rawClient(url, 'acme:conv:9', { token: await write('acme:*') });
    await inside.next((m) => m[0] === 0); // the server's sync step 1
  });

  it('tells a Cairn client it was refused for good, and stops reconnecting', async () => {
    const { url } = await startServer({ secret });
    const conn = cairnClient(url, 'acme:2', new Y.Doc(), { token: await write('acme:1') });
    const closed = new Promise((resolve) => conn.on('closed', resolve));
    await expect(conn.whenSynced()).rejects.toMatchObject({ code: 'forbidden' });
    expect(await closed).toMatchObject({ code: 4403 });
    expect(conn.status).toBe('closed');
  });

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
  it('accepts the token as ?token= (stock client) and as a subprotocol (Cairn client)', async () => {
    const { url } = await startServer({ secret });
    const a = new Y.Doc();
    const b = new Y.Doc();
    const stock = stockClient(url, 'acme:t', a, { token: await write('acme:t') });
    const cairn = cairnClient(url, 'acme:t', b, { token: async () => write('acme:t') });
    const inQuery = cairnClient(url, 'acme:t', new Y.Doc(), {
      token: await write('acme:t'),
      tokenIn: 'query',
    });
    await inQuery.whenSynced();
    await Promise.all([whenProviderSynced(stock), cairn.whenSynced()]);
    a.getMap('tasks').set('x', 1);
    await vi.waitFor(() => expect(b.getMap('tasks').get('x')).toBe(1));
  });

  it('matches plan patterns: * is any run of characters, nothing else is special', () => {
    expect(planMatches('acme:*', 'acme:1:conv:2')).toBe(true);
    expect(planMatches('acme:*', 'acme')).toBe(false);
    expect(planMatches('*', 'anything')).toBe(true);
    expect(planMatches('a.c', 'abc')).toBe(false);
    expect(planMatches('acme:1', 'acme:10')).toBe(false);
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

  it('`cairn serve --help`, `token --help` and `mcp --help` print the usage and exit 0', async () => {
    for (const command of ['serve', 'token', 'mcp', 'agents']) {
      let err = '';
      const io = { stdout: () => undefined, stderr: (t: string) => (err += t), env: {} };
      expect(await main([command, '--help'], io), command).toBe(0);
      expect(err).toMatch(/^Usage:/);
      expect(err).not.toMatch(/Unknown option/);
    }
  });
});

describe('read-only connections', () => {
  it('never apply nor relay a reader’s edits; the reader is told and its ack fails', async () => {
    const { url, server } = await startServer({ secret });
    const writerDoc = new Y.Doc();
    const readerDoc = new Y.Doc();
    const otherDoc = new Y.Doc();
    const writer = cairnClient(url, 'acme:ro', writerDoc, { token: await write('acme:ro') });
    const reader = cairnClient(url, 'acme:ro', readerDoc, {
      token: await read('acme:ro'),
      presence: { id: 'r', name: 'Reader', kind: 'human' },
    });
    const elsewhere = cairnClient(url, 'acme:other', otherDoc, { token: await write('acme:other') });
    await Promise.all([writer.whenSynced(), reader.whenSynced(), elsewhere.whenSynced()]);

    writerDoc.getMap('tasks').set('t1', 'by writer');
    await writer.whenAcknowledged();
    await vi.waitFor(() => expect(readerDoc.getMap('tasks').get('t1')).toBe('by writer')); // readers read
    await vi.waitFor(() => expect([...writer.peers().values()]).toMatchObject([{ id: 'r' }])); // and show presence

    const refused = new Promise((resolve) => reader.on('error', resolve));
    readerDoc.getMap('tasks').set('t1', 'by reader');
    readerDoc.getMap('tasks').set('t2', 'by reader');
    expect(await refused).toMatchObject({ code: 'forbidden', message: expect.stringMatching(/read-only/) });
    await expect(reader.whenAcknowledged()).rejects.toMatchObject({ code: 'forbidden' });

    // The writer's next acknowledged edit went through the same room after the reader's: nothing leaked.
    writerDoc.getMap('tasks').set('t3', 'by writer');
    await writer.whenAcknowledged();
    expect(writerDoc.getMap('tasks').toJSON()).toEqual({ t1: 'by writer', t3: 'by writer' });
    expect(await stored(server, 'acme:ro')).toEqual({ t1: 'by writer', t3: 'by writer' });

    // Another room is unaffected.
    otherDoc.getMap('tasks').set('o', 1);
    await elsewhere.whenAcknowledged();
    expect(await stored(server, 'acme:other')).toEqual({ o: 1 });
  });

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

  it('a stock client with a read token cannot change the plan', async () => {
    const { url, server } = await startServer({ secret });
    const doc = new Y.Doc();
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const provider = stockClient(url, 'acme:stock-ro', doc, { token: await read('acme:stock-ro') });
    await whenProviderSynced(provider);
    doc.getMap('tasks').set('t1', 'nope');
    await vi.waitFor(() => expect(warn).toHaveBeenCalledWith(expect.stringMatching(/read-only/)));
    warn.mockRestore();
    expect(await stored(server, 'acme:stock-ro')).toEqual({});
  });
});

describe('open mode', () => {
  it('grants admin to everyone when no secret is set', async () => {
    const auth = createAuthenticator();
    expect(auth.open).toBe(true);
    expect(await auth.authorize(null, 'p')).toMatchObject({ role: 'admin', sub: 'anonymous' });
  });
});
