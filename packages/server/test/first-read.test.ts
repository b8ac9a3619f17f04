// HTTP reads of a plan not in the server's memory answer from the disk store's first-read snapshot when it
// reflects exactly what the log holds, and load the plan behind the answer; a stale, corrupt or missing snapshot
// is never served (the read waits for the load, as before), and writes always wait for the load.
import { copyFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { planFiles } from '@cairn/core/fs';
import { describe, expect, it, vi } from 'vitest';
import { seedPlan, startServer, type TestServer, tempDir } from './helpers.js';

const PLAN = 'acme:first-read';

async function reads(server: TestServer): Promise<Record<string, number>> {
  const text = await (await fetch(`${server.http}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^cairn_http_plan_reads_total\{source="(\w+)"\} (\d+)$/gm)) {
    out[m[1]!] = Number(m[2]);
  }
  return out;
}

async function tasks(server: TestServer): Promise<Array<{ title: string; status: string }>> {
  const res = await fetch(`${server.http}/api/plans/${encodeURIComponent(PLAN)}/tasks?includeClosed=1`);
  expect(res.status).toBe(200);
  const body = (await res.json()) as { tasks: Array<{ title: string; status: string }> };
  return body.tasks
    .map(({ title, status }) => ({ title, status }))
    .sort((a, b) => (a.title < b.title ? -1 : 1));
}

describe('first read of a plan not in memory, through the server', () => {
  it('answers from a fresh snapshot, hydrates behind it; ignores a stale, a corrupt or a missing one', async () => {
    const dir = await tempDir();
    const files = planFiles(dir, PLAN);

    // Written by one server; closing it releases the plan, which writes the snapshot beside the log.
    const first = await startServer({ dataDir: dir });
    await seedPlan(first, PLAN, [{ title: 'Alpha' }, { title: 'Beta' }, { title: 'Gamma', status: 'done' }]);
    await first.server.close();
    expect(existsSync(files.snapshot)).toBe(true);
    const beforeWrite = `${files.snapshot}.before-write`;
    copyFileSync(files.snapshot, beforeWrite);

    // Fresh: answered from the snapshot while the plan is not loaded, then loaded behind the answer.
    const second = await startServer({ dataDir: dir });
    expect(second.server.hub.isLoaded(PLAN)).toBe(false);
    const expected = [
      { title: 'Alpha', status: 'pending' },
      { title: 'Beta', status: 'pending' },
      { title: 'Gamma', status: 'done' },
    ];
    expect(await tasks(second)).toEqual(expected);
    expect(await reads(second)).toMatchObject({ snapshot: 1 });
    await vi.waitFor(() => expect(second.server.hub.isLoaded(PLAN)).toBe(true), { timeout: 20_000 });
    expect(await tasks(second)).toEqual(expected);
    expect(await reads(second)).toMatchObject({ snapshot: 1, memory: 1 });
    const context = await fetch(
      `${second.http}/api/plans/${encodeURIComponent(PLAN)}/context?format=checklist`,
    );
    expect(await context.text()).toMatch(/Alpha/);

    // A write waits for the load and is stored after the snapshot: the old snapshot is stale from then on.
    const [alpha] = (
      (await (await fetch(`${second.http}/api/plans/${encodeURIComponent(PLAN)}/tasks`)).json()) as {
        tasks: Array<{ id: string; title: string }>;
      }
    ).tasks.filter((t) => t.title === 'Alpha');
    const patched = await fetch(`${second.http}/api/plans/${encodeURIComponent(PLAN)}/tasks/${alpha!.id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'in_progress' }),
    });
    expect(patched.status).toBe(200);
    await second.server.close();
    const afterWrite = [{ ...expected[0]!, status: 'in_progress' }, expected[1], expected[2]];

    // Stale: the snapshot from before the write is put back (as a crash between the append and the next
    // snapshot would leave it). It must not be served: the read waits for the log and sees the write.
    copyFileSync(files.snapshot, `${files.snapshot}.after-write`);
    copyFileSync(beforeWrite, files.snapshot);
    const third = await startServer({ dataDir: dir });
    expect(await tasks(third)).toEqual(afterWrite);
    expect(await reads(third)).toMatchObject({ load: 1 });
    expect((await reads(third)).snapshot ?? 0).toBe(0);
    await third.server.close();

    // Corrupt: one byte of the current snapshot flipped. Ignored, never half-read.
    const valid = readFileSync(`${files.snapshot}.after-write`);
    const corrupt = Buffer.from(valid);
    corrupt[Math.floor(corrupt.length / 2)]! ^= 0xff;
    writeFileSync(files.snapshot, corrupt);
    const fourth = await startServer({ dataDir: dir });
    expect(await tasks(fourth)).toEqual(afterWrite);
    expect(await reads(fourth)).toMatchObject({ load: 1 });
    expect((await reads(fourth)).snapshot ?? 0).toBe(0);
    await fourth.server.close();

    // Missing (a data directory written before snapshots existed): read through the load, as before; the
    // release writes one, which the next server serves.
    rmSync(files.snapshot);
    const fifth = await startServer({ dataDir: dir });
    expect(await tasks(fifth)).toEqual(afterWrite);
    expect(await reads(fifth)).toMatchObject({ load: 1 });
    await fifth.server.close();
    expect(existsSync(files.snapshot)).toBe(true);
    const sixth = await startServer({ dataDir: dir });
    // The rendered plan too, with the stored document's cursor: the same as once the plan has loaded.
    const renderedJson = async () => {
      const res = await fetch(
        `${sixth.http}/api/plans/${encodeURIComponent(PLAN)}/context?format=checklist`,
        {
          headers: { accept: 'application/json' },
        },
      );
      expect(res.status).toBe(200);
      return (await res.json()) as { text: string; cursor: string; kind: string };
    };
    const early = await renderedJson();
    expect(await reads(sixth)).toMatchObject({ snapshot: 1 });
    expect(early.text).toMatch(/Alpha/);
    await vi.waitFor(() => expect(sixth.server.hub.isLoaded(PLAN)).toBe(true), { timeout: 20_000 });
    expect(await renderedJson()).toEqual(early);
    expect(await reads(sixth)).toMatchObject({ snapshot: 1, memory: 1 });
    expect(await tasks(sixth)).toEqual(afterWrite);
  });

  it('writes the snapshot when an idle plan unloads, and a 404 for an unknown plan stays a 404', async () => {
    const server = await startServer({ idleUnloadMs: 50 });
    const files = planFiles(server.dir, PLAN);
    await seedPlan(server, PLAN, [{ title: 'Only' }]);
    await vi.waitFor(
      () => {
        expect(server.server.hub.isLoaded(PLAN)).toBe(false);
        expect(existsSync(files.snapshot)).toBe(true);
      },
      { timeout: 20_000 },
    );
    expect(await tasks(server)).toEqual([{ title: 'Only', status: 'pending' }]);
    expect(await reads(server)).toMatchObject({ snapshot: 1 });
    const unknown = await fetch(`${server.http}/api/plans/acme%3Anever/tasks`);
    expect(unknown.status).toBe(404);
  });
});
