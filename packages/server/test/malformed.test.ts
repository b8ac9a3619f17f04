// A writer's Yjs update may put values that are not tasks into a plan (a string under tasks.x1, impossible times).
// The server stores it like any update; every HTTP read and tool call still answers, and the listing reports it.
import { describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import { seedPlan, serverState, startServer, stockClient, whenProviderSynced } from './helpers.js';

async function json(url: string, init: RequestInit = {}) {
  const response = await fetch(url, {
    ...init,
    headers: { 'content-type': 'application/json', ...(init.headers ?? {}) },
  });
  return { status: response.status, body: await response.json().catch(() => null) };
}

describe('a plan holding values that are not tasks', () => {
  it('answers every read and tool call over HTTP and reports what it skipped', async () => {
    const server = await startServer();
    const [id] = await seedPlan(server, 'bad', [{ title: 'Read the code' }]);
    // A stock client writes what no Cairn writer would.
    const doc = new Y.Doc();
    const provider = stockClient(server.url, 'bad', doc);
    await whenProviderSynced(provider);
    doc.transact(() => {
      const tasks = doc.getMap<unknown>('tasks');
      tasks.set('x1', 'a plain string');
      const task = tasks.get(id!) as Y.Map<unknown>;
      task.set('updatedAt', -1e308);
      task.set('num', 'seven');
    });
    await vi.waitFor(
      async () => {
        const copy = new Y.Doc();
        Y.applyUpdate(copy, await serverState(server, 'bad'));
        expect(copy.getMap('tasks').get('x1')).toBe('a plain string');
      },
      { timeout: 15_000, interval: 50 },
    );

    const base = `${server.http}/api/plans/bad`;
    const list = await json(`${base}/tasks`);
    expect(list.status).toBe(200);
    expect(list.body.tasks.map((t: { id: string }) => t.id)).toEqual([id]);
    // The report lists entries by id, and the task's id is random: compare in that order.
    const skipped = [
      {
        id: id!,
        reason: expect.stringMatching(/num holds the string "seven".*updatedAt holds the number -1e\+308/),
      },
      { id: 'x1', reason: expect.stringMatching(/not a task/) },
    ].sort((a, b) => (a.id < b.id ? -1 : 1));
    expect(list.body.malformed).toEqual(skipped);
    expect((await json(`${base}/tasks/${id}`)).body.task.updatedAt).toBe(0);
    expect((await fetch(`${base}/context`)).status).toBe(200);
    const calls: Array<[string, unknown]> = [
      ['add_tasks', { tasks: [{ title: 'one more' }] }],
      ['get_task', { id }],
      ['list_tasks', {}],
      ['update_tasks', { updates: [{ id, status: 'done' }] }],
    ];
    for (const [name, args] of calls) {
      const answer = await json(`${base}/tools/${name}`, { method: 'POST', body: JSON.stringify(args) });
      expect(answer.status, `${name}: ${JSON.stringify(answer.body)}`).toBe(200);
    }
    const familyCalls: Array<[string, string, unknown]> = [
      ['task_manage', 'task_manage', { action: 'add', text: 'one more' }],
      ['todo', 'todo', { action: 'list' }],
      ['task_graph', 'create_task', { title: 'one more' }],
      ['ongoing_task', 'get_ongoing_task', {}],
    ];
    for (const [family, name, args] of familyCalls) {
      const answer = await json(`${base}/tools/${name}?families=${family}`, {
        method: 'POST',
        body: JSON.stringify(args),
      });
      expect(answer.status, `${name}: ${JSON.stringify(answer.body)}`).toBe(200);
    }
  });
});
