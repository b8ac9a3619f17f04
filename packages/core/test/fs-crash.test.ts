// kill -9 in the middle of a stream of edits: every edit whose call had returned (its index printed) must be on
// disk. Several rounds on one plan, so each child also takes over the lock its killed predecessor left behind.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, expect, it } from 'vitest';
import * as Y from 'yjs';
import { type LogRecovery, openFilePersistence } from '../src/adapters/fs.js';
import { spawnEditor } from './fixtures/spawn-editor.js';

let dir = '';
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Runs one child until it has printed `killAt` indices, SIGKILLs it, and returns the last index it printed. */
async function editThenKill(round: number, killAt: number): Promise<number> {
  const child = spawnEditor({
    dir,
    name: 'crash',
    prefix: `r${round}`,
    edits: 1_000_000,
    compactRecords: 200,
  });
  let last = -1;
  const lines = createInterface({ input: child.stdout! });
  lines.on('line', (line) => {
    last = Number(line);
    if (last === killAt) child.kill('SIGKILL');
  });
  // 'close' comes after the last buffered line has been read, unlike 'exit'.
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('close', (c, s) => resolve([c, s])),
  );
  expect({ code, signal }).toEqual({ code: null, signal: 'SIGKILL' });
  return last;
}

it('keeps every edit whose call returned across kill -9, in several rounds', async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-crash-'));
  const lastSeen: number[] = [];
  const recoveries: LogRecovery[] = [];
  const killPoints = [150, 1_333, 600];
  for (const [round, killAt] of killPoints.entries()) {
    lastSeen.push(await editThenKill(round, killAt));
    expect(lastSeen[round]).toBeGreaterThanOrEqual(killAt);

    const doc = new Y.Doc();
    const stored = openFilePersistence(dir, { onRecover: (r) => recoveries.push(r) })('crash', doc);
    await stored.whenLoaded;
    const map = doc.getMap<number>('m');
    const text = doc.getText('t').toString();
    for (let r = 0; r <= round; r++) {
      const missing: string[] = [];
      for (let i = 0; i <= lastSeen[r]!; i++) {
        if (map.get(`r${r}e${i}`) !== i) missing.push(`r${r}e${i}`);
        if (i % 5 === 0 && !text.includes(`r${r}${i};`)) missing.push(`text r${r}${i}`);
      }
      expect(missing).toEqual([]);
    }
    await stored.close(); // releases the lock for the next child
  }
  // A kill between write calls leaves no torn record; if one was cut, it held no edit that had returned.
  for (const recovery of recoveries) expect(recovery.kind).toBe('torn');
});
