// Auth over the wire: refused sockets get named close codes and not a byte of the plan (no token, a bad signature,
// a malformed or expired token, another plan), each refusal is counted in /metrics; tokens travel as ?token= or as
// a subprotocol; read-only connections never write, and their clients are told.
import { CloseCode } from '@cairn/core/protocol';
import { signToken } from '@cairn/server';
import { describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import {
  cairnClient,
  rawClient,
  stockClient,
  whenProviderSynced,
} from '../../packages/server/test/helpers.js';
import { type Contract, freshPlan, metricsPath } from './contract.js';

/** The plan's tasks map as a client that joins now sees it (what the server holds). */
export async function storedTasks(contract: Contract, planId: string): Promise<Record<string, unknown>> {
  const doc = new Y.Doc();
  const conn = cairnClient(contract.host().ws, planId, doc, { token: await contract.token(planId, 'read') });
  await conn.whenSynced();
  const tasks = doc.getMap('tasks').toJSON();
  conn.destroy();
  return tasks;
}

/** The value of `cairn_connections_refused_total{reason}` in /metrics (0 before the first refusal). */
async function refusedCount(contract: Contract, reason: string, plan: string): Promise<number> {
  const text = await (await fetch(`${contract.host().http}${metricsPath(contract, plan)}`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`cairn_connections_refused_total{reason="${reason}"}`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

export function authContract(contract: Contract): void {
  describe('refused connections', () => {
    it('closes with 4401 without a token, with a bad signature or an expired token', async () => {
      const url = contract.host().ws;
      const planId = freshPlan('acme');
      const before = await refusedCount(contract, 'unauthorized', planId);
      const none = rawClient(url, planId);
      const forged = rawClient(url, planId, {
        token: await signToken('another-secret-that-is-also-long-enough', { plan: planId, role: 'admin' }),
      });
      const expired = rawClient(url, planId, {
        token: await contract.token(planId, 'write', { ttl: -3600 }),
      });
      const garbage = rawClient(url, planId, { token: 'not-a-jwt' });
      expect(await none.closed).toEqual({
        code: CloseCode.Unauthorized,
        reason: expect.stringMatching(/No token/),
      });
      expect(await forged.closed).toEqual({ code: 4401, reason: expect.stringMatching(/signature/) });
      expect(await expired.closed).toEqual({ code: 4401, reason: 'Token expired.' });
      expect(await garbage.closed).toEqual({ code: 4401, reason: expect.stringMatching(/malformed/) });
      // None of them received a byte of the plan.
      for (const c of [none, forged, expired, garbage]) expect(c.messages).toEqual([]);
      expect(await refusedCount(contract, 'unauthorized', planId)).toBe(before + 4);
    });

    it('closes with 4403 for a token of another plan; a glob token opens only its plans', async () => {
      const url = contract.host().ws;
      const other = rawClient(url, 'acme:2', { token: await contract.token('acme:1', 'write') });
      expect(await other.closed).toEqual({
        code: CloseCode.Forbidden,
        reason: expect.stringMatching(/acme:1/),
      });
      const outside = rawClient(url, 'globex:1', { token: await contract.token('acme:*', 'write') });
      expect((await outside.closed).code).toBe(4403);
      const inside = rawClient(url, freshPlan('acme'), { token: await contract.token('acme:*', 'write') });
      await inside.next((m) => m[0] === 0); // the server's sync step 1
    });

    it('tells a Cairn client it was refused for good, and stops reconnecting', async () => {
      const conn = cairnClient(contract.host().ws, 'acme:2', new Y.Doc(), {
        token: await contract.token('acme:1', 'write'),
      });
      const closed = new Promise((resolve) => conn.on('closed', resolve));
      await expect(conn.whenSynced()).rejects.toMatchObject({ code: 'forbidden' });
      expect(await closed).toMatchObject({ code: 4403 });
      expect(conn.status).toBe('closed');
    });
  });

  describe('tokens', () => {
    it('accepts the token as ?token= (stock client) and as a subprotocol (Cairn client)', async () => {
      const url = contract.host().ws;
      const planId = freshPlan('acme');
      const write = () => contract.token(planId, 'write');
      const a = new Y.Doc();
      const b = new Y.Doc();
      const stock = stockClient(url, planId, a, { token: await write() });
      const cairn = cairnClient(url, planId, b, { token: write });
      const inQuery = cairnClient(url, planId, new Y.Doc(), { token: await write(), tokenIn: 'query' });
      await inQuery.whenSynced();
      await Promise.all([whenProviderSynced(stock), cairn.whenSynced()]);
      a.getMap('tasks').set('x', 1);
      await vi.waitFor(() => expect(b.getMap('tasks').get('x')).toBe(1));
    });
  });

  describe('read-only connections', () => {
    it('never apply nor relay a reader’s edits; the reader is told and its ack fails', async () => {
      const url = contract.host().ws;
      const planId = freshPlan('acme');
      const otherPlan = freshPlan('acme');
      const writerDoc = new Y.Doc();
      const readerDoc = new Y.Doc();
      const otherDoc = new Y.Doc();
      const writer = cairnClient(url, planId, writerDoc, { token: await contract.token(planId, 'write') });
      const reader = cairnClient(url, planId, readerDoc, {
        token: await contract.token(planId, 'read'),
        presence: { id: 'r', name: 'Reader', kind: 'human' },
      });
      const elsewhere = cairnClient(url, otherPlan, otherDoc, {
        token: await contract.token(otherPlan, 'write'),
      });
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
      expect(await storedTasks(contract, planId)).toEqual({ t1: 'by writer', t3: 'by writer' });

      // Another room is unaffected.
      otherDoc.getMap('tasks').set('o', 1);
      await elsewhere.whenAcknowledged();
      expect(await storedTasks(contract, otherPlan)).toEqual({ o: 1 });
    });

    it('a stock client with a read token cannot change the plan', async () => {
      const planId = freshPlan('acme');
      const doc = new Y.Doc();
      const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
      try {
        const provider = stockClient(contract.host().ws, planId, doc, {
          token: await contract.token(planId, 'read'),
        });
        await whenProviderSynced(provider);
        doc.getMap('tasks').set('t1', 'nope');
        await vi.waitFor(() => expect(warn).toHaveBeenCalledWith(expect.stringMatching(/read-only/)));
      } finally {
        warn.mockRestore();
      }
      expect(await storedTasks(contract, planId)).toEqual({});
    });
  });
}
