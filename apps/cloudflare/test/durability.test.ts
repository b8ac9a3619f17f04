// What the object keeps across the runtime's death and its own eviction: kill -9 of workerd during a stream of
// acknowledged writes loses none of them and clients reconnect; an object evicted while its sockets stay open
// (WebSocket Hibernation) wakes on the next message, greets its sockets again (SyncStep1) and handles it.
import { createPlan } from '@cairn/core';
import { until } from '@cairn/core/testing';
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';
import { signToken } from '../../../packages/server/src/index.js';
import { cairnClient, rawClient } from '../../../packages/server/test/helpers.js';
import { writerAndStockReader } from './clients.js';
import { objectFile as fileOf, sqlite } from './object-files.js';
import { type RunningWorkerd, startWorkerd } from './workerd.js';

const SECRET = 'edge-crash-secret-edge-crash-secret-0123456789';
/** workerd evicts an object whose sockets have been idle for about 10 s (it keeps the sockets open). */
const EVICTION_IDLE_MS = 12_000;

let w: RunningWorkerd;
const ws = () => `ws://127.0.0.1:${w.port}`;
const token = (plan: string, role: 'read' | 'write' = 'write') =>
  signToken(SECRET, { plan, role, sub: 'agent:crash' });

beforeAll(async () => {
  w = await startWorkerd({ vars: { CAIRN_SECRET: SECRET } });
});
afterAll(() => w?.dispose());
const objectFile = (plan: string) => fileOf(w.storageDir, plan);

/** Applies what a sync message carries (SyncStep2 or Update) to `doc`; other messages are left alone. */
function applySync(doc: Y.Doc, message: Uint8Array): void {
  const decoder = decoding.createDecoder(message);
  if (decoding.readVarUint(decoder) !== 0) return;
  const subType = decoding.readVarUint(decoder);
  if (subType === 1 || subType === 2) Y.applyUpdate(doc, decoding.readVarUint8Array(decoder));
}

/** Whether a message is a SyncStep1 (what the server greets a socket with). */
function isSyncStep1(message: Uint8Array): boolean {
  const decoder = decoding.createDecoder(message);
  return decoding.readVarUint(decoder) === 0 && decoding.readVarUint(decoder) === 0;
}

describe('the Durable Object host survives', () => {
  it('kill -9 of workerd during acknowledged writes: every acknowledged task is there, clients reconnect', async () => {
    const plan = 'acme:crash';
    const {
      writerDoc: doc,
      writer,
      readerDoc: watcherDoc,
    } = await writerAndStockReader(ws(), plan, {
      write: await token(plan),
      read: await token(plan, 'read'),
    });
    const tasks = createPlan({ doc, actor: 'agent:crash' });
    const acknowledged: string[] = [];
    let killed = false;
    const stream = (async () => {
      for (let i = 0; ; i++) {
        const id = tasks.add({ title: `write ${i}` }).id;
        try {
          await writer.whenAcknowledged(3_000);
        } catch {
          return; // the runtime is gone: this write was never acknowledged
        }
        if (killed) return;
        acknowledged.push(id);
      }
    })();
    await until(tasks, () => acknowledged.length >= 25);
    killed = true;
    await w.kill9();
    writer.destroy(); // it would send its whole state again; the check below is of what the object stored
    await stream;
    expect(acknowledged.length).toBeGreaterThanOrEqual(25);

    await w.restart();
    const fresh = new Y.Doc();
    const reader = cairnClient(ws(), plan, fresh, { token: await token(plan, 'read') });
    await reader.whenSynced();
    const stored = createPlan({ doc: fresh, actor: 'agent:reader' });
    const missing = acknowledged.filter((id) => stored.get(id) === null);
    expect(missing).toEqual([]);
    // The stock client reconnects on its own and resyncs; the writer's document, connected again, sends the edits
    // that were never acknowledged, and the object stores them.
    const watched = createPlan({ doc: watcherDoc, actor: 'agent:watcher' });
    await until(watched, (p) => acknowledged.every((id) => p.get(id) !== null));
    const again = cairnClient(ws(), plan, doc, { token: await token(plan) });
    await again.whenSynced();
    await again.whenAcknowledged();
    await until(stored, (p) => p.list().length === tasks.list().length);
    // The stock client reconnected to the same address by itself: it sees what was written after the restart.
    const after = tasks.add({ title: 'after the restart' }).id;
    await again.whenAcknowledged();
    await until(watched, (p) => p.get(after) !== null && p.list().length === tasks.list().length);
  });

  it('eviction with idle sockets: the next message wakes the object, which greets again and relays it', async () => {
    const plan = 'acme:idle';
    const t = await token(plan);
    const a = rawClient(ws(), plan, { token: t });
    const b = rawClient(ws(), plan, { token: t });
    await a.next(isSyncStep1);
    await b.next(isSyncStep1);
    const greetingsBefore = b.messages.filter(isSyncStep1).length;
    // Idle: no client sends anything, and the object holds no timer that would keep it in memory.
    await new Promise((resolve) => setTimeout(resolve, EVICTION_IDLE_MS));

    const edit = new Y.Doc();
    const task = createPlan({ doc: edit, actor: 'agent:crash' }).add({ title: 'After the wake' });
    const encoder = encoding.createEncoder();
    encoding.writeVarUint(encoder, 0);
    syncProtocol.writeUpdate(encoder, Y.encodeStateAsUpdate(edit));
    a.send(encoding.toUint8Array(encoder));
    // The woken object attached both sockets again and greeted each: a fresh SyncStep1 (they resync what they
    // missed). An object that stayed in memory never greets a socket twice.
    await b.next((m) => isSyncStep1(m) && b.messages.filter(isSyncStep1).length > greetingsBefore);
    const seen = new Y.Doc();
    const reader = cairnClient(ws(), plan, seen, { token: await token(plan, 'read') });
    await reader.whenSynced();
    expect(createPlan({ doc: seen, actor: 'agent:reader' }).get(task.id)?.title).toBe('After the wake');
    // b got the update relayed too.
    await b.next((m) => {
      const d = decoding.createDecoder(m);
      return decoding.readVarUint(d) === 0 && decoding.readVarUint(d) === 2;
    });
  });

  it('eviction with idle sockets: whatever the first event is (the alarm, a request), the sockets are attached again and hear its writes; due times set in alarm() are kept', async () => {
    const plan = 'acme:woken';
    const api = `${w.url}/api/plans/${encodeURIComponent(plan)}/tools`;
    const t = await token(plan);
    const post = async (tool: string, body: unknown) => {
      const response = await fetch(`${api}/${tool}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(200);
      return response.json() as Promise<{ added: Array<{ id: string }> }>;
    };
    // Two wake-ups, both due after the object is evicted: the first is the event that wakes it; the second is a
    // due time the woken object sets again inside that alarm() (a fresh index), and it must still fire.
    const first = Date.now() + EVICTION_IDLE_MS + 1_000;
    const added = await post('add_tasks', {
      tasks: [
        { title: 'Call back', status: 'waiting_user', wakeAt: new Date(first).toISOString() },
        { title: 'Call again', status: 'waiting_user', wakeAt: new Date(first + 2_000).toISOString() },
      ],
    });
    const [callBack, callAgain] = added.added.map((task) => task.id);
    // A socket that sends nothing (no presence renewals): only the object's own events can reach it.
    const socket = rawClient(ws(), plan, { token: await token(plan, 'read') });
    await socket.next(isSyncStep1);
    const seen = new Y.Doc();
    // Asks for the plan as it is (SyncStep1 of an empty document); the answer is applied below with the rest.
    const ask = encoding.createEncoder();
    encoding.writeVarUint(ask, 0);
    syncProtocol.writeSyncStep1(ask, seen);
    socket.send(encoding.toUint8Array(ask));
    await socket.next((m) => {
      const d = decoding.createDecoder(m);
      return decoding.readVarUint(d) === 0 && decoding.readVarUint(d) === 1;
    });
    const view = createPlan({ doc: seen, actor: 'agent:reader' });
    // Greetings (SyncStep1) counted as messages are taken: the socket was greeted once so far.
    let greetings = 0;
    const heard = () => {
      for (const message of socket.messages.splice(0)) {
        if (isSyncStep1(message)) greetings++;
        applySync(seen, message);
      }
      return view;
    };
    const status = (id: string | undefined) => heard().get(id ?? '')?.status;
    heard();
    expect(greetings).toBe(1);

    // The alarm is the first event after the eviction: the woken object greets the socket and relays the wake-up.
    await expect.poll(() => status(callBack), { timeout: 30_000 }).toBe('in_progress');
    await expect.poll(() => status(callAgain), { timeout: 10_000 }).toBe('in_progress');
    // Greeted again: the object was evicted, and the alarm's incarnation attached the socket.
    expect(greetings).toBeGreaterThan(1);

    // Evicted again; now a request is the first event, and the socket hears its write.
    await new Promise((resolve) => setTimeout(resolve, EVICTION_IDLE_MS));
    const later = await post('add_tasks', { tasks: [{ title: 'Written after the second wake' }] });
    await expect
      .poll(() => heard().get(later.added[0]?.id ?? '')?.title, { timeout: 10_000 })
      .toBe('Written after the second wake');
  }, 90_000);

  it('a damaged row: the plan is refused (503, 4503) with where the damage is, and nothing is written over it', async () => {
    const plan = 'acme:damaged';
    const headers = { authorization: `Bearer ${await token(plan)}`, 'content-type': 'application/json' };
    const url = () => `${w.url}/api/plans/${encodeURIComponent(plan)}`;
    for (const title of ['First', 'Second']) {
      const added = await fetch(`${url()}/tools/add_tasks`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ tasks: [{ title }] }),
      });
      expect(added.status).toBe(200);
    }
    await w.kill9();
    const file = objectFile(plan);
    sqlite(
      file,
      'UPDATE cairn_updates SET crc = (crc + 1) % 4294967296 WHERE seq = (SELECT MIN(seq) FROM cairn_updates)',
    );
    const before = sqlite(file, 'SELECT seq, crc, hex(data) FROM cairn_updates ORDER BY seq');
    await w.restart();

    const read = await fetch(`${url()}/tasks`, { headers });
    expect(read.status).toBe(503);
    const body = (await read.json()) as {
      error: { code: string; message: string; damage: { path: string; offset: number } };
    };
    expect(body.error.code).toBe('storage');
    expect(body.error.message).toMatch(/damaged at record/);
    expect(body.error.damage).toMatchObject({ path: 'sqlite:cairn_updates' });
    const write = await fetch(`${url()}/tools/add_tasks`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ tasks: [{ title: 'Over it' }] }),
    });
    expect(write.status).toBe(503);
    const socket = rawClient(ws(), plan, { token: await token(plan) });
    expect((await socket.closed).code).toBe(4503);
    await w.kill9();
    expect(sqlite(file, 'SELECT seq, crc, hex(data) FROM cairn_updates ORDER BY seq')).toBe(before);
    await w.restart();
  });

  it("compacts a long log into the whole state by the core's policy; rows lost beside its snapshot are refused", async () => {
    const plan = 'acme:compacted';
    const doc = new Y.Doc();
    const writer = cairnClient(ws(), plan, doc, { token: await token(plan) });
    await writer.whenSynced();
    const tasks = createPlan({ doc, actor: 'agent:crash' });
    for (let i = 0; i < 600; i++) tasks.add({ title: `row ${i}` }); // one update, so one row, each
    await writer.whenAcknowledged(60_000);
    writer.destroy();
    await w.kill9();
    const file = objectFile(plan);
    // 500 rows after the first start a compaction: what is left is its one row and the rows written after it.
    expect(Number(sqlite(file, 'SELECT COUNT(*) FROM cairn_updates'))).toBeLessThan(200);
    expect(sqlite(file, 'SELECT COUNT(*) FROM cairn_snapshots')).toBe('1');
    await w.restart();
    const headers = { authorization: `Bearer ${await token(plan, 'read')}` };
    const read = () => fetch(`${w.url}/api/plans/${encodeURIComponent(plan)}/tasks`, { headers });
    const listed = (await (await read()).json()) as { total: number };
    expect(listed.total).toBe(600);

    await w.kill9();
    sqlite(file, 'DELETE FROM cairn_updates');
    await w.restart();
    const refused = await read();
    expect(refused.status).toBe(503);
    const body = (await refused.json()) as { error: { damage: { snapshot?: { path: string } } } };
    expect(body.error.damage.snapshot?.path).toBe('sqlite:cairn_snapshots');
    await w.kill9();
    expect(sqlite(file, 'SELECT COUNT(*) FROM cairn_snapshots')).toBe('1'); // nothing written over it
    await w.restart();
  });
});
