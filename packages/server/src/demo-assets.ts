// Where `cairn serve` finds the demo it serves by default: the package build copies the demo's built assets to
// dist/demo, beside the compiled CLI; from the TypeScript sources that is ../dist/demo.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The directory of the bundled demo, or null when this copy of the package was not built with it. */
export function bundledDemoDir(): string | null {
  for (const relative of ['./demo/', '../dist/demo/']) {
    const dir = fileURLToPath(new URL(relative, import.meta.url));
    if (existsSync(join(dir, 'index.html'))) return dir;
  }
  return null;
}
