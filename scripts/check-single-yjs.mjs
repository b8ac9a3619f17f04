// Fails when more than one Yjs copy is installed: two copies in one process break `instanceof` checks and
// merge silently wrong. The yjs 14 beta (`@y/y`) counts as a second copy.
import { readdirSync } from 'node:fs';

const store = new URL('../node_modules/.pnpm/', import.meta.url);
const entries = readdirSync(store);
const yjs = [...new Set(entries.filter((e) => /^yjs@\d/.test(e)).map((e) => e.split('_')[0]))];
const beta = entries.filter((e) => e.startsWith('@y+y@'));
const problems = [];
if (yjs.length !== 1) problems.push(`expected exactly one yjs version, found: ${yjs.join(', ') || 'none'}`);
if (beta.length > 0) problems.push(`the yjs 14 line (@y/y) is installed: ${beta.join(', ')}`);
if (yjs.length === 1 && !yjs[0].startsWith('yjs@13.'))
  problems.push(`yjs must be on the 13 line, found ${yjs[0]}`);
if (problems.length > 0) {
  console.error(`single-yjs check failed:\n- ${problems.join('\n- ')}`);
  process.exit(1);
}
console.log(`single-yjs check: ${yjs[0]} is the only Yjs copy`);
