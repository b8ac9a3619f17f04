// What the cross-package tests undo after each test: processes, clients, servers and temp dirs, last in first out.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  // Last in, first out: clients before their server, servers before their directory.
  while (cleanups.length > 0) await cleanups.pop()!();
});

export function onCleanup(fn: () => Promise<unknown> | unknown): void {
  cleanups.push(fn);
}

/** A fresh directory under the system temp dir, removed after the test. */
export async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  onCleanup(() => rm(dir, { recursive: true, force: true }));
  return dir;
}
