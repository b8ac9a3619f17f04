// The storage damage suite's file side for stores that keep a plan as an update log and a snapshot file (the fs
// adapter, the server's disk store): how each kind of damage is done to the files, what proves a refused write
// changed nothing, and the operator's repair. Node only, so apart from `@cairn/core/testing`, which runs in a
// browser too.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { planFiles, repairLog } from '../adapters/fs.js';
import { type DamageHarness, damageFiles, type StorageDamage } from './damage-suite.js';

/** Every kind of damage: files can suffer all of them. */
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

/** The parts of a `DamageHarness` that only touch a plan's files in `dir`, for a harness to spread into its own. */
export interface PlanFileDamage extends Required<Pick<DamageHarness, 'damage' | 'fingerprint' | 'repair'>> {
  /** Keeps the plan's log as it is now: what `snapshot-newer` restores beside the later snapshot. */
  remember(name: string): void;
}

export function planFileDamage(dir: string): PlanFileDamage {
  const earlier = new Map<string, Uint8Array>();
  return {
    remember(name) {
      earlier.set(name, fs.readFileSync(planFiles(dir, name).log));
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
  };
}

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
