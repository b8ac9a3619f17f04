// The storage damage suite on the fs adapter's real files.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspectLog, openFilePersistence, planFiles } from '../src/adapters/fs.js';
import { openOrRefused, runStorageDamageTests } from '../src/testing/index.js';
import { FILE_DAMAGE, planFileDamage } from '../src/testing/node.js';

runStorageDamageTests('fs', FILE_DAMAGE, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-damage-suite-'));
  const open = openFilePersistence(dir, { compaction: false });
  const files = planFileDamage(dir);
  return {
    ...files,
    async store(name, edits) {
      const s = await openOrRefused(open, name);
      if ('refused' in s) throw s.refused;
      edits.forEach((edit, i) => {
        edit(s.doc);
        if (i === edits.length >> 1) files.remember(name);
      });
      await s.persistence.close();
    },
    async open(name) {
      const s = await openOrRefused(open, name);
      if ('refused' in s) return s;
      await s.persistence.close();
      return { served: s.doc };
    },
    async write(name, edit) {
      const s = await openOrRefused(open, name);
      if ('refused' in s) return 'refused';
      edit(s.doc);
      await s.persistence.close();
      return 'written';
    },
    async reported(name) {
      return inspectLog(planFiles(dir, name).log).damage;
    },
    teardown: () => rm(dir, { recursive: true, force: true }),
  };
});
