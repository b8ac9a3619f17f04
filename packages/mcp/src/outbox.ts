// The outbox of a plan synced through a Cairn server: a local copy of the plan (an @cairn/core/fs log) that every
// edit reaches before a tool answers, so an edit the server has not acknowledged outlives this process. The next
// `cairn mcp` for the same server and plan loads it before it syncs, which sends the server what it lacks; once the
// server has acknowledged everything, the copy is removed at exit.
import { existsSync, mkdirSync, rmdirSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CairnError } from '@cairn/core';
import {
  acquireLock,
  encodePlanName,
  type FilePersistence,
  openFilePersistence,
  planFiles,
} from '@cairn/core/fs';
import * as Y from 'yjs';

/**
 * Two processes on the same plan cannot share a log (it is locked), so each takes the first free slot; a slot
 * left by a process that is gone is emptied into the new one.
 */
const SLOTS = 8;

export interface Outbox {
  /** The log this process keeps the plan in. */
  readonly path: string;
  /** Whether earlier processes left a copy of the plan here (now loaded into the doc). */
  readonly carried: boolean;
  /** Resolves once every edit so far is on disk (fsync). */
  flush(): Promise<void>;
  /** Stops writing; with `drained` (the server stored everything) removes this process's copy. */
  close(drained: boolean): Promise<void>;
}

/** `$XDG_STATE_HOME/cairn/outbox`, else `~/.local/state/cairn/outbox`. */
export function defaultOutboxRoot(env: Record<string, string | undefined>): string {
  const state = env.XDG_STATE_HOME || join(env.HOME || homedir(), '.local', 'state');
  return join(state, 'cairn', 'outbox');
}

/** The directory of one server's plans: the same plan id on two servers is two plans. */
export function outboxDir(root: string, server: string): string {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new CairnError(
      'invalid_argument',
      `The server must be a URL such as http://127.0.0.1:1234, not "${server}".`,
    );
  }
  const scheme = url.protocol === 'https:' || url.protocol === 'wss:' ? 'wss' : 'ws';
  return join(root, encodePlanName(`${scheme}://${url.host}${url.pathname.replace(/\/+$/, '')}`));
}

/** Loads what earlier processes left for `planId` into `doc`, and keeps every later update of `doc`. */
export async function openOutbox(dir: string, planId: string, doc: Y.Doc): Promise<Outbox> {
  // A copy of the plan: only this user may read it (the log files inherit nothing, the directory guards them).
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  let mine: { persistence: FilePersistence; slotDir: string } | null = null;
  let carried = false;
  for (let slot = 1; slot <= SLOTS && !mine; slot++) {
    const slotDir = join(dir, String(slot));
    const left = kept(slotDir, planId);
    const persistence = openFilePersistence(slotDir)(planId, doc);
    try {
      await persistence.whenLoaded;
    } catch (error) {
      if (error instanceof CairnError && error.code === 'locked') continue; // another live process's
      throw error;
    }
    mine = { persistence, slotDir };
    carried = left && (persistence.stats()?.records ?? 0) > 0;
  }
  if (!mine) {
    throw new CairnError(
      'locked',
      `${SLOTS} processes already keep plan "${planId}" in ${dir}; close one, or give this one another --outbox.`,
    );
  }
  // Slots left by processes that are gone: their edits move into ours (written to our log by the update).
  for (let slot = 1; slot <= SLOTS; slot++) {
    const slotDir = join(dir, String(slot));
    if (slotDir === mine.slotDir || !kept(slotDir, planId)) continue;
    const scratch = new Y.Doc();
    const other = openFilePersistence(slotDir)(planId, scratch);
    try {
      await other.whenLoaded;
    } catch (error) {
      if (error instanceof CairnError && error.code === 'locked') continue;
      throw error;
    }
    if ((other.stats()?.records ?? 0) > 0) {
      Y.applyUpdate(doc, Y.encodeStateAsUpdate(scratch));
      carried = true;
    }
    await other.close();
    await mine.persistence.flush(); // on our disk before theirs is removed
    remove(slotDir, planId);
  }
  const { persistence, slotDir } = mine;
  return {
    path: persistence.path,
    carried,
    flush: () => persistence.flush(),
    async close(drained) {
      await persistence.close();
      if (drained) remove(slotDir, planId);
    },
  };
}

/** Whether a slot has a log of the plan. */
function kept(slotDir: string, planId: string): boolean {
  return existsSync(planFiles(slotDir, planId).log);
}

/** Removes a slot's copy of the plan, under its lock: a process that took the slot meanwhile keeps it. */
function remove(slotDir: string, planId: string): void {
  const files = planFiles(slotDir, planId);
  let lock: ReturnType<typeof acquireLock>;
  try {
    lock = acquireLock(files.lock);
  } catch {
    return;
  }
  try {
    rmSync(files.log, { force: true });
    rmSync(files.snapshot, { force: true });
  } finally {
    lock.release();
  }
  // Only empty directories go: other plans may be kept there.
  for (const emptied of [slotDir, dirname(slotDir)]) {
    try {
      rmdirSync(emptied);
    } catch {
      return; // not empty, or gone: either way nothing more to do
    }
  }
}
