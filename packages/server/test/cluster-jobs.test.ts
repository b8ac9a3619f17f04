// Background jobs of a cluster run once: a due wake-up swept by three instances at the same moment fires on one,
// and a wake-up whose plan was indexed only by an instance that is gone fires, once, on an instance started
// later (its index is built from PostgreSQL). The clock is injected; sweeps are driven.
import { createChat, createPlan } from '@cairn/core';
import { until } from '@cairn/core/testing';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { type ClusterInstance, startInstance, useClusterServices } from './cluster-helpers.js';
import { cairnClient } from './helpers.js';

const services = useClusterServices();
const T0 = Date.parse('2026-12-02T09:00:00Z');
const HOUR = 3_600_000;

function clock() {
  const state = { now: T0 };
  return { state, now: () => state.now };
}

async function client(url: string, planId: string) {
  const doc = new Y.Doc();
  const conn = cairnClient(url, planId, doc);
  await conn.whenSynced();
  return { doc, conn, plan: createPlan({ doc, actor: 'agent:scout', now: () => T0 }) };
}

describe('background jobs across instances', () => {
  it('a due wake-up swept by three instances at once fires exactly once', async () => {
    const time = clock();
    const instances = await Promise.all(
      [0, 1, 2].map(() => startInstance(services, { wake: { timer: false, now: time.now } })),
    );
    const planId = 'acme:wake-once';
    const clients = await Promise.all(instances.map((i) => client(i.url, planId)));
    const task = clients[0]!.plan.add({
      title: 'Call back',
      status: 'waiting_user',
      wakeAt: new Date(T0 + HOUR).toISOString(),
    });
    await clients[0]!.conn.whenAcknowledged();
    await Promise.all(clients.map((c) => until(c.plan, () => c.plan.get(task.id)?.wakeAt != null)));
    time.state.now = T0 + 2 * HOUR;
    const woken = (await Promise.all(instances.map((i) => i.server.wake!.sweep()))).flat();
    expect(woken.map((e) => e.taskId)).toEqual([task.id]);
    for (const c of clients) {
      await until(c.plan, () => c.plan.get(task.id)?.status === 'in_progress');
      expect(c.plan.get(task.id)).toMatchObject({ status: 'in_progress', updatedBy: 'wake' });
    }
    // One notice in the chat, not three; later sweeps find nothing more to do.
    const notices = () =>
      createChat(clients[1]!.doc, { actor: 'agent:scout' })
        .list()
        .filter((m) => m.role === 'system');
    expect(notices()).toHaveLength(1);
    const again = (await Promise.all(instances.map((i) => i.server.wake!.sweep()))).flat();
    expect(again).toEqual([]);
  });

  it('a wake-up known only to an instance that is gone fires once on an instance started later', async () => {
    const time = clock();
    const gone = await startInstance(services, { wake: { timer: false, now: time.now } });
    const planId = 'acme:wake-elsewhere';
    const writer = await client(gone.url, planId);
    const task = writer.plan.add({
      title: 'Check the visa',
      status: 'waiting_external',
      wakeAt: new Date(T0 + HOUR).toISOString(),
    });
    await writer.conn.whenAcknowledged();
    writer.conn.destroy();
    await gone.server.close();

    time.state.now = T0 + 2 * HOUR;
    const [b, c] = (await Promise.all(
      [0, 1].map(() => startInstance(services, { wake: { timer: false, now: time.now } })),
    )) as [ClusterInstance, ClusterInstance];
    await Promise.all([b.server.wake!.ready, c.server.wake!.ready]);
    const woken = (await Promise.all([b.server.wake!.sweep(), c.server.wake!.sweep()])).flat();
    expect(woken.map((e) => e.taskId)).toEqual([task.id]);
    const reader = await client(c.url, planId);
    await until(reader.plan, () => reader.plan.get(task.id)?.status === 'in_progress');
    expect(reader.plan.get(task.id)).toMatchObject({ status: 'in_progress', updatedBy: 'wake' });
  });
});
