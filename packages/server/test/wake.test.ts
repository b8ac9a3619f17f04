// Wake-ups against a real server and data directory: due waiting tasks go back to in_progress as `wake` with a
// chat notice, found through the persisted index of wake times (no plan is loaded to look), which follows
// changes of loaded docs and is rebuilt from disk when missing. The clock is injected; sweeps are driven.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createChat, createPlan, type Plan, type TaskInput } from '@cairn/core';
import { openFilePersistence } from '@cairn/core/fs';
import { until } from '@cairn/core/testing';
import { describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import type { TaskWokenEvent } from '../src/extensions/wake.js';
import { cairnClient, seedPlan, startServer, type TestServer, tempDir } from './helpers.js';

const T0 = Date.parse('2026-12-02T09:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();
const HOUR = 3_600_000;

function clock(start = T0) {
  const state = { now: start };
  return { state, now: () => state.now };
}

/** Seeds tasks stamped at T0, the start of every test's clock. */
function seed(server: TestServer, planId: string, inputs: TaskInput[]): Promise<string[]> {
  return seedPlan(server, planId, inputs, () => T0);
}

async function live(server: TestServer, planId: string): Promise<{ plan: Plan; doc: Y.Doc }> {
  const doc = new Y.Doc();
  const conn = cairnClient(server.url, planId, doc);
  await conn.whenSynced();
  return { plan: createPlan({ doc, actor: 'agent:scout' }), doc };
}

describe('wake-ups', () => {
  it('wakes due waiting tasks as `wake`, with a notice in the chat and a task_woken event', async () => {
    const time = clock();
    const server = await startServer({ wake: { timer: false, now: time.now } });
    const wake = server.server.wake!;
    const [booking, hotel, working] = await seed(server, 'acme:conv:1', [
      {
        title: "Book a table at Luigi's",
        status: 'waiting_user',
        wakeAt: iso(T0 + HOUR),
        nextStep: 'Ask the user whether 8 pm works',
      },
      { title: 'Find a hotel', status: 'waiting_external', wakeAt: iso(T0 + 2 * HOUR) },
      { title: 'Answer the email', status: 'in_progress' },
    ]);
    expect(wake.entries().map((e) => e.taskId)).toEqual([booking, hotel]);
    const client = await live(server, 'acme:conv:1');
    const events: TaskWokenEvent[] = [];
    wake.on('task_woken', (event) => events.push(event));

    expect(await wake.sweep()).toEqual([]); // nothing due yet
    time.state.now = T0 + HOUR;
    const seen = until(client.plan, (p) => p.get(booking!)?.status === 'in_progress');
    const woken = await wake.sweep();
    expect(woken).toEqual([
      expect.objectContaining({
        planId: 'acme:conv:1',
        taskId: booking,
        title: "Book a table at Luigi's",
        nextStep: 'Ask the user whether 8 pm works',
        wakeAt: iso(T0 + HOUR),
        wokenAt: T0 + HOUR,
      }),
    ]);
    expect(events).toEqual(woken);
    await seen;
    expect(client.plan.get(booking!)).toMatchObject({
      status: 'in_progress',
      wakeAt: null,
      updatedBy: 'wake',
    });
    expect(client.plan.get(hotel!)?.status).toBe('waiting_external');
    expect(client.plan.get(working!)?.updatedBy).toBe('agent:seed');
    const chat = createChat(client.doc, { actor: 'user:ann' });
    expect(chat.list()).toEqual([
      expect.objectContaining({
        id: woken[0]!.messageId,
        role: 'system',
        actor: 'wake',
        text: `Task wake-up: "Book a table at Luigi's" is due. Next step: Ask the user whether 8 pm works`,
      }),
    ]);
    expect(wake.entries().map((e) => e.taskId)).toEqual([hotel]);
    expect(await wake.sweep()).toEqual([]); // woken once
    expect(await server.server.hub.registry.render()).toContain('cairn_tasks_woken_total 1');
  });

  it('keeps the index current from changes to loaded docs, and persists it in the data directory', async () => {
    const time = clock();
    const server = await startServer({ wake: { timer: false, now: time.now } });
    const wake = server.server.wake!;
    const [id] = await seed(server, 'acme:conv:2', [{ title: 'Call back', status: 'in_progress' }]);
    const client = await live(server, 'acme:conv:2');
    expect(wake.entries()).toEqual([]);

    // A remote client parks the task: the index learns its wake time from the synced update.
    client.plan.update(id!, { status: 'waiting_user', wakeAt: iso(T0 + HOUR) });
    await vi.waitFor(() =>
      expect(wake.entries()).toEqual([{ planId: 'acme:conv:2', taskId: id, at: T0 + HOUR }]),
    );
    await wake.persist();
    const file = JSON.parse(await readFile(join(server.dir, '.cairn-wake.json'), 'utf8'));
    expect(file).toEqual({ version: 1, plans: { 'acme:conv:2': { [id!]: iso(T0 + HOUR) } } });

    client.plan.update(id!, { wakeAt: iso(T0 + 3 * HOUR) });
    await vi.waitFor(() => expect(wake.nextWakeAt()).toBe(T0 + 3 * HOUR));
    client.plan.update(id!, { status: 'in_progress' });
    await vi.waitFor(() => expect(wake.entries()).toEqual([]));
    await wake.persist();
    expect(JSON.parse(await readFile(join(server.dir, '.cairn-wake.json'), 'utf8')).plans).toEqual({});
  });

  it('finds due tasks after a restart from the index alone, loading only the plans with due tasks', async () => {
    const time = clock();
    const first = await startServer({ wake: { timer: false, now: time.now } });
    const [soon] = await seed(first, 'acme:soon', [
      { title: 'Soon', status: 'waiting_user', wakeAt: iso(T0 + HOUR) },
    ]);
    await seed(first, 'acme:later', [{ title: 'Later', status: 'waiting_user', wakeAt: iso(T0 + 5 * HOUR) }]);
    await seed(first, 'acme:none', [{ title: 'Not waiting' }]);
    await first.server.close();

    const second = await startServer({ dataDir: first.dir, wake: { timer: false, now: time.now } });
    const wake = second.server.wake!;
    await wake.ready;
    expect(second.server.hub.roomCount).toBe(0); // read from the index, not from the plans
    expect(wake.entries().map((e) => e.planId)).toEqual(['acme:soon', 'acme:later']);

    time.state.now = T0 + 2 * HOUR;
    const woken = await wake.sweep();
    expect(woken.map((e) => e.taskId)).toEqual([soon]);
    expect(second.server.hub.isLoaded('acme:later')).toBe(false);
    expect(second.server.hub.isLoaded('acme:none')).toBe(false);
  });

  it('rebuilds a missing or malformed index from the plans on disk', async () => {
    const dir = await tempDir();
    // Plans written by an agent's own fs persistence: the same files the server serves.
    const open = openFilePersistence(dir);
    const ids: Record<string, string> = {};
    for (const [planId, wakeAt] of [
      ['acme:a', iso(T0 + HOUR)],
      ['acme:b', iso(T0 + 2 * HOUR)],
      ['acme:c', null],
    ] as const) {
      const doc = new Y.Doc();
      const stored = open(planId, doc);
      await stored.whenLoaded;
      const plan = createPlan({ doc, actor: 'agent:offline' });
      ids[planId] = plan.add({ title: planId, status: wakeAt ? 'waiting_external' : 'pending', wakeAt }).id;
      await stored.close();
    }

    const first = await startServer({ dataDir: dir, wake: { timer: false } });
    await first.server.wake!.ready;
    expect(first.server.wake!.entries()).toEqual([
      { planId: 'acme:a', taskId: ids['acme:a'], at: T0 + HOUR },
      { planId: 'acme:b', taskId: ids['acme:b'], at: T0 + 2 * HOUR },
    ]);
    expect(first.logger.lines).toContainEqual(expect.objectContaining({ message: 'rebuilt the wake index' }));
    await first.server.close();
    expect(Object.keys(JSON.parse(await readFile(join(dir, '.cairn-wake.json'), 'utf8')).plans)).toEqual([
      'acme:a',
      'acme:b',
    ]);

    await writeFile(join(dir, '.cairn-wake.json'), '{"version": 1, "plans": ');
    const second = await startServer({ dataDir: dir, wake: { timer: false } });
    await second.server.wake!.ready;
    expect(second.server.wake!.entries()).toHaveLength(2);
    expect(second.logger.lines).toContainEqual(
      expect.objectContaining({ level: 'warn', message: 'the wake index is malformed; rebuilding it' }),
    );
  });

  it('checks the doc before waking: a stale index entry wakes nothing and is dropped', async () => {
    const time = clock(T0 + 10 * HOUR);
    const first = await startServer({ wake: { timer: false, now: time.now } });
    const [id] = await seed(first, 'acme:stale', [{ title: 'Already done', status: 'done' }]);
    await first.server.close();
    // An index that is behind the doc (say, written before a crash).
    await writeFile(
      join(first.dir, '.cairn-wake.json'),
      JSON.stringify({ version: 1, plans: { 'acme:stale': { [id!]: iso(T0) } } }),
    );
    const second = await startServer({ dataDir: first.dir, wake: { timer: false, now: time.now } });
    const wake = second.server.wake!;
    await wake.ready;
    expect(wake.entries()).toHaveLength(1);
    expect(await wake.sweep()).toEqual([]);
    expect(wake.entries()).toEqual([]);
    const handle = await second.server.hub.openPlan('acme:stale');
    expect(handle.doc.getArray('chat').length).toBe(0);
    handle.release();
  });

  it('sweeps on its own timer when a wake time comes', async () => {
    const server = await startServer();
    const wake = server.server.wake!;
    const woken = new Promise<TaskWokenEvent>((resolve) => wake.once('task_woken', resolve));
    const [id] = await seed(server, 'acme:timer', [
      { title: 'Ping the courier', status: 'waiting_external', wakeAt: iso(Date.now() + 50) },
    ]);
    expect((await woken).taskId).toBe(id);
  });
});
