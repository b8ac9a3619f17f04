// The SQLite file of a plan's Durable Object in a workerd storage directory, read and changed with the sqlite3
// command-line tool (while workerd is stopped, or only read while it runs): how the tests see the rows an object
// stored, damage them, or write an older schema's layout.
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The SQLite file of the plan object holding `plan` (each object has one, named by its id). */
export function objectFile(storageDir: string, plan: string): string {
  return fileWhere(storageDir, `holds ${plan}`, "SELECT value FROM cairn_object WHERE key = 'plan'", plan);
}

/** The SQLite file of the object whose rows hold the document `doc` (an object of a test's own worker). */
export function fileHoldingDocument(storageDir: string, doc: string): string {
  const query = `SELECT COUNT(*) > 0 FROM cairn_updates WHERE doc = '${doc.replaceAll("'", "''")}'`;
  return fileWhere(storageDir, `has rows of ${doc}`, query, '1');
}

function fileWhere(storageDir: string, what: string, query: string, answer: string): string {
  for (const dir of readdirSync(storageDir)) {
    for (const name of readdirSync(join(storageDir, dir)).filter((n) => n.endsWith('.sqlite'))) {
      const file = join(storageDir, dir, name);
      try {
        if (sqlite(file, query) === answer) return file;
      } catch {
        // an object without that table: not the one
      }
    }
  }
  throw new Error(`no object file ${what}`);
}

/** Runs `query` (statements separated by `;`) on `file`; what it prints, trimmed. */
export function sqlite(file: string, query: string): string {
  return execFileSync('sqlite3', [file, query], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).trim();
}

/** Bytes as SQL's hex literals and `hex()` write them. */
export const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex').toUpperCase();
