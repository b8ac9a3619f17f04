// Files the repository keeps generated (docs/api/, the tools' JSON Schemas): written when they differ from what
// their script makes, or, with --check, named as stale so `pnpm test` fails until they are written again.
import { readFileSync, writeFileSync } from 'node:fs';

/**
 * Writes each file whose committed text differs from `text`; with `check`, writes nothing.
 * @param {Iterable<[path: string, text: string]>} files
 * @param {boolean} check
 * @returns {string[]} the paths left stale: with `check`, those that differ; else none
 */
export function updateGenerated(files, check) {
  const stale = [];
  for (const [path, text] of files) {
    let current = '';
    try {
      current = readFileSync(path, 'utf8');
    } catch {}
    if (current === text) continue;
    if (check) stale.push(path);
    else writeFileSync(path, text);
  }
  return stale;
}
