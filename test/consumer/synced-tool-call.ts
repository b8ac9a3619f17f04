// One check of a running `cairn serve` shared by the runtimes that run it (Node, Bun, Deno).
import { expect } from 'vitest';
import { type Served, startProcess } from './lib.js';

/**
 * Against a running `cairn serve` (open, on loopback): a Node WebSocket client of the installed packages syncs a
 * plan, a tool call over HTTP adds a task, and the client sees it. Returns the client, to be stopped.
 */
export async function expectSyncedToolCall(app: string, url: string): Promise<Served> {
  const title = 'Added by a tool call over HTTP';
  const client = await startProcess(process.execPath, ['ws-client.mjs', url, 'consumer:ws', title], {
    cwd: app,
    ready: /^(synced)$/m,
  });
  const seen = new Promise<string>((resolve) => {
    let out = '';
    client.child.stdout?.on('data', (chunk) => {
      out += chunk;
      const line = out.split('\n').find((l) => l.startsWith('['));
      if (line) resolve(line);
    });
  });
  const call = await fetch(`${url}/api/plans/consumer%3Aws/tools/add_tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tasks: [{ title }] }),
  });
  expect(call.status).toBe(200);
  expect(JSON.parse(await seen)).toEqual([title]);
  return client;
}
