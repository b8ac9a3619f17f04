// Builds the three published packages in dependency order (each one's tsc reads the declarations of the one
// before); @cairn/server's build includes the demo. Run by `pnpm build`, `pnpm start` and the consumer suite.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGES = ['core', 'mcp', 'server'];

for (const name of PACKAGES) {
  const run = spawnSync(process.execPath, [join(root, 'scripts/build-package.mjs')], {
    cwd: join(root, 'packages', name),
    stdio: 'inherit',
  });
  if (run.status !== 0) process.exit(run.status ?? 1);
}
