// A small index kept beside the plans on disk (the wake times, the plans with queued learning jobs): read once at
// start, rewritten whole through a temporary file and a rename, so a crash leaves the old one or the new one.
import { readFile, rename, writeFile } from 'node:fs/promises';
import type { IndexFile } from '../index-file.js';

export function nodeIndexFile(path: string): IndexFile {
  return {
    where: path,
    async read() {
      try {
        return await readFile(path, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw error;
      }
    },
    async write(text) {
      await writeFile(`${path}.tmp`, text);
      await rename(`${path}.tmp`, path);
    },
  };
}
