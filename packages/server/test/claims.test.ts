// Claims decided by the server: leases that lapse when the holder leaves or stops renewing (attributed to
// `lease`, also while the plan is unloaded), release and hand-off, actors bound to the token, tentative claims
// while offline, and a resent request answered once. The race property itself is in test/claims-race.test.ts.
import { ClaimMessageType, decodeClaimReply, encodeClaimRequest } from '@cairn/core/protocol';
import { until } from '@cairn/core/testing';
import * as decoding from 'lib0/decoding';
import { describe, expect, it, vi } from 'vitest';
import { type ClaimOptions, signToken } from '../src/index.js';
import { agentOn, freedByLease, rawClient, startServer, type TestServer } from './helpers.js';

const SECRET = 'claims-test-secret-claims-test-secret-0123';

class Clock {
  ms = Date.parse('2026-12-02T09:00:00Z');
  readonly now = () => this.ms;
}

/** A server whose leases are checked only when the test sweeps, on the test's clock. */
async function server(claims: ClaimOptions = {}, extra: Parameters<typeof startServer>[0] = {}) {
  const clock = new Clock();
  const s = await startServer({ claims: { sweepMs: 3_600_000, now: clock.now, ...claims }, ...extra });
  return { ...s, clock, claims: s.server.claims! };
}

const agent = (s: TestServer, planId: string, actor: string, token?: string) =>
  agentOn(s.url, planId, actor, token);

describe('leases', () => {
  it('free a task whose holder has been gone from awareness for absentMs, attributed to lease', async () => {
    const s = await server({ absentMs: 60_000 });
    const a = await agent(s, 'p', 'agent:a');
    const b = await agent(s, 'p', 'agent:b');
    const task = a.plan.add({ title: 'T' });
    expect(await a.plan.claim(task.id)).toMatchObject({ outcome: 'won', arbitrated: true });
    await s.claims.sweep();
    expect(s.claims.leases('p')).toEqual([
      { taskId: task.id, holder: 'agent:a', renewedAt: s.clock.ms, absentSince: null },
    ]);

    a.connection.destroy();
    await vi.waitFor(() => expect(s.server.hub.loadedRoom('p')!.conns.size).toBe(1));
    await s.claims.sweep();
    expect(s.claims.leases('p')[0]!.absentSince).toBe(s.clock.ms);
    s.clock.ms += 59_999;
    await s.claims.sweep();
    expect(b.plan.get(task.id)!.assignee).toBe('agent:a');
    s.clock.ms += 1;
    await s.claims.sweep();
    await until(b.plan, () => b.plan.get(task.id)!.assignee === null);
    expect(b.plan.get(task.id)).toMatchObject({ status: 'pending', updatedBy: 'lease' });
    expect(s.claims.leases('p')).toEqual([]);
    expect(await b.plan.claim(task.id)).toMatchObject({ outcome: 'won', holder: 'agent:b' });
  });

  it('keep the claim of a holder that comes back in time (its presence names it)', async () => {
    const s = await server({ absentMs: 60_000 });
    const a = await agent(s, 'p', 'agent:a');
    const task = a.plan.add({ title: 'T' });
    await a.plan.claim(task.id);
    a.connection.disconnect();
    await vi.waitFor(() => expect(s.server.hub.loadedRoom('p')?.conns.size ?? 0).toBe(0));
    await s.claims.sweep();
    s.clock.ms += 30_000;
    a.connection.connect();
    await a.connection.whenSynced(5_000);
    await vi.waitFor(async () => {
      await s.claims.sweep();
      expect(s.claims.leases('p')[0]!.absentSince).toBeNull();
    });
    s.clock.ms += 120_000;
    await s.claims.sweep();
    expect(s.claims.leases('p')).toHaveLength(1);
    expect(a.plan.get(task.id)!.assignee).toBe('agent:a');
  });

  it('lapse when not renewed within renewMs; claiming again renews', async () => {
    const s = await server({ absentMs: 0, renewMs: 10_000 });
    const a = await agent(s, 'p', 'agent:a');
    const task = a.plan.add({ title: 'T' });
    await a.plan.claim(task.id);
    s.clock.ms += 6_000;
    expect(await a.plan.claim(task.id)).toMatchObject({ outcome: 'won' });
    s.clock.ms += 6_000;
    await s.claims.sweep();
    expect(a.plan.get(task.id)!.assignee).toBe('agent:a');
    s.clock.ms += 4_000;
    await s.claims.sweep();
    await until(a.plan, () => a.plan.get(task.id)!.assignee === null);
    expect(a.plan.get(task.id)!.updatedBy).toBe('lease');
  });

  it('lapse while the plan is unloaded: the server loads it, frees the task and stores that', async () => {
    const s = await server({ absentMs: 1_000 }, { idleUnloadMs: 1 });
    const a = await agent(s, 'p', 'agent:a');
    const task = a.plan.add({ title: 'T' });
    await a.plan.claim(task.id);
    await a.connection.whenAcknowledged();
    a.connection.destroy();
    await vi.waitFor(() => expect(s.server.hub.isLoaded('p')).toBe(false));
    await s.claims.sweep();
    s.clock.ms += 1_000;
    await s.claims.sweep();
    const c = await agent(s, 'p', 'agent:c');
    expect(c.plan.get(task.id)).toMatchObject({ assignee: null, status: 'pending', updatedBy: 'lease' });
  });

  it('are dropped when the task is finished, so nothing lapses later', async () => {
    const s = await server({ absentMs: 1_000 });
    const a = await agent(s, 'p', 'agent:a');
    const task = a.plan.add({ title: 'T' });
    await a.plan.claim(task.id);
    a.plan.update(task.id, { status: 'done' });
    await a.connection.whenAcknowledged();
    await s.claims.sweep();
    expect(s.claims.leases('p')).toEqual([]);
  });
});

describe('leases on the real clock', () => {
  /** A server whose leases lapse 300 ms after the holder left, swept by its own timer (no test clock). */
  const shortLease = () => startServer({ claims: { absentMs: 300 } });

  it('free the task of a holder that left, by the server’s own timer, attributed to lease', async () => {
    const s = await shortLease();
    expect(await freedByLease(s.url, 'p')).toBeGreaterThanOrEqual(300);
  });

  it('a holder that returns after its lease lapsed finds the task taken, and cannot take it back', async () => {
    const s = await shortLease();
    const a = await agent(s, 'p', 'agent:a');
    const b = await agent(s, 'p', 'agent:b');
    const task = a.plan.add({ title: 'T' });
    expect(await a.plan.claim(task.id)).toMatchObject({ outcome: 'won' });
    await a.connection.whenAcknowledged();
    a.connection.disconnect();
    await until(b.plan, () => b.plan.get(task.id)?.assignee === null);
    expect(await b.plan.claim(task.id)).toMatchObject({ outcome: 'won', holder: 'agent:b' });
    await b.connection.whenAcknowledged();

    // Offline all along, `a` still believes it holds the task; back online it learns otherwise.
    expect(a.plan.get(task.id)?.assignee).toBe('agent:a');
    a.connection.connect();
    await a.connection.whenSynced(5_000);
    await until(a.plan, () => a.plan.get(task.id)?.assignee === 'agent:b');
    expect(await a.plan.claim(task.id)).toMatchObject({ outcome: 'lost', holder: 'agent:b' });
    expect(b.plan.get(task.id)?.assignee).toBe('agent:b');
    expect(s.server.claims!.leases('p')).toMatchObject([{ taskId: task.id, holder: 'agent:b' }]);
  });
});

describe('release and hand-off through the server', () => {
  it('are attributed and allowed to the holder only; the loser of a claim is told who holds it', async () => {
    const s = await server();
    const a = await agent(s, 'p', 'agent:a');
    const b = await agent(s, 'p', 'agent:b');
    const task = a.plan.add({ title: 'T' });
    await a.plan.claim(task.id);
    await until(b.plan, () => b.plan.get(task.id)?.assignee === 'agent:a');
    const lost = await b.plan.claim(task.id);
    expect(lost).toMatchObject({ outcome: 'lost', holder: 'agent:a', arbitrated: true });
    expect(lost.message).toContain('agent:a');
    await expect(b.plan.release(task.id)).rejects.toMatchObject({ code: 'conflict' });

    expect(await a.plan.handOff(task.id, 'agent:b')).toMatchObject({ outcome: 'won', holder: 'agent:b' });
    expect(b.plan.get(task.id)).toMatchObject({ assignee: 'agent:b', updatedBy: 'agent:a' });
    expect(s.claims.leases('p').map((l) => l.holder)).toEqual(['agent:b']);
    expect(await b.plan.release(task.id)).toMatchObject({ outcome: 'won', holder: null });
    expect(a.plan.get(task.id)).toMatchObject({ assignee: null, status: 'pending', updatedBy: 'agent:b' });
    expect(s.claims.leases('p')).toEqual([]);
    await expect(a.plan.claim('nope')).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('with auth on', () => {
  it("claims only as the token's subject or an agent it runs; a read-only token cannot claim", async () => {
    const s = await server({}, { secret: SECRET });
    const token = await signToken(SECRET, { plan: 'p', role: 'write', sub: 'bot' });
    const owner = await agent(s, 'p', 'agent:bot', token);
    const task = owner.plan.add({ title: 'T' });
    const other = await agent(s, 'p', 'agent:mallory', token);
    await until(other.plan, () => other.plan.has(task.id));
    await expect(other.plan.claim(task.id)).rejects.toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('agent:bot'),
    });
    const worker = await agent(s, 'p', 'agent:bot/2', token);
    await until(worker.plan, () => worker.plan.has(task.id));
    expect(await worker.plan.claim(task.id)).toMatchObject({ outcome: 'won', holder: 'agent:bot/2' });

    const readOnly = await signToken(SECRET, { plan: 'p', role: 'read', sub: 'viewer' });
    const viewer = await agent(s, 'p', 'agent:viewer', readOnly);
    const second = owner.plan.add({ title: 'U' });
    await until(viewer.plan, () => viewer.plan.has(second.id));
    await expect(viewer.plan.claim(second.id)).rejects.toMatchObject({ code: 'forbidden' });
    expect(owner.plan.get(second.id)!.assignee).toBeNull();
  });
});

describe('offline', () => {
  it('a claim is tentative, not written, and settles once connected: lost to who claimed meanwhile, else won', async () => {
    const s = await server();
    const a = await agent(s, 'p', 'agent:a');
    const b = await agent(s, 'p', 'agent:b');
    const [contested, free] = a.plan.addMany([{ title: 'contested' }, { title: 'free' }]);
    await until(b.plan, () => b.plan.list().length === 2);
    a.connection.disconnect();

    const first = await a.plan.claim(contested!.id);
    expect(first).toMatchObject({ outcome: 'tentative', holder: 'agent:a', arbitrated: false });
    expect(a.plan.get(contested!.id)!.assignee).toBeNull();
    const second = await a.plan.claimNext();
    expect(second).toMatchObject({ outcome: 'tentative', taskId: free!.id });
    expect(await b.plan.claim(contested!.id)).toMatchObject({ outcome: 'won' });

    a.connection.connect();
    expect(await first.settled).toMatchObject({ outcome: 'lost', holder: 'agent:b', arbitrated: true });
    expect(await second.settled).toMatchObject({ outcome: 'won', holder: 'agent:a', arbitrated: true });
    expect(a.plan.get(free!.id)!.assignee).toBe('agent:a');
    expect(a.plan.get(contested!.id)!.assignee).toBe('agent:b');
  });
});

describe('the wire', () => {
  it('answers a request resent with the same nonce again instead of applying it twice', async () => {
    const s = await server();
    const a = await agent(s, 'p', 'agent:a');
    a.plan.addMany([{ title: 'one' }, { title: 'two' }]);
    await a.connection.whenAcknowledged();
    const raw = rawClient(s.url, 'p');
    await raw.opened;
    const isReply = (m: Uint8Array) => m[0] === 100 && m[1] === ClaimMessageType.Reply;
    const request = { op: 'claim_next' as const, nonce: 'n-1', actor: 'agent:raw', filter: {} };
    raw.send(encodeClaimRequest({ ...request, reqId: 1 }));
    raw.send(encodeClaimRequest({ ...request, reqId: 2 }));
    await vi.waitFor(() => expect(raw.messages.filter(isReply)).toHaveLength(2));
    const replies = raw.messages.filter(isReply).map((m) => decodeClaimReply(skip(m)));
    expect(replies.map((r) => r.reqId).sort()).toEqual([1, 2]);
    expect(replies[0]).toMatchObject({ outcome: 'won', holder: 'agent:raw' });
    expect(replies[1]!.taskId).toBe(replies[0]!.taskId);
    await until(a.plan, () => a.plan.list({ assignee: 'agent:raw' }).length === 1);
    expect(a.plan.list({ assignee: 'agent:raw' })).toHaveLength(1);
  });

  it('closes a connection that sends a malformed claim message with 4400', async () => {
    const s = await server();
    const raw = rawClient(s.url, 'p');
    await raw.opened;
    raw.send([100, ClaimMessageType.ClaimNext, 1, 1, 0x6e, 0, 2, 0x5b, 0x5d]); // filter "[]"
    expect((await raw.closed).code).toBe(4400);
  });
});

/** A decoder past the leading message type (100). */
function skip(message: Uint8Array): decoding.Decoder {
  const decoder = decoding.createDecoder(message);
  decoding.readVarUint(decoder);
  return decoder;
}
