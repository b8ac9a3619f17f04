// The storage damage suite on the fs adapter's real files.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as Y from 'yjs';
import {
  type FilePersistence,
  inspectLog,
  openFilePersistence,
  planFiles,
  repairLog,
} from '../src/adapters/fs.js';
import { damageFiles, runStorageDamageTests, type StorageDamage } from '../src/testing/index.js';

export const FILE_DAMAGE: readonly StorageDamage[] = [
  'log-missing',
  'log-empty',
  'header-only',
  'cut-at-boundary',
  'cut-mid-record',
  'flipped-byte',
  'row-missing',
  'snapshot-newer',
  'snapshot-missing',
];

function readOrNull(path: string): Uint8Array | null {
  try {
    return fs.readFileSync(path);
  } catch {
    return null;
  }
}

function writeOrRemove(path: string, bytes: Uint8Array | null): void {
  if (bytes) fs.writeFileSync(path, bytes);
  else fs.rmSync(path, { force: true });
}

runStorageDamageTests('fs', FILE_DAMAGE, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-damage-suite-'));
  const open = openFilePersistence(dir, { compaction: false });
  const earlier = new Map<string, Uint8Array>();
  const session = async (
    name: string,
  ): Promise<{ refused: unknown } | { doc: Y.Doc; p: FilePersistence }> => {
    const doc = new Y.Doc();
    const p = open(name, doc);
    try {
      await p.whenLoaded;
    } catch (refused) {
      return { refused };
    }
    return { doc, p };
  };
  return {
    async store(name, edits) {
      const s = await session(name);
      if ('refused' in s) throw s.refused;
      edits.forEach((edit, i) => {
        edit(s.doc);
        if (i === edits.length >> 1) earlier.set(name, fs.readFileSync(planFiles(dir, name).log));
      });
      await s.p.close();
    },
    async damage(name, kind) {
      const files = planFiles(dir, name);
      const damaged = damageFiles(kind, {
        log: readOrNull(files.log),
        snapshot: readOrNull(files.snapshot),
        earlier: earlier.get(name) ?? new Uint8Array(0),
      });
      writeOrRemove(files.log, damaged.log);
      writeOrRemove(files.snapshot, damaged.snapshot);
    },
    async open(name) {
      const s = await session(name);
      if ('refused' in s) return s;
      await s.p.close();
      return { served: s.doc };
    },
    async write(name, edit) {
      const s = await session(name);
      if ('refused' in s) return 'refused';
      edit(s.doc);
      await s.p.close();
      return 'written';
    },
    async reported(name) {
      return inspectLog(planFiles(dir, name).log).damage;
    },
    async fingerprint(name) {
      const files = planFiles(dir, name);
      const hash = createHash('sha256');
      for (const path of [files.log, files.snapshot])
        hash.update(`${path}:${readOrNull(path)?.join(',') ?? 'none'};`);
      hash.update(fs.readdirSync(dir).sort().join(','));
      return hash.digest('hex');
    },
    async repair(name) {
      repairLog(planFiles(dir, name).log);
    },
    teardown: () => rm(dir, { recursive: true, force: true }),
  };
});
