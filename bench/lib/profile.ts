// A CPU profile of part of a benchmark, taken with the inspector and summarised in a line for the report: where
// the time went (inclusive share of the functions that matter, and the top functions by self time).
import * as fs from 'node:fs';
import { Session } from 'node:inspector/promises';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  totalMs: number;
  /** Inclusive time by "function (file)", heaviest first. */
  inclusive: Array<{ name: string; ms: number; share: number }>;
  self: Array<{ name: string; ms: number; share: number }>;
}

const label = (f: ProfileNode['callFrame']) => {
  const file = f.url.replace(/^file:\/\//, '').replace(/.*\/(packages|bench|node_modules)\//, '$1/');
  const short = file.replace(/^packages\/core\/src\//, '').replace(/^node_modules\/.*?node_modules\//, '');
  return `${f.functionName || '(anonymous)'} (${short || 'native'})`;
};

export async function profile<T>(fn: () => Promise<T>): Promise<{ result: T; summary: ProfileSummary }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  let result: T;
  let stopped: { profile: Profile };
  try {
    result = await fn();
  } finally {
    stopped = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
    session.disconnect();
  }
  return { result, summary: summarizeProfile(stopped.profile) };
}

/** Summarises a .cpuprofile file written by `node --cpu-prof`. */
export function summarizeProfileFile(path: string): ProfileSummary {
  return summarizeProfile(JSON.parse(fs.readFileSync(path, 'utf8')) as Profile);
}

function summarizeProfile(p: Profile): ProfileSummary {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const time = new Map<number, number>();
  p.samples.forEach((id, i) => {
    time.set(id, (time.get(id) ?? 0) + (p.timeDeltas[i] ?? 0));
  });
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  let total = 0;
  for (const [id, t] of time) {
    const node = byId.get(id)!;
    const { functionName: fname, url } = node.callFrame;
    // Idle time, and the inspector's own message dispatch, are not the code under test.
    if (fname === '(idle)' || fname === '(program)' || (fname === 'dispatch' && url === '')) continue;
    total += t;
    const key = label(node.callFrame);
    self.set(key, (self.get(key) ?? 0) + t);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const k = label(byId.get(cur)!.callFrame);
      if (seen.has(k)) continue;
      seen.add(k);
      incl.set(k, (incl.get(k) ?? 0) + t);
    }
  }
  const list = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .map(([name, us]) => ({ name, ms: us / 1000, share: total > 0 ? us / total : 0 }));
  return { totalMs: total / 1000, inclusive: list(incl), self: list(self).slice(0, 15) };
}

/** "Plan.ready 66%, classifyBlocked 41%": the inclusive share of the named functions (first match each). */
export function shares(summary: ProfileSummary, names: string[]): string {
  return names
    .map((name) => {
      const hit = summary.inclusive.find((e) => e.name.startsWith(`${name} (`) || e.name === name);
      return hit ? `\`${hit.name}\` ${(hit.share * 100).toFixed(0)}%` : null;
    })
    .filter(Boolean)
    .join(', ');
}

export function topSelf(summary: ProfileSummary, n = 6): string {
  return summary.self
    .slice(0, n)
    .map((e) => `\`${e.name}\` ${(e.share * 100).toFixed(0)}%`)
    .join(', ');
}
