// The server as a real child process, killed with kill -9: what it acknowledged (edits, and claims answered `won`)
// is checked on disk right after the kill, by a fresh reader of the data directory, before any client that saw
// the acknowledgement can reconnect and resend it. Kills also land inside compactions on purpose. Then offline
// edits merge in after the restart, and SIGTERM flushes and exits cleanly with the single stdout line.
import { readdirSync, watch } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPlan, type Plan } from '@cairn/core';
import { inspectLog, openFilePersistence, planFiles, UpdateLog } from '@cairn/core/fs';
import type { PlanConnection } from '@cairn/core/websocket';
import { describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import { SOURCE_CLI_ARGS, SOURCE_NODE_ARGS } from '../../../test/source-cli.js';
import { start } from './child-server.js';
import { cairnClient, onCleanup, tempDir } from './helpers.js';

const COMPACTING = fileURLToPath(new URL('./fixtures/compacting-server.ts', import.meta.url));

const serve = (args: string[]) => start([...SOURCE_CLI_ARGS, 'serve', ...args]);
const compactingServer = (dir: string, records: number) =>
  start([...SOURCE_NODE_ARGS, COMPACTING, dir, String(records)]);

/**
 * The plan as the data directory holds it, read without the server and without any client: the log must not be
 * damaged (a torn tail would be an unacknowledged write, and is ignored like the server's open cuts it).
 */
function onDisk(dir: string, planId: string): Y.Doc {
  const path = planFiles(dir, planId).log;
  expect(inspectLog(path)).toMatchObject({ header: 'ok', damage: null });
  const doc = new Y.Doc();
  for (const update of UpdateLog.read(path) ?? []) Y.applyUpdate(doc, update);
  return doc;
}

/** `count` clients writing keys as fast as each write is acknowledged; `acked` lists the acknowledged keys. */
function writers(url: string, planId: string, count: number, value: (i: number) => unknown = (i) => i) {
  const clients: Array<{ doc: Y.Doc; conn: PlanConnection }> = [];
  for (let k = 0; k < count; k++) {
    const doc = new Y.Doc();
    clients.push({ doc, conn: cairnClient(url, planId, doc, { maxBackoffMs: 100 }) });
  }
  const acked: string[] = [];
  let stopped = false;
  const streams = clients.map(async ({ doc, conn }, k) => {
    await conn.whenSynced();
    for (let i = 0; !stopped; i++) {
      const key = `c${k}-${i}`;
      doc.getMap('tasks').set(key, value(i));
      await conn.whenAcknowledged();
      if (!stopped) acked.push(key);
    }
  });
  return {
    clients,
    acked,
    streams,
    /** Stops counting acknowledgements: call it in the same tick as the kill. */
    stop: () => {
      stopped = true;
      return [...acked];
    },
  };
}

/** Resolves when a compaction's temp file appears in `dir`. */
function compactionStarts(dir: string): Promise<void> {
  return new Promise((resolve) => {
    const watcher = watch(dir, (_event, name) => {
      if (!name?.endsWith('.compact')) return;
      watcher.close();
      resolve();
    });
    onCleanup(() => watcher.close());
  });
}

function missingFrom(doc: Y.Doc, keys: string[]): string[] {
  const tasks = doc.getMap('tasks');
  return keys.filter((key) => !tasks.has(key));
}

describe('cairn serve under kill -9', () => {
  it('has every acknowledged write on disk right after the kill, merges offline edits, flushes on SIGTERM', async () => {
    const dir = await tempDir();
    const first = await serve(['--port', '0', '--data', dir]);
    expect(first.stderr()).toMatch(/AUTH IS OFF/);

    const run = writers(first.url, 'acme:crash', 3);
    await vi.waitFor(() => expect(run.acked.length).toBeGreaterThanOrEqual(60), { timeout: 30_000 });
    first.child.kill('SIGKILL');
    const mustSurvive = run.stop();
    expect((await first.exited).signal).toBe('SIGKILL');

    // The data directory, read before any client can reconnect: a server that acknowledged before it wrote
    // fails here, while the clients that saw those acknowledgements would have resent them after a restart.
    expect(missingFrom(onDisk(dir, 'acme:crash'), mustSurvive)).toEqual([]);
    expect(mustSurvive.length).toBeGreaterThanOrEqual(60);

    // Edits made while the server is down stay local until the clients reconnect.
    run.clients.forEach(({ doc }, k) => {
      doc.getMap('tasks').set(`offline-${k}`, true);
    });

    const second = await serve(['--port', String(first.port), '--data', dir]);
    await Promise.all(run.streams);
    await Promise.all(run.clients.map((c) => c.conn.whenAcknowledged()));

    const fresh = new Y.Doc();
    const reader = cairnClient(second.url, 'acme:crash', fresh);
    await reader.whenSynced();
    const tasks = fresh.getMap('tasks');
    expect(missingFrom(fresh, mustSurvive)).toEqual([]);
    for (let k = 0; k < 3; k++) expect(tasks.get(`offline-${k}`)).toBe(true);

    // A last edit, then SIGTERM: the server flushes, exits 0, and printed nothing but its one line.
    run.clients[0]!.doc.getMap('tasks').set('last', 'before SIGTERM');
    await run.clients[0]!.conn.whenAcknowledged();
    await vi.waitFor(() => expect(tasks.get('last')).toBe('before SIGTERM'), { timeout: 10_000 });
    second.child.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });
    expect(second.stdout()).toBe(`listening on http://127.0.0.1:${second.port}\n`);
    const stored = onDisk(dir, 'acme:crash');
    expect(stored.getMap('tasks').get('last')).toBe('before SIGTERM');
    expect(stored.getMap('tasks').toJSON()).toEqual(tasks.toJSON());
  });

  it('has every claim answered `won` on disk right after the kill', async () => {
    const dir = await tempDir();
    const server = await serve(['--port', '0', '--data', dir]);
    const agents: Array<{ actor: string; plan: Plan }> = [];
    for (let k = 0; k < 3; k++) {
      const doc = new Y.Doc();
      const actor = `agent:a${k}`;
      const plan = createPlan({ doc, actor });
      const conn = cairnClient(server.url, 'acme:claims', doc, { plan, maxBackoffMs: 100 });
      await conn.whenSynced(10_000);
      agents.push({ actor, plan });
    }
    const [seeder] = agents;
    for (let i = 0; i < 200; i++) seeder!.plan.add({ title: `Task ${i}` });

    const won: Array<{ taskId: string; actor: string }> = [];
    let stopped = false;
    const loops = agents.map(async ({ actor, plan }) => {
      while (!stopped) {
        const result = await plan.claimNext();
        if (stopped) return;
        if (result.outcome === 'won' && result.arbitrated) won.push({ taskId: result.taskId!, actor });
      }
    });
    // After the kill a pending request never gets its answer: nobody waits for these loops.
    for (const loop of loops) loop.catch(() => undefined);
    await vi.waitFor(() => expect(won.length).toBeGreaterThanOrEqual(30), { timeout: 30_000 });
    server.child.kill('SIGKILL');
    stopped = true;
    const decided = [...won];
    expect((await server.exited).signal).toBe('SIGKILL');

    const stored = createPlan({ doc: onDisk(dir, 'acme:claims'), actor: 'user:auditor' });
    const lost = decided.filter(({ taskId, actor }) => stored.get(taskId)?.assignee !== actor);
    expect(lost).toEqual([]);
    expect(new Set(decided.map((d) => d.taskId)).size).toBe(decided.length);
  });

  it('loses nothing acknowledged and never damages the log when killed at random points, some inside a compaction', async () => {
    const dir = await tempDir();
    const rounds = 10;
    let insideCompaction = 0;
    const acknowledged = new Map<string, string[]>();
    // On a loaded machine a compaction can finish before the kill lands: a few more rounds (at most twice as
    // many) make sure at least two kills hit one, without making every run pay for them.
    for (let round = 0; round < rounds || (insideCompaction < 2 && round < 2 * rounds); round++) {
      // A plan per round keeps each snapshot small, so compactions come every few dozen writes.
      const planId = `acme:compacting-${round}`;
      const server = await compactingServer(dir, 5);
      // Values of half a kilobyte make each compaction's write and fsync take a while.
      const run = writers(server.url, planId, 3, (i) => `${i}`.padEnd(512, '.'));
      // Half the rounds die at a random moment of the stream; the others a random 0-1 ms after a compaction
      // creates its temp file (watched in the directory), so some kills land inside one on purpose.
      const minimum = 20 + Math.floor(Math.random() * 80);
      await vi.waitFor(() => expect(run.acked.length).toBeGreaterThanOrEqual(minimum), {
        timeout: 30_000,
        interval: 1,
      });
      if (round % 2 === 1) await compactionStarts(dir);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * (round % 2 === 1 ? 1 : 20)));
      server.child.kill('SIGKILL');
      const mustSurvive = run.stop();
      expect((await server.exited).signal).toBe('SIGKILL');
      for (const { conn } of run.clients) conn.destroy();
      for (const stream of run.streams) stream.catch(() => undefined);
      const log = basename(planFiles(dir, planId).log);
      if (readdirSync(dir).some((name) => name.startsWith(`${log}.`) && name.endsWith('.compact'))) {
        insideCompaction++;
      }
      acknowledged.set(planId, mustSurvive);
      expect({ round, missing: missingFrom(onDisk(dir, planId), mustSurvive) }).toEqual({
        round,
        missing: [],
      });
    }
    // Proof that the kills reached the interesting window: a compaction's temp file was left behind.
    expect(insideCompaction).toBeGreaterThanOrEqual(2);
    // Every plan opens again as it was, and the open clears what an interrupted compaction left.
    for (const [planId, keys] of acknowledged) {
      const doc = new Y.Doc();
      const stored = openFilePersistence(dir)(planId, doc);
      await stored.whenLoaded;
      expect(missingFrom(doc, keys)).toEqual([]);
      await stored.close();
    }
    expect(readdirSync(dir).filter((name) => name.endsWith('.compact'))).toEqual([]);
  }, 180_000);
});
