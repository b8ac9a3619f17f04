// Acknowledgements in a cluster keep their meaning: three `cairn serve --redis --postgres` processes take streams
// of acknowledged writes from clients on all three; one is killed with kill -9, and every acknowledged edit is on
// the survivors, in PostgreSQL, and on the killed one after its restart. A Redis restart during writes (Redis
// without persistence, so its streams are lost) loses nothing acknowledged, and the instances recover by
// themselves. A wake-up set on the killed instance fires once on a survivor. Services down at start are named.
import { createChat, createPlan } from '@cairn/core';
import { until } from '@cairn/core/testing';
import type { PlanConnection } from '@cairn/core/websocket';
import { describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import { SOURCE_CLI_ARGS } from '../../../test/source-cli.js';
import { PostgresStore } from '../src/cluster/index.js';
import { type Child, start } from './child-server.js';
import { serveChild, startInstance, useClusterServices } from './cluster-helpers.js';
import { cairnClient } from './helpers.js';
import { freePort } from './services.js';

const services = useClusterServices();

/**
 * A client writing one key after another, each acknowledged before the next; `acked` holds what was. Each write
 * also overwrites the shared key `last`, so it rests on whichever write (from any instance) it saw there before.
 */
function writer(url: string, planId: string, name: string) {
  const doc = new Y.Doc();
  const state = { doc, acked: [] as string[], failures: 0, stop: false, conn: null as PlanConnection | null };
  state.conn = cairnClient(url, planId, doc);
  const done = (async () => {
    await state.conn!.whenSynced(30_000);
    for (let n = 0; !state.stop; n++) {
      const key = `${name}-${n}`;
      doc.transact(() => {
        doc.getMap('tasks').set(key, n);
        doc.getMap('tasks').set('last', key);
      });
      try {
        await state.conn!.whenAcknowledged(5_000);
        state.acked.push(key);
      } catch {
        state.failures++; // not acknowledged: not counted, though it may well be stored
      }
    }
  })();
  return Object.assign(state, { done });
}

async function keysIn(url: string, planId: string): Promise<Set<string>> {
  const doc = new Y.Doc();
  const conn = cairnClient(url, planId, doc);
  await conn.whenSynced(30_000);
  const keys = new Set(doc.getMap('tasks').keys());
  conn.destroy();
  return keys;
}

/** The keys PostgreSQL holds; it must hold every update a stored one rests on (nothing left pending). */
async function storedKeys(url: string, planId: string): Promise<Set<string>> {
  const store = await PostgresStore.connect(url, { mode: 'cluster' });
  try {
    const doc = new Y.Doc();
    for (const u of await store.readStored(planId)) Y.applyUpdate(doc, u);
    expect(doc.store.pendingStructs).toBeNull();
    expect(doc.store.pendingDs).toBeNull();
    return new Set(doc.getMap('tasks').keys());
  } finally {
    await store.close();
  }
}

const serveInstance = (port: number): Promise<Child> => serveChild(services, port);

/**
 * Stops the writers; every edit they had acknowledged must be in PostgreSQL (read first, around every instance,
 * before any client could resend) and, once caught up, on each of `instances`. Resolves with those edits.
 */
async function stopAndCheckAcked(
  writers: ReturnType<typeof writer>[],
  planId: string,
  instances: { url: string }[],
): Promise<string[]> {
  for (const w of writers) w.stop = true;
  await Promise.all(writers.map((w) => w.done));
  const everyAcked = writers.flatMap((w) => w.acked);
  const stored = await storedKeys(services.postgres.url, planId);
  expect(everyAcked.filter((key) => !stored.has(key))).toEqual([]);
  for (const instance of instances) {
    await vi.waitFor(async () => {
      const keys = await keysIn(instance.url, planId);
      expect(everyAcked.filter((key) => !keys.has(key))).toEqual([]);
    });
  }
  return everyAcked;
}

describe('cluster under failures', () => {
  it('kill -9 of one instance loses no acknowledged edit: on the survivors, in PostgreSQL, after its restart', async () => {
    const ports = await Promise.all([0, 1, 2].map(() => freePort()));
    const children = await Promise.all(ports.map(serveInstance));
    const plan = 'acme:kill';
    const writers = children.map((child, i) => writer(child.url, plan, `w${i}`));
    await vi.waitFor(() => expect(writers.every((w) => w.acked.length >= 20)).toBe(true), {
      timeout: 60_000,
    });

    children[2]!.child.kill('SIGKILL');
    await children[2]!.exited;
    const ackedAtKill = writers.map((w) => [...w.acked]);
    // The killed instance's client moves to a survivor with its own doc, as a load balancer would send it.
    writers[2]!.stop = true;
    writers[2]!.conn!.destroy();
    await writers[2]!.done;
    const moved = cairnClient(children[0]!.url, plan, writers[2]!.doc);
    await moved.whenSynced(30_000);
    await vi.waitFor(() => expect(writers[0]!.acked.length).toBeGreaterThan(ackedAtKill[0]!.length + 10), {
      timeout: 60_000,
    });
    const everyAcked = await stopAndCheckAcked(writers, plan, [children[0]!, children[1]!]);
    const restarted = await serveInstance(ports[2]!);
    const keys = await keysIn(restarted.url, plan);
    expect(everyAcked.filter((key) => !keys.has(key))).toEqual([]);
    expect(everyAcked.length).toBeGreaterThan(60);
  }, 180_000);

  it('a wake-up set on an instance killed with kill -9 before it is due fires once on a survivor that never loaded the plan', async () => {
    const killed = await serveInstance(await freePort());
    const survivors = await Promise.all(
      [0, 1].map(() => startInstance(services, { wake: { timer: false } })),
    );
    await Promise.all(survivors.map((i) => i.server.wake!.ready));
    const planId = 'acme:wake-kill';
    const doc = new Y.Doc();
    const conn = cairnClient(killed.url, planId, doc);
    await conn.whenSynced(30_000);
    const plan = createPlan({ doc, actor: 'agent:scout' });
    const wakeAt = Date.now() + 8_000;
    const task = plan.add({
      title: 'Chase the invoice',
      status: 'waiting_external',
      wakeAt: new Date(wakeAt).toISOString(),
    });
    await conn.whenAcknowledged(30_000);
    killed.child.kill('SIGKILL');
    await killed.exited;
    conn.destroy();
    plan.destroy();
    expect(Date.now()).toBeLessThan(wakeAt); // killed before it could fire the wake-up itself

    await new Promise((resolve) => setTimeout(resolve, wakeAt - Date.now() + 100));
    const woken = (await Promise.all(survivors.map((i) => i.server.wake!.sweep()))).flat();
    expect(woken.map((e) => e.taskId)).toEqual([task.id]);
    expect((await Promise.all(survivors.map((i) => i.server.wake!.sweep()))).flat()).toEqual([]);
    const readerDoc = new Y.Doc();
    const reader = cairnClient(survivors[1]!.url, planId, readerDoc);
    await reader.whenSynced(30_000);
    const readerPlan = createPlan({ doc: readerDoc, actor: 'agent:scout' });
    await until(readerPlan, () => readerPlan.get(task.id)?.status === 'in_progress');
    expect(readerPlan.get(task.id)).toMatchObject({ status: 'in_progress', updatedBy: 'wake' });
    expect(
      createChat(readerDoc, { actor: 'agent:scout' })
        .list()
        .filter((m) => m.role === 'system'),
    ).toHaveLength(1);
    readerPlan.destroy();
    reader.destroy();
  }, 120_000);

  it('a Redis restart during writes loses nothing acknowledged; writes fail loudly meanwhile and recover by themselves', async () => {
    const instances = await Promise.all([0, 1, 2].map(() => startInstance(services)));
    const plan = 'acme:redis-restart';
    const writers = instances.map((instance, i) => writer(instance.url, plan, `r${i}`));
    await vi.waitFor(() => expect(writers.every((w) => w.acked.length >= 10)).toBe(true), {
      timeout: 60_000,
    });

    await services.redis.stop('kill'); // no persistence: every stream is gone
    const before = writers.map((w) => w.acked.length);
    await vi.waitFor(() => expect(writers.every((w) => w.failures > 0)).toBe(true), { timeout: 30_000 });
    const health = await (await fetch(`${instances[0]!.http}/healthz`)).json();
    expect(health).toMatchObject({
      ok: false,
      services: { postgres: 'ok', redis: expect.stringMatching(/redis:\/\//) },
    });
    await services.redis.start();
    // No instance restarts: acknowledgements resume on all three.
    await vi.waitFor(() => expect(writers.every((w, i) => w.acked.length > before[i]! + 5)).toBe(true), {
      timeout: 60_000,
    });
    // Every instance caught up on what the others wrote while Redis was away.
    const everyAcked = await stopAndCheckAcked(writers, plan, instances);
    // The writers' own docs converge too (they only ever talked to their own instance).
    await vi.waitFor(() => {
      for (const w of writers)
        expect(everyAcked.filter((key) => !w.doc.getMap('tasks').has(key))).toEqual([]);
    });
    expect((await (await fetch(`${instances[1]!.http}/healthz`)).json()).ok).toBe(true);
  }, 180_000);

  it('`cairn serve` refuses to start when Redis or PostgreSQL is down, naming the URL', async () => {
    const serve = (...cluster: string[]) => start([...SOURCE_CLI_ARGS, 'serve', '--port', '0', ...cluster]);
    const escaped = (url: string) => url.replace(/[/.]/g, '\\$&');
    const down = `redis://127.0.0.1:${await freePort()}`;
    await expect(serve('--redis', down, '--postgres', services.postgres.url)).rejects.toThrow(
      new RegExp(`Could not reach Redis at ${escaped(down)}`),
    );
    await expect(serve('--redis', services.redis.url)).rejects.toThrow(/needs --postgres URL/);
    const pgDown = `postgres://cairn@127.0.0.1:${await freePort()}/cairn`;
    await expect(serve('--redis', services.redis.url, '--postgres', pgDown)).rejects.toThrow(
      new RegExp(`Could not reach PostgreSQL at ${escaped(pgDown)}`),
    );
  }, 60_000);

  it('PostgreSQL going away fails acknowledgements (reads keep serving); they resume when it is back', async () => {
    const [a, b] = await Promise.all([startInstance(services), startInstance(services)]);
    const plan = 'acme:pg-away';
    const w = writer(a.url, plan, 'p');
    await vi.waitFor(() => expect(w.acked.length).toBeGreaterThan(10), { timeout: 60_000 });
    const reader = new Y.Doc();
    const readerConn = cairnClient(b.url, plan, reader);
    await readerConn.whenSynced(30_000);

    await services.postgres.stop('term');
    const before = w.acked.length;
    await vi.waitFor(() => expect(w.failures).toBeGreaterThan(0), { timeout: 30_000 });
    const health = await (await fetch(`${a.http}/healthz`)).json();
    expect(health).toMatchObject({
      ok: false,
      services: { redis: 'ok', postgres: expect.stringMatching(/postgres:\/\//) },
    });
    // The loaded plan is still served: edits made meanwhile reach the other instance's client.
    await vi.waitFor(() => expect(reader.getMap('tasks').size).toBeGreaterThan(before));
    await services.postgres.start();
    await vi.waitFor(() => expect(w.acked.length).toBeGreaterThan(before + 5), { timeout: 60_000 });
    w.stop = true;
    await w.done;
    const stored = await storedKeys(services.postgres.url, plan);
    expect(w.acked.filter((key) => !stored.has(key))).toEqual([]);
  }, 120_000);
});
