// Benchmark 14: the agent-framework adapters. (1) Tokens the model reads over a 20-call scripted session in each
// framework's own loop, with Cairn's context (the plan once, byte-identical, then deltas) against the same
// session with the plan rendered again into the system prompt on every call it changed. A provider
// caches a prompt's unchanged prefix, so what a model call reads anew is what follows the longest prefix it
// shares with the call before; both that and everything sent are counted (cl100k). (2) What each adapter adds
// to a browser bundle beside Cairn's root entry (min+gzip, esbuild), beside the size of its framework.
import { gzipSync } from 'node:zlib';
import { createPlan, isOpenStatus, type Plan, type TaskInput } from '@cairn/core';
import { cl100kTokenizer } from '@cairn/core/tokenizer';
import { build } from 'esbuild';
import { FRAMEWORKS, type Framework, type Move, runLoop } from './lib/agent-loops.js';
import { BROWSER_BUILD } from './lib/browser-build.js';
import { rng } from './lib/measure.js';
import { type BenchOptions, type BenchOutcome, bytes, count, type Row } from './lib/report.js';
import { TITLE_WORDS } from './lib/words.js';

const CALLS = 20;
const TASKS = 30;
const TARGET_SHARE = 0.3;

function tasks(n: number): TaskInput[] {
  return Array.from({ length: n }, (_, i) => ({
    title: `${TITLE_WORDS[i % 10]} the ${TITLE_WORDS[(i * 7) % 10]} ${TITLE_WORDS[(i * 3) % 10]} for account ${1000 + i}`,
    status: i < n / 5 ? 'done' : 'pending',
  }));
}

/**
 * The session: the agent claims a task and closes it, in turn, and answers on its last call; before each of its
 * calls after the first, a person has moved one other open task on (told to the agent as a delta).
 */
function script(plan: Plan, seed: number): Move {
  const random = rng(seed);
  const person = plan.withActor('user:ann');
  let claimed = '';
  return (step, sent) => {
    const open = person.list().filter((t) => isOpenStatus(t.status) && t.assignee !== plan.actor);
    const task = open[Math.floor(random() * open.length)];
    if (task) person.update(task.id, { status: task.status === 'pending' ? 'in_progress' : 'done' });
    if (step === CALLS - 1) return 'Done for now.';
    if (step % 2 === 0) return { name: 'claim_next', args: {} };
    claimed = [...sent.matchAll(/\\?"id\\?":\s*\\?"([a-z0-9]+)\\?"/g)].at(-1)?.[1] ?? claimed;
    return { name: 'update_tasks', args: { updates: [{ id: claimed, status: 'done' }] } };
  };
}

function sharedPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

async function session(framework: Framework, reRender: boolean) {
  const plan = createPlan({ actor: 'agent:bench', random: rng(7) });
  plan.withActor('user:ann').addMany(tasks(TASKS));
  const sent = await runLoop(framework, plan, script(plan, 11), CALLS, reRender);
  let total = 0;
  let fresh = 0;
  sent.forEach((text, i) => {
    total += cl100kTokenizer.count(text);
    fresh += cl100kTokenizer.count(i === 0 ? text : text.slice(sharedPrefix(sent[i - 1]!, text)));
  });
  plan.destroy();
  return { calls: sent.length, total, fresh };
}

const FRAMEWORK_PACKAGES: Record<Framework, string[]> = {
  ai: ['ai'],
  'openai-agents': ['@openai/agents'],
  langchain: ['@langchain/core', 'langchain'],
  mastra: ['@mastra/core'],
  anthropic: ['@anthropic-ai/sdk'],
};

async function gzipped(contents: string, external: string[]): Promise<number | string> {
  try {
    const result = await build({
      ...BROWSER_BUILD,
      stdin: { contents, resolveDir: process.cwd(), sourcefile: 'entry.ts', loader: 'ts' },
      write: false,
      external,
      conditions: ['@cairn/source'],
    });
    return gzipSync(result.outputFiles[0]!.contents, { level: 9 }).byteLength;
  } catch (error) {
    const first = (error as { errors?: Array<{ text: string }> }).errors?.[0]?.text ?? String(error);
    return `does not bundle for a browser (${first.slice(0, 80)})`;
  }
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

export async function run(_options: BenchOptions): Promise<BenchOutcome> {
  const rows: Row[] = [];
  for (const framework of FRAMEWORKS) {
    const cairn = await session(framework, false);
    const every = await session(framework, true);
    const share = cairn.fresh / every.fresh;
    rows.push({
      measure: `@cairn/core/${framework}: tokens read anew over ${cairn.calls} calls (${TASKS} tasks, one change by someone else a call)`,
      cairn: count(cairn.fresh, 'tokens'),
      baselineName: 'the plan rendered into the system prompt on every call it changed',
      baseline: count(every.fresh, 'tokens'),
      ratio: pct(share),
      target: `≤ ${pct(TARGET_SHARE)}`,
      met: share <= TARGET_SHARE,
    });
    rows.push({
      measure: `… everything sent over the session, cached or not (${framework})`,
      cairn: count(cairn.total, 'tokens'),
      baselineName: 'the same, re-rendered',
      baseline: count(every.total, 'tokens'),
      ratio: pct(cairn.total / every.total),
      target: '',
      met: null,
    });
  }
  const frameworks = FRAMEWORKS.flatMap((f) => FRAMEWORK_PACKAGES[f]).flatMap((p) => [p, `${p}/*`]);
  const root = await gzipped("export * from '@cairn/core';", [...frameworks, 'yjs']);
  for (const framework of FRAMEWORKS) {
    const withAdapter = await gzipped(
      `export * from '@cairn/core'; export * from '@cairn/core/${framework}';`,
      [...frameworks, 'yjs'],
    );
    const own = await gzipped(
      FRAMEWORK_PACKAGES[framework].map((p) => `export * from '${p}';`).join('\n'),
      [],
    );
    const added = typeof withAdapter === 'number' && typeof root === 'number' ? withAdapter - root : NaN;
    rows.push({
      measure: `@cairn/core/${framework}: bytes it adds beside the root entry, min+gzip (framework and yjs left out)`,
      cairn: bytes(added),
      baselineName: `${FRAMEWORK_PACKAGES[framework].join(' + ')} itself, min+gzip`,
      baseline: typeof own === 'number' ? bytes(own) : own,
      ratio: typeof own === 'number' ? pct(added / own) : '',
      target: '',
      met: null,
    });
  }
  return {
    id: 'agent-adapters',
    number: 12,
    title: 'Agent-framework adapters: tokens a model reads, bytes an adapter adds',
    method:
      `Each framework's own loop (generateText, run(agent), createAgent, Mastra's Agent, the Anthropic tool runner) ` +
      `driven by its test model for ${CALLS} calls on a ${TASKS}-task plan; before each call another actor moves a ` +
      'task on, and the agent claims and closes tasks. The baseline renders the plan whole into the system prompt ' +
      'before every call it changed (the adapter with reRenderShare 0; for Mastra and the Anthropic runner, the ' +
      'same tools in a loop that sets the system prompt anew each call, without a thread). A call reads anew what ' +
      'follows the longest prefix it shares ' +
      "with the call before (a provider's prompt cache), in the order tools, system prompt, messages; cl100k. " +
      `Sizes: esbuild from the sources, bundle + minify, ESM, browser, es2022, gzip 9, root entry = ${typeof root === 'number' ? bytes(root) : root}.`,
    rows,
    notes: [
      'Token counts are deterministic (seeded plan and script): one run is the figure, no interval is needed.',
      "Mastra and Anthropic: the adapters tell others' changes with the next tool result (Mastra regroups added " +
        "messages; a runner thread's system prompt is fixed); the other three place them as messages.",
    ],
  };
}
