// The SQLite file of a plan's Durable Object in a workerd storage directory, read and changed with the sqlite3
// command-line tool (while workerd is stopped, or only read while it runs): how the tests see the rows an object
// stored, damage them, or write an older schema's layout.
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The SQLite file of the object holding `plan` (each object has one, named by its id). */
export function objectFile(storageDir: string, plan: string): string {
  for (const dir of readdirSync(storageDir)) {
    for (const name of readdirSync(join(storageDir, dir)).filter((n) => n.endsWith('.sqlite'))) {
      const file = join(storageDir, dir, name);
      if (sqlite(file, "SELECT value FROM cairn_object WHERE key = 'plan'") === plan) return file;
    }
  }
  throw new Error(`no object file holds ${plan}`);
}

/** Runs `query` (statements separated by `;`) on `file`; what it prints, trimmed. */
export function sqlite(file: string, query: string): string {
  return execFileSync('sqlite3', [file, query], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).trim();
}

/** Bytes as SQL's hex literals and `hex()` write them. */
export const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex').toUpperCase();
