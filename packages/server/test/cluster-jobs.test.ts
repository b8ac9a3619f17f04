// Background jobs of a cluster run once: a due wake-up swept by three instances at the same moment fires on one,
// and a wake-up whose plan was indexed only by an instance that is gone fires, once, on an instance started later
// (its index is built from PostgreSQL) or on one already running (the index is shared in Redis). A lease granted
// through an instance that is gone lapses on the others, once, as `lease`, whether or not they have its plan
// loaded. A turn whose judging instance died is judged once by another after the lock lapses. The wake clock is
// injected and its sweeps driven; leases and judgements run on short real timers.
import { createChat, createPlan } from '@cairn/core';
import { until } from '@cairn/core/testing';
import { describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import { WAKE_INDEX_KEY } from '../src/cluster/index.js';
import { chatCompletionsJudge, type JudgeRun } from '../src/index.js';
import { type ClusterInstance, startInstance, useClusterServices } from './cluster-helpers.js';
import { startFakeLlm } from './fake-llm.js';
import { cairnClient, onCleanup } from './helpers.js';

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

/**
 * Three instances with a 1 s lease; agent:holder claims a new task through the first one and wins it (its
 * connection stays open, so the caller decides when the holder and that instance go).
 */
async function claimThroughFirst(planId: string, title: string) {
  const claims = { absentMs: 1000, sweepMs: 100 };
  const instances = (await Promise.all(
    [0, 1, 2].map(() => startInstance(services, { cluster: { claims } })),
  )) as [ClusterInstance, ClusterInstance, ClusterInstance];
  const holderDoc = new Y.Doc();
  const holder = createPlan({ doc: holderDoc, actor: 'agent:holder' });
  const conn = cairnClient(instances[0].url, planId, holderDoc, {
    plan: holder,
    presence: { id: 'agent:holder', name: 'holder', kind: 'agent' },
  });
  onCleanup(() => holder.destroy());
  await conn.whenSynced();
  const task = holder.add({ title });
  expect(await holder.claim(task.id)).toMatchObject({ outcome: 'won' });
  return { instances, planId, conn, task };
}

/** Writes a task waiting until T0 + 1 h through `instance`, acknowledged, then closes that instance. */
async function wakeUpOnInstanceThatGoes(instance: ClusterInstance, planId: string, title: string) {
  const writer = await client(instance.url, planId);
  const task = writer.plan.add({
    title,
    status: 'waiting_external',
    wakeAt: new Date(T0 + HOUR).toISOString(),
  });
  await writer.conn.whenAcknowledged();
  writer.conn.destroy();
  await instance.server.close();
  return task;
}

/**
 * Resolves once each instance has finished `count` more lease checks: a "still once" that counts checks, not
 * time, fails (times out) when the checks stall instead of passing for want of them.
 */
async function moreLeaseChecks(instances: ClusterInstance[], count: number) {
  const from = instances.map((i) => i.server.claims!.sweeps);
  await vi.waitFor(
    () => {
      for (const [n, i] of instances.entries()) {
        expect(i.server.claims!.sweeps).toBeGreaterThanOrEqual(from[n]! + count);
      }
    },
    { timeout: 30_000, interval: 50 },
  );
}

/** Every instance's wake sweep at once: the tasks woken, all together. */
async function sweepAll(instances: ClusterInstance[]) {
  return (await Promise.all(instances.map((i) => i.server.wake!.sweep()))).flat();
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
    const woken = await sweepAll(instances);
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
    const again = await sweepAll(instances);
    expect(again).toEqual([]);
  });

  it('a wake-up known only to an instance that is gone fires once on an instance started later', async () => {
    const time = clock();
    const gone = await startInstance(services, { wake: { timer: false, now: time.now } });
    const planId = 'acme:wake-elsewhere';
    const task = await wakeUpOnInstanceThatGoes(gone, planId, 'Check the visa');

    time.state.now = T0 + 2 * HOUR;
    const [b, c] = (await Promise.all(
      [0, 1].map(() => startInstance(services, { wake: { timer: false, now: time.now } })),
    )) as [ClusterInstance, ClusterInstance];
    await Promise.all([b.server.wake!.ready, c.server.wake!.ready]);
    const woken = await sweepAll([b, c]);
    expect(woken.map((e) => e.taskId)).toEqual([task.id]);
    const reader = await client(c.url, planId);
    await until(reader.plan, () => reader.plan.get(task.id)?.status === 'in_progress');
    expect(reader.plan.get(task.id)).toMatchObject({ status: 'in_progress', updatedBy: 'wake' });
  });

  it('a wake-up set after the others started, on an instance that is then gone, fires once on another', async () => {
    const time = clock();
    const [gone, b, c] = (await Promise.all(
      [0, 1, 2].map(() => startInstance(services, { wake: { timer: false, now: time.now } })),
    )) as [ClusterInstance, ClusterInstance, ClusterInstance];
    await Promise.all([gone, b, c].map((i) => i.server.wake!.ready));
    // The plan is loaded only where it is written; the others built their index before it existed.
    const planId = 'acme:wake-after-start';
    const task = await wakeUpOnInstanceThatGoes(gone, planId, 'Renew the lease');

    time.state.now = T0 + 2 * HOUR;
    const woken = await sweepAll([b, c]);
    expect(woken.map((e) => e.taskId)).toEqual([task.id]);
    const again = await sweepAll([b, c]);
    expect(again).toEqual([]);
    const reader = await client(b.url, planId);
    await until(reader.plan, () => reader.plan.get(task.id)?.status === 'in_progress');
    expect(reader.plan.get(task.id)).toMatchObject({ status: 'in_progress', updatedBy: 'wake' });
    const notices = createChat(reader.doc, { actor: 'agent:scout' })
      .list()
      .filter((m) => m.role === 'system');
    expect(notices).toHaveLength(1);
    // Woken, the task left the shared index: no server opens the plan for it again.
    expect(await b.cluster.redis.zScore(WAKE_INDEX_KEY, `${planId}\n${task.id}`)).toBeNull();
  });

  it('a lease held through an instance that is gone lapses once, as `lease`, on the others', async () => {
    const { instances, planId, conn, task } = await claimThroughFirst('acme:lease', 'Hold me');
    const [a, b, c] = instances;
    const watchers = await Promise.all([b, c].map((i) => client(i.url, planId)));
    await Promise.all(
      watchers.map((w) => until(w.plan, () => w.plan.get(task.id)?.assignee === 'agent:holder')),
    );
    // Held past the lease (1 s, checked every 100 ms) while its holder is present: nobody frees it.
    await moreLeaseChecks([b, c], 15);
    expect(watchers[0]!.plan.get(task.id)?.assignee).toBe('agent:holder');

    conn.destroy();
    await a.server.close();
    await Promise.all(watchers.map((w) => until(w.plan, () => w.plan.get(task.id)?.assignee === null)));
    for (const w of watchers) {
      expect(w.plan.get(task.id)).toMatchObject({ assignee: null, status: 'pending', updatedBy: 'lease' });
    }
    await moreLeaseChecks([b, c], 15); // more checks: still freed once
    const lapses = [b, c].flatMap((i) => i.logger.lines.filter((l) => l.message === 'claim lapsed'));
    expect(lapses).toHaveLength(1);
  });
  it('a lease granted through an instance that is gone lapses once on instances that never loaded its plan', async () => {
    const { instances, planId, conn, task } = await claimThroughFirst(
      'acme:lease-unloaded',
      'Hold me, then vanish',
    );
    const [a, b, c] = instances;
    await conn.whenAcknowledged();
    conn.destroy();
    await a.server.close();

    const lapses = () => [b, c].flatMap((i) => i.logger.lines.filter((l) => l.message === 'claim lapsed'));
    await vi.waitFor(() => expect(lapses()).toHaveLength(1), { timeout: 30_000, interval: 100 });
    await moreLeaseChecks([b, c], 15); // more checks on both: still freed once
    expect(lapses()).toHaveLength(1);
    expect(lapses()[0]?.fields).toMatchObject({ plan: planId, task: task.id, holder: 'agent:holder' });
    const reader = await client(c.url, planId);
    await until(reader.plan, () => reader.plan.get(task.id)?.assignee === null);
    expect(reader.plan.get(task.id)).toMatchObject({ assignee: null, status: 'pending', updatedBy: 'lease' });
  }, 60_000);
  it('a turn whose judging instance died mid-judgement is judged once by another after its lock lapses', async () => {
    const judge = await startFakeLlm((call) => {
      const shown = JSON.parse(call.body.messages.at(-1)!.content) as { tasks: Array<{ id: string }> };
      return {
        content: JSON.stringify({
          tasks: shown.tasks.map((t) => ({ id: t.id, completed: 0.9, abandoned: 0 })),
        }),
      };
    });
    const options = {
      judge: chatCompletionsJudge({ baseUrl: judge.url, model: 'judge-1' }),
      autoClose: { settleMs: 1000, timeoutMs: 2000 },
      wake: false as const,
    };
    const [b, c] = (await Promise.all([0, 1].map(() => startInstance(services, options)))) as [
      ClusterInstance,
      ClusterInstance,
    ];
    const planId = 'acme:judged-elsewhere';
    const agent = await client(b.url, planId);
    const watcher = await client(c.url, planId);
    const task = agent.plan.add({ title: 'Book the train' });
    await agent.conn.whenAcknowledged();
    await until(watcher.plan, () => watcher.plan.get(task.id) !== undefined);
    createChat(agent.doc, { actor: 'user:ann' }).append({ role: 'user', text: 'Did you book the train?' });
    const reply = createChat(agent.doc, { actor: 'agent:scout' }).append({
      role: 'assistant',
      text: 'Booked.',
    });
    // An instance that took this turn and died before storing its judgement: its lock, and nothing else.
    await b.cluster.redis.set(`cairn:job:auto-close:${planId}:${reply.id}`, 'a-dead-instance', {
      expiration: { type: 'PX', value: 2500 },
    });
    const skipped = (i: ClusterInstance) =>
      new Promise<JudgeRun>((resolve) => i.server.autoClose!.once('judged', resolve));
    expect((await Promise.all([skipped(b), skipped(c)])).map((r) => r.skipped)).toEqual([
      'elsewhere',
      'elsewhere',
    ]);

    await until(agent.plan, () => agent.plan.get(task.id)?.status === 'done');
    expect(agent.plan.get(task.id)).toMatchObject({ status: 'done', updatedBy: 'auto_close' });
    // Until neither has anything left to do for the turn (the other saw it done): judged once, and marked done.
    await vi.waitFor(() => expect([b, c].map((i) => i.server.autoClose!.turnsInHand)).toEqual([0, 0]), {
      timeout: 30_000,
      interval: 50,
    });
    expect(judge.calls).toHaveLength(1);
    expect(await b.cluster.redis.get(`cairn:job:auto-close:${planId}:${reply.id}`)).toBe('done');
  }, 60_000);
});
