// Sync: the stock y-websocket client and Cairn's own client (connectPlan) converge through the host, and an
// acknowledged edit is on the server (a client that joins later gets it).
import { createPlan } from '@cairn/core';
import { until } from '@cairn/core/testing';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { cairnClient, stockClient, whenProviderSynced } from '../../packages/server/test/helpers.js';
import { type Contract, freshPlan } from './contract.js';

export function syncContract(contract: Contract): void {
  describe('sync', () => {
    it('syncs a stock y-websocket client with Cairn client both ways', async () => {
      const planId = freshPlan();
      const token = await contract.token(planId, 'write', { sub: 'agent:sync' });
      const stockDoc = new Y.Doc();
      const stock = stockClient(contract.host().ws, planId, stockDoc, { token });
      const cairnDoc = new Y.Doc();
      const cairn = cairnClient(contract.host().ws, planId, cairnDoc, { token });
      await Promise.all([whenProviderSynced(stock), cairn.whenSynced()]);

      const plan = createPlan({ doc: cairnDoc, actor: 'agent:sync' });
      const task = plan.add({ title: 'Written by Cairn' });
      const stockPlan = createPlan({ doc: stockDoc, actor: 'agent:stock' });
      await until(stockPlan, () => stockPlan.get(task.id)?.title === 'Written by Cairn');
      stockPlan.update(task.id, { status: 'in_progress' });
      await until(plan, () => plan.get(task.id)?.status === 'in_progress');
      expect(plan.get(task.id)).toMatchObject({ status: 'in_progress', updatedBy: 'agent:stock' });
    });

    it('acknowledges an edit once stored: a client that joins afterwards gets it', async () => {
      const planId = freshPlan();
      const token = await contract.token(planId, 'write', { sub: 'agent:ack' });
      const doc = new Y.Doc();
      const conn = cairnClient(contract.host().ws, planId, doc, { token });
      await conn.whenSynced();
      const task = createPlan({ doc, actor: 'agent:ack' }).add({ title: 'Acknowledged' });
      await conn.whenAcknowledged();
      conn.destroy();

      const later = new Y.Doc();
      const second = cairnClient(contract.host().ws, planId, later, { token });
      await second.whenSynced();
      expect(createPlan({ doc: later, actor: 'agent:ack' }).get(task.id)?.title).toBe('Acknowledged');
    });
  });
}
