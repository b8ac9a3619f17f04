// Benchmark 8: tokens an agent reads about the plan over a session. Scripted sessions of 20 turns on a 30-task
// and a 300-task plan; before each turn one or two other actors change tasks. Cairn keeps the plan text of the
// system prompt byte-identical and appends what changed as a delta message (createContextFeed), rendering the
// whole plan again only when the deltas since the last full render cost more than it; the baselines re-inject
// the whole list every turn, in each seed's format and as a TodoWrite-style JSON list. Counted with cl100k.
// Session totals add the tool definitions sent with every model call (benchmark 9 measures them apart).
import {
  createContextFeed,
  createPlan,
  createToolkit,
  type FamilyName,
  isOpenStatus,
  type Plan,
  type RenderFormat,
  renderPlan,
  type TaskInput,
} from '@cairn/core';
import { cl100kTokenizer } from '@cairn/core/tokenizer';
import * as Y from 'yjs';
import { rng } from './lib/measure.js';
import { type BenchOptions, type BenchOutcome, count, type Row } from './lib/report.js';
import { TITLE_WORDS } from './lib/words.js';

const TURNS = 20;
const TARGET_SHARE = 0.25;
const FORMATS: RenderFormat[] = ['checklist', 'reminder', 'open-tasks'];
/** The seed family whose tools go with each seed's format, on both sides of the comparison. */
const FAMILY_OF: Record<string, FamilyName> = {
  checklist: 'task_manage',
  reminder: 'todo',
  'open-tasks': 'ongoing_task',
};

function tasks(n: number): TaskInput[] {
  return Array.from({ length: n }, (_, i) => ({
    title: `${TITLE_WORDS[i % 10]} the ${TITLE_WORDS[(i * 7) % 10]} ${TITLE_WORDS[(i * 3) % 10]} for account ${1000 + i}`,
    status: i < n / 5 ? 'done' : i % 7 === 0 ? 'in_progress' : 'pending',
    activeForm: `Working on account ${1000 + i}`,
  }));
}

/** One scripted session: what each system injects per turn, in cl100k tokens. */
function session(size: number, changesPerTurn: number, format: RenderFormat, seed: number) {
  const random = rng(seed);
  const doc = new Y.Doc();
  const agent = createPlan({ doc, actor: 'agent:me', random });
  agent.addMany(tasks(size));
  const others: Plan[] = [agent.withActor('agent:b'), agent.withActor('user:ann')];
  const feed = createContextFeed(agent, { format, tokenizer: cl100kTokenizer });
  let cairn = 0;
  let full = 0;
  let todoJson = 0;
  let stable = 0;
  let reRenders = 0;
  let previous: string | null = null;
  for (let turn = 0; turn < TURNS; turn++) {
    if (turn > 0) {
      for (let c = 0; c < changesPerTurn; c++) advance(others[c % others.length]!, random);
    }
    const context = feed.turn();
    cairn +=
      (context.reRendered ? cl100kTokenizer.count(context.plan) : 0) + cl100kTokenizer.count(context.delta);
    if (turn > 0 && context.plan === previous) stable++;
    if (turn > 0 && context.reRendered) reRenders++;
    previous = context.plan;
    full += cl100kTokenizer.count(renderPlan(agent, { format }));
    todoJson += cl100kTokenizer.count(JSON.stringify(todoList(agent)));
  }
  return { cairn, full, todoJson, stableShare: stable / (TURNS - 1), reRenders };
}

/** Moves one open task on: pending → in_progress → done (as another agent or a person would). */
function advance(plan: Plan, random: () => number): void {
  const open = plan.list().filter((t) => isOpenStatus(t.status));
  const task = open[Math.floor(random() * open.length)];
  if (!task) return;
  plan.update(task.id, { status: task.status === 'pending' ? 'in_progress' : 'done' });
}

/** The whole list as a TodoWrite call carries it. */
function todoList(plan: Plan) {
  return {
    todos: plan.list().map((t) => ({
      content: t.title,
      status: t.status === 'pending' ? 'pending' : isOpenStatus(t.status) ? 'in_progress' : 'completed',
      activeForm: t.activeForm ?? t.title,
    })),
  };
}

/** What one model call's tool definitions cost, in the OpenAI shape. */
function definitionTokens(family: FamilyName): number {
  const toolkit = createToolkit(createPlan(), { families: [family] });
  try {
    return cl100kTokenizer.count(JSON.stringify(toolkit.definitions('openai')));
  } finally {
    toolkit.destroy();
  }
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

export async function run(_options: BenchOptions): Promise<BenchOutcome> {
  const rows: Row[] = [];
  const notes: string[] = [];
  for (const size of [30, 300]) {
    for (const changes of [1, 2]) {
      for (const format of FORMATS) {
        const r = session(size, changes, format, size * 10 + changes);
        const share = r.cairn / r.full;
        const held = size === 30 && changes === 1;
        rows.push({
          measure: `Plan tokens over ${TURNS} turns, ${size} tasks, ${changes} change${changes > 1 ? 's' : ''} a turn, ${format}`,
          cairn: count(r.cairn, 'tokens'),
          baselineName: `full ${format} every turn`,
          baseline: count(r.full, 'tokens'),
          ratio: pct(share),
          target: held ? `≤ ${pct(TARGET_SHARE)} of full re-injection` : '',
          met: held ? share <= TARGET_SHARE : null,
        });
        if (format === 'reminder') {
          rows.push({
            measure: `… the same session against a TodoWrite-style JSON list every turn (${size} tasks, ${changes} a turn)`,
            cairn: count(r.cairn, 'tokens'),
            baselineName: 'TodoWrite JSON every turn',
            baseline: count(r.todoJson, 'tokens'),
            ratio: pct(r.cairn / r.todoJson),
            target: '',
            met: null,
          });
        }
        const definitions = TURNS * definitionTokens(FAMILY_OF[format]!);
        rows.push({
          measure: `… session total with the ${FAMILY_OF[format]} tool definitions sent on every turn (${size} tasks, ${changes} a turn)`,
          cairn: count(r.cairn + definitions, 'tokens'),
          baselineName: `full ${format} + the same definitions`,
          baseline: count(r.full + definitions, 'tokens'),
          ratio: pct((r.cairn + definitions) / (r.full + definitions)),
          target: '',
          met: null,
        });
        rows.push({
          measure: `… turns whose system-prompt plan text stays byte-identical to the turn before without a full re-render (${size} tasks, ${changes} a turn, ${format})`,
          cairn: `${pct(r.stableShare)} (${r.reRenders} re-render${r.reRenders === 1 ? '' : 's'})`,
          baselineName: 'full re-injection',
          baseline: '0% (the text changes with every change)',
          ratio: '',
          target: held ? 'every turn' : '',
          met: held ? r.stableShare === 1 && r.reRenders === 0 : null,
        });
      }
    }
  }
  notes.push(
    'Counted: the plan text injected into the model context (a full render when Cairn renders, each delta message) ' +
      "per turn, summed over the session; the session totals add the seed family's tool definitions (OpenAI shape) " +
      'once per turn on both sides, since a model call carries them every time.',
    "The agent makes no change of its own here; its own changes are left out of Cairn's deltas (it knows them from its " +
      'tool results) but are in every full re-injection.',
    'Cairn renders the whole plan again once the deltas since the last full render cost more than three times the ' +
      'plan (reRenderShare 3, the default); the "byte-identical" rows count the turns that kept the cached prefix.',
  );
  return {
    id: 'context-tokens',
    number: 8,
    title: 'Context tokens per session: deltas and a stable prefix against full re-injection',
    method:
      `Scripted sessions of ${TURNS} turns on plans of 30 and 300 tasks (a fifth done); before each turn one or two ` +
      'other actors move a random open task on (pending → in progress → done). Tokens counted with cl100k.',
    rows,
    notes,
  };
}
