// The CLI as a real child process: every acknowledged write survives `kill -9`, clients that kept editing offline
// merge in after the restart, and SIGTERM flushes and exits cleanly. Also checks the single stdout line.
import { type ChildProcess, spawn } from 'node:child_process';
import { planFiles, UpdateLog } from '@cairn/core/fs';
import type { PlanConnection } from '@cairn/core/websocket';
import { describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import { SOURCE_CLI_ARGS } from '../../../test/source-cli.js';
import { cairnClient, onCleanup, tempDir } from './helpers.js';

interface Child {
  child: ChildProcess;
  url: string;
  port: number;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function serve(args: string[], env: Record<string, string> = {}): Promise<Child> {
  const child = spawn(process.execPath, [...SOURCE_CLI_ARGS, 'serve', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env, CAIRN_SECRET: '' },
  });
  let out = '';
  let err = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  onCleanup(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    return exited.then(() => undefined);
  });
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const found = /^listening on (http:\/\/127\.0\.0\.1:(\d+))\n/.exec(out);
      if (found) {
        resolve({
          child,
          url: found[1]!.replace('http', 'ws'),
          port: Number(found[2]),
          stdout: () => out,
          stderr: () => err,
          exited,
        });
      }
    });
    exited.then(({ code }) => reject(new Error(`cairn serve exited (${code}) before listening:\n${err}`)));
  });
}

describe('cairn serve', () => {
  it('keeps every acknowledged write through kill -9, merges offline edits, flushes on SIGTERM', async () => {
    const dir = await tempDir();
    const first = await serve(['--port', '0', '--data', dir]);
    expect(first.stderr()).toMatch(/AUTH IS OFF/);

    const clients: Array<{ doc: Y.Doc; conn: PlanConnection }> = [];
    for (let k = 0; k < 3; k++) {
      const doc = new Y.Doc();
      clients.push({ doc, conn: cairnClient(first.url, 'acme:crash', doc, { maxBackoffMs: 100 }) });
    }
    await Promise.all(clients.map((c) => c.conn.whenSynced()));

    const acked: string[] = [];
    let stop = false;
    let killed: () => void = () => {};
    const enoughAcked = new Promise<void>((resolve) => {
      killed = resolve;
    });
    const streams = clients.map(async ({ doc, conn }, k) => {
      for (let i = 0; !stop; i++) {
        const key = `c${k}-${i}`;
        doc.getMap('tasks').set(key, i);
        await conn.whenAcknowledged();
        if (!stop) acked.push(key);
        if (acked.length >= 60) killed();
      }
    });
    await enoughAcked;
    first.child.kill('SIGKILL');
    stop = true;
    const mustSurvive = [...acked];
    expect((await first.exited).signal).toBe('SIGKILL');

    // Edits made while the server is down stay local until the clients reconnect.
    clients.forEach(({ doc }, k) => {
      doc.getMap('tasks').set(`offline-${k}`, true);
    });

    const second = await serve(['--port', String(first.port), '--data', dir]);
    await Promise.all(streams);
    await Promise.all(clients.map((c) => c.conn.whenAcknowledged()));

    const fresh = new Y.Doc();
    const reader = cairnClient(second.url, 'acme:crash', fresh);
    await reader.whenSynced();
    const tasks = fresh.getMap('tasks');
    const missing = mustSurvive.filter((key) => !tasks.has(key));
    expect(missing).toEqual([]);
    for (let k = 0; k < 3; k++) expect(tasks.get(`offline-${k}`)).toBe(true);
    expect(mustSurvive.length).toBeGreaterThanOrEqual(60);

    // A last edit, then SIGTERM: the server flushes, exits 0, and printed nothing but its one line.
    clients[0]!.doc.getMap('tasks').set('last', 'before SIGTERM');
    await clients[0]!.conn.whenAcknowledged();
    await vi.waitFor(() => expect(tasks.get('last')).toBe('before SIGTERM'));
    second.child.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });
    expect(second.stdout()).toBe(`listening on http://127.0.0.1:${second.port}\n`);
    const stored = new Y.Doc();
    for (const update of UpdateLog.read(planFiles(dir, 'acme:crash').log) ?? [])
      Y.applyUpdate(stored, update);
    expect(stored.getMap('tasks').get('last')).toBe('before SIGTERM');
    expect(stored.getMap('tasks').toJSON()).toEqual(tasks.toJSON());
  });
});
