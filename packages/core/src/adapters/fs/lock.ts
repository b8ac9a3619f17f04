// A lock file that keeps a second process (or a second instance in this one) off a plan's log: created
// atomically with our pid and host; a lock whose process is gone is taken over.
import * as nodeFs from 'node:fs';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { CairnError } from '../../errors.js';

export interface FileLock {
  readonly path: string;
  /** Removes the lock file if it is still ours. Idempotent. */
  release(): void;
}

interface LockOwner {
  pid: number;
  host: string;
  since: string;
}

/** Lock paths this process holds: tells our own live lock from one left by an earlier process with our pid. */
const held = new Set<string>();

/**
 * Takes the lock at `path` or throws CairnError('locked') naming the holder's pid, host and the lock path.
 * A lock whose pid is dead on this host (or that holds our pid without this process holding it: a restarted
 * container reuses pids) is stale and taken over.
 */
export function acquireLock(path: string, fs: typeof nodeFs = nodeFs): FileLock {
  const full = resolve(path);
  const me: LockOwner = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
  for (let attempt = 0; attempt < 5; attempt++) {
    if (tryCreate(fs, full, me)) {
      held.add(full);
      return makeLock(fs, full);
    }
    const existing = readOwner(fs, full);
    if (existing === 'gone') continue;
    if (existing !== 'unreadable' && isAlive(existing, full)) throw lockedError(full, existing);
    takeOver(fs, full, existing === 'unreadable' ? null : existing);
  }
  throw new CairnError('locked', `Could not take the lock ${full}: it keeps changing hands. Retry later.`, {
    path: full,
  });
}

function makeLock(fs: typeof nodeFs, full: string): FileLock {
  let released = false;
  return {
    path: full,
    release() {
      if (released) return;
      released = true;
      held.delete(full);
      const owner = readOwner(fs, full);
      // Only remove the file if it is still ours: someone may have deleted a lock they thought stale.
      if (typeof owner === 'object' && owner.pid === process.pid && owner.host === hostname()) {
        try {
          fs.unlinkSync(full);
        } catch {
          // Already gone: nothing to release.
        }
      }
    },
  };
}

// The content is written to a temp file first and hard-linked into place, so a lock never exists half-written.
function tryCreate(fs: typeof nodeFs, full: string, me: LockOwner): boolean {
  const tmp = `${full}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(me)}\n`, { flag: 'wx' });
  try {
    fs.linkSync(tmp, full);
    return true;
  } catch (error) {
    if (code(error) === 'EEXIST') return false;
    // A file system without hard links: fall back to an exclusive create (rarely, briefly empty).
    try {
      fs.writeFileSync(full, `${JSON.stringify(me)}\n`, { flag: 'wx' });
      return true;
    } catch (fallback) {
      if (code(fallback) === 'EEXIST') return false;
      throw fallback;
    }
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

function readOwner(fs: typeof nodeFs, full: string): LockOwner | 'gone' | 'unreadable' {
  let text: string;
  try {
    text = fs.readFileSync(full, 'utf8');
  } catch (error) {
    if (code(error) === 'ENOENT') return 'gone';
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as Partial<LockOwner>;
    if (typeof parsed.pid === 'number' && typeof parsed.host === 'string') {
      return { pid: parsed.pid, host: parsed.host, since: String(parsed.since ?? '') };
    }
  } catch {
    // Falls through: unreadable content is treated as stale.
  }
  return 'unreadable';
}

function isAlive(owner: LockOwner, full: string): boolean {
  // On another host we cannot tell; refuse and let a person decide.
  if (owner.host !== hostname()) return true;
  if (owner.pid === process.pid) return held.has(full);
  try {
    process.kill(owner.pid, 0);
    return true;
  } catch (error) {
    return code(error) === 'EPERM'; // alive, owned by another user
  }
}

// Moves the stale lock aside, then checks that what was moved is the stale one (same owner): another process
// may have taken it over in between, and then its fresh lock is put back.
function takeOver(fs: typeof nodeFs, full: string, stale: LockOwner | null): void {
  const aside = `${full}.${process.pid}.${Math.random().toString(36).slice(2)}.stale`;
  try {
    fs.renameSync(full, aside);
  } catch (error) {
    if (code(error) === 'ENOENT') return;
    throw error;
  }
  const moved = readOwner(fs, aside);
  const same =
    stale === null
      ? moved === 'unreadable'
      : typeof moved === 'object' &&
        moved.pid === stale.pid &&
        moved.host === stale.host &&
        moved.since === stale.since;
  if (!same) {
    try {
      fs.linkSync(aside, full); // no-clobber restore; if a third process got in, it holds the lock
    } catch {
      // The lock path is taken again; the next attempt reads whoever holds it.
    }
  }
  fs.rmSync(aside, { force: true });
}

function lockedError(full: string, owner: LockOwner): CairnError {
  const where = owner.host === hostname() ? `pid ${owner.pid}` : `pid ${owner.pid} on host ${owner.host}`;
  const message =
    owner.pid === process.pid && owner.host === hostname()
      ? `This plan is already open in this process (pid ${owner.pid}, lock ${full}). Close the other instance first.`
      : `This plan is open in another process (${where}, since ${owner.since}; lock ${full}). ` +
        'Close that process first, or delete the lock file if no such process is running.';
  return new CairnError('locked', message, { path: full, pid: owner.pid, host: owner.host });
}

function code(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}
