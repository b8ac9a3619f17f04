// Fails when source files import each other in a cycle (type-only imports included: a cycle of types still
// means two modules that cannot be read or moved apart). Relative imports of packages/*/src and apps/*/src.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

const roots = ['packages', 'apps'].flatMap((top) =>
  readdirSync(top)
    .map((name) => join(top, name, 'src'))
    .filter((dir) => statSync(dir, { throwIfNoEntry: false })?.isDirectory()),
);
const files = new Set(roots.flatMap(walk));
const IMPORT = /^\s*(?:import|export)\s[^'"]*?\sfrom\s+['"](\.{1,2}\/[^'"]+)['"]/gm;

const graph = new Map();
for (const file of files) {
  const targets = [];
  for (const [, spec] of readFileSync(file, 'utf8').matchAll(IMPORT)) {
    const base = normalize(join(dirname(file), spec)).replace(/\.js$/, '');
    const target = [`${base}.ts`, join(base, 'index.ts')].find((f) => files.has(f));
    if (target) targets.push(target);
  }
  graph.set(file, targets);
}

const cycles = stronglyConnected(graph).filter((group) => group.length > 1);
for (const group of cycles) console.error(`import cycle: ${group.sort().join(' <-> ')}`);
console.log(`${files.size} source files, ${cycles.length} import cycles`);
process.exit(cycles.length === 0 ? 0 : 1);

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return walk(path);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Tarjan's algorithm: each group of files that reach one another. */
function stronglyConnected(g) {
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const groups = [];
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of g.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v), index.get(w)));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const group = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    groups.push(group);
  };
  for (const v of g.keys()) if (!index.has(v)) visit(v);
  return groups;
}
