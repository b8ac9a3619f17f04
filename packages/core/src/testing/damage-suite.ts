// The storage damage suite every store runs (the fs adapter and the server's disk store on real files, IndexedDB
// in real Chromium, PostgreSQL): after each kind of damage the plan is refused or served whole, the damage is
// reported, and no later write destroys what is left. No Node imports, so it runs in a browser too.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { CairnError } from '../errors.js';

/**
 * Kinds of damage, each named for what happened to the stored plan. A store runs those it can suffer: files have
 * all of them; IndexedDB has no bytes to cut inside a record; PostgreSQL keeps no snapshot.
 * - `log-missing`, `log-empty`, `header-only`: every update gone (the file deleted, emptied, or only its header
 *   left; in a database, every record deleted), next to an intact snapshot.
 * - `cut-at-boundary`: the newest updates gone, whole (a file cut between records, the last rows deleted).
 * - `cut-mid-record`: the file cut inside a record, the records after it gone.
 * - `flipped-byte`: one byte changed inside a stored update.
 * - `row-missing`: one update in the middle gone (those after it stay).
 * - `snapshot-newer`: the snapshot saw updates the store no longer holds (an older copy of the updates restored
 *   beside a newer snapshot).
 * - `snapshot-missing`: the snapshot deleted, the updates intact: nothing is lost, the plan is served whole.
 */
export type StorageDamage =
  | 'log-missing'
  | 'log-empty'
  | 'header-only'
  | 'cut-at-boundary'
  | 'cut-mid-record'
  | 'flipped-byte'
  | 'row-missing'
  | 'snapshot-newer'
  | 'snapshot-missing';

/** What opening a stored plan gave: its document (served), or the store's refusal. */
export type DamageOpen = { served: Y.Doc } | { refused: unknown };

/** One isolated store, made for each test. */
export interface DamageHarness {
  /**
   * Stores `edits` (each one update, written in its own turn), then lets the plan go the way the store normally
   * does (closing, releasing: where it writes its snapshot, if it keeps one).
   */
  store(name: string, edits: readonly ((doc: Y.Doc) => void)[]): Promise<void>;
  /** Damages what is stored for `name`, the plan not open. */
  damage(name: string, kind: StorageDamage): Promise<void>;
  /** Opens the stored plan as its users do and, when it is served, lets it go again. */
  open(name: string): Promise<DamageOpen>;
  /**
   * Opens the plan and writes `edit` into it, as a writer would; resolves `refused` or `written` (stored, and the
   * plan let go).
   */
  write(name: string, edit: (doc: Y.Doc) => void): Promise<'refused' | 'written'>;
  /** What the store reports about `name` being damaged (its health entry, its error), or null if nothing. */
  reported(name: string): Promise<unknown>;
  /** Every stored byte of `name` (updates and snapshot), to prove a refused write changed nothing. */
  fingerprint(name: string): Promise<string>;
  /** The operator's repair (keeping what is intact; the store may set a snapshot aside). */
  repair?(name: string): Promise<void>;
  teardown?(): Promise<void> | void;
}

export type DamageSetup = () => Promise<DamageHarness> | DamageHarness;

/**
 * Opens `name` with a persistence factory (`openFilePersistence(dir)`, `openIndexedDBPersistence()`) on a fresh doc
 * and waits for its first read: the doc and its persistence, or what the store refused it with.
 */
export async function openOrRefused<P extends { readonly whenLoaded: Promise<unknown> }>(
  open: (name: string, doc: Y.Doc) => P,
  name: string,
): Promise<{ refused: unknown } | { doc: Y.Doc; persistence: P }> {
  const doc = new Y.Doc();
  const persistence = open(name, doc);
  try {
    await persistence.whenLoaded;
  } catch (refused) {
    return { refused };
  }
  return { doc, persistence };
}

const TASKS = 20;

function addTask(i: number): (doc: Y.Doc) => void {
  return (doc) =>
    doc.transact(() => {
      const task = new Y.Map<unknown>();
      task.set('title', new Y.Text(`task ${i} ${'x'.repeat(40)}`));
      task.set('status', 'pending');
      doc.getMap('tasks').set(`t${i}`, task);
    }, 'agent:suite');
}

function taskCount(open: DamageOpen): number | null {
  return 'served' in open ? open.served.getMap('tasks').size : null;
}

/** Registers the damage tests for one store, one per kind of damage it can suffer (`kinds`). */
export function runStorageDamageTests(
  storeName: string,
  kinds: readonly StorageDamage[],
  setup: DamageSetup,
): void {
  describe(`storage damage: ${storeName}`, () => {
    it('is run for at least one kind of damage', () => expect(kinds.length).toBeGreaterThan(0));
    for (const kind of kinds) {
      it(`${kind}: refused or served whole, reported, and no later write destroys what is left`, async () => {
        const h = await setup();
        try {
          const name = `damage-${kind}`;
          await h.store(
            name,
            Array.from({ length: TASKS }, (_, i) => addTask(i)),
          );
          expect(taskCount(await h.open(name))).toBe(TASKS);
          await h.damage(name, kind);
          const damaged = await h.fingerprint(name);
          const opened = await h.open(name);
          if (kind === 'snapshot-missing') {
            // Nothing was lost: the updates are whole, and the snapshot is only a cache.
            expect(taskCount(opened)).toBe(TASKS);
            expect(await h.write(name, addTask(TASKS))).toBe('written');
            expect(taskCount(await h.open(name))).toBe(TASKS + 1);
            return;
          }
          // Served means served whole: never a part of the plan as if it were all of it.
          expect(taskCount(opened), 'a damaged plan is refused, not served in part').toBeNull();
          const refusal = (opened as { refused: unknown }).refused;
          expect(refusal).toBeInstanceOf(CairnError);
          expect((refusal as CairnError).code).toBe('storage');
          expect((refusal as CairnError).details.damage).toBeTruthy();
          expect(await h.reported(name)).toBeTruthy();
          // A writer that comes later is refused too, and what is left (the snapshot included) stays as it was.
          expect(await h.write(name, addTask(99))).toBe('refused');
          expect(await h.fingerprint(name)).toBe(damaged);
          expect(taskCount(await h.open(name))).toBeNull();
          if (!h.repair) return;
          // The operator's repair makes the plan open again, with what is intact, and it takes writes.
          await h.repair(name);
          const repaired = await h.open(name);
          expect(taskCount(repaired)).not.toBeNull();
          expect(await h.write(name, addTask(100))).toBe('written');
          expect(await h.reported(name)).toBeNull();
        } finally {
          await h.teardown?.();
        }
      });
    }
  });
}

/** A plan's files as bytes (null: the file does not exist), for `damageFiles`. */
export interface PlanFileBytes {
  log: Uint8Array | null;
  snapshot: Uint8Array | null;
  /** The log as it was halfway through the edits (for `snapshot-newer`: an older log restored). */
  earlier: Uint8Array;
}

/**
 * What each kind of damage does to a plan's files (the update log format of docs/STORAGE.md): pure, so the fs
 * adapter's harness and the server disk store's harness damage their files the same way.
 */
export function damageFiles(
  kind: StorageDamage,
  files: PlanFileBytes,
): { log: Uint8Array | null; snapshot: Uint8Array | null } {
  const { log, snapshot } = files;
  if (!log) throw new Error('damageFiles needs a stored log');
  const offsets = recordOffsets(log);
  const near = offsets[offsets.length - 5] ?? 8; // five records before the end
  const middle = offsets[offsets.length >> 1] ?? 8;
  switch (kind) {
    case 'log-missing':
      return { log: null, snapshot };
    case 'log-empty':
      return { log: new Uint8Array(0), snapshot };
    case 'header-only':
      return { log: log.slice(0, 8), snapshot };
    case 'cut-at-boundary':
      return { log: log.slice(0, near), snapshot };
    case 'cut-mid-record':
      return { log: log.slice(0, near + 8 + 3), snapshot };
    case 'flipped-byte': {
      const out = log.slice();
      out[middle + 8 + 2]! ^= 0x5a;
      return { log: out, snapshot };
    }
    case 'row-missing': {
      const end = offsets[(offsets.length >> 1) + 1] ?? log.byteLength;
      const out = new Uint8Array(log.byteLength - (end - middle));
      out.set(log.subarray(0, middle), 0);
      out.set(log.subarray(end), middle);
      return { log: out, snapshot };
    }
    case 'snapshot-newer':
      return { log: files.earlier, snapshot };
    case 'snapshot-missing':
      return { log, snapshot: null };
  }
}

function recordOffsets(log: Uint8Array): number[] {
  const view = new DataView(log.buffer, log.byteOffset, log.byteLength);
  const offsets: number[] = [];
  for (let at = 8; at + 8 <= log.byteLength; at += 8 + view.getUint32(at, true)) offsets.push(at);
  return offsets;
}
