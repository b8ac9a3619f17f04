// Which plans a disk store's directory holds, read from its file names, without loading (or creating) any.
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { decodePlanName, planFiles } from '@cairn/core/fs';
import { isPlanDocId } from '@cairn/core/learning';

/** Every plan id with a log in `dir`: the documents beside them (traces, skills) left out. */
export async function listDiskPlans(dir: string): Promise<string[]> {
  return (await listDiskDocuments(dir)).filter(isPlanDocId);
}

/** Every document id with a log in `dir`, plans and the traces and skills beside them (dot files are the server's own: locks, indexes). */
export async function listDiskDocuments(dir: string): Promise<string[]> {
  const names = await readdir(dir);
  const ids: string[] = [];
  for (const name of names) {
    if (name.startsWith('.') || !name.endsWith('.log')) continue;
    try {
      ids.push(decodePlanName(name.slice(0, -'.log'.length)));
    } catch {
      // not a name this store wrote
    }
  }
  return ids.sort();
}

/**
 * Whether `dir` holds a log or a first-read snapshot for the plan (an invalid id has none). A snapshot without its
 * log is a plan whose log was lost: it must load (and be refused as damaged), not start again empty.
 */
export function diskPlanExists(dir: string, planId: string): boolean {
  try {
    const files = planFiles(dir, planId);
    return existsSync(files.log) || existsSync(files.snapshot);
  } catch {
    return false;
  }
}
