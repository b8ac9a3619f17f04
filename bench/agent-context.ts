// Benchmark 12: what the demo's in-page agent sends a model over the scripted 40-turn session of its end-to-end
// test (apps/demo/test/agent-script.ts), with another person editing the plan between turns. Two agents run the
// same script side by side: the demo's (the plan prefix stays byte-identical, changes told in the conversation,
// history trimmed in blocks) and the same agent with the plan rendered again into the system prompt for every
// request. Per request: tokens sent (tool definitions and messages) and the tokens a provider could serve from
// its prompt cache (the prefix shared with the previous request, whole messages). Counted with cl100k.
import { createChat, createPlan, type Plan } from '@cairn/core';
import { cl100kTokenizer } from '@cairn/core/tokenizer';
import * as Y from 'yjs';
import { BrowserAgent } from '../apps/demo/src/agent/agent.js';
import type { Model } from '../apps/demo/src/agent/model.js';
import {
  type ChatRequest,
  type Edit,
  keepsPrefix,
  roleProblems,
  scriptedReply,
  sessionScript,
  toldPlan,
} from '../apps/demo/test/agent-script.js';
import { type BenchOptions, type BenchOutcome, count, type Row } from './lib/report.js';

const ANN = 'user:ann001';
const BO = 'user:bo0002';
const AGENT = 'agent:ann001';
const NAMES: Record<string, string> = { [ANN]: 'Ann', [BO]: 'Bo', [AGENT]: 'Planner for Ann' };

export interface SessionFigures {
  requests: number;
  sent: number;
  cached: number;
  /** Requests whose previous request is a byte-identical prefix of them. */
  keptPrefix: number;
  /** Requests whose told plan differed from the real plan, and role problems: both must be 0. */
  wrongPlans: number;
  roleProblems: number;
}

/** Runs the scripted session in this process against a scripted model; `planText` picks the agent's way. */
export async function agentSession(planText: 'deltas' | 'every-call'): Promise<SessionFigures> {
  const doc = new Y.Doc();
  const plan = createPlan({ doc, actor: ANN });
  const bo = plan.withActor(BO);
  const said = createChat(doc, { actor: ANN });
  const requests: ChatRequest[] = [];
  let wrongPlans = 0;
  const model: Model = {
    label: 'scripted',
    async complete({ messages, tools }) {
      const request = JSON.parse(JSON.stringify({ messages, tools })) as ChatRequest;
      requests.push(request);
      if (planText === 'deltas' && !samePlan(toldPlan(request), plan)) wrongPlans++;
      const reply = scriptedReply(request);
      return {
        text: reply.content ?? '',
        toolCalls: (reply.tool_calls ?? []).map((c) => ({
          id: c.id,
          name: c.function.name,
          arguments: c.function.arguments,
        })),
      };
    },
  };
  const agent = new BrowserAgent(
    {
      plan,
      chat: createChat(doc, { actor: AGENT }),
      actor: AGENT,
      name: () => NAMES[AGENT]!,
      owner: ANN,
      nameOf: (actor) => NAMES[actor] ?? actor,
      presence: () => [],
      traces: new Y.Doc(),
      skills: () => [],
      planText,
    },
    model,
  );
  for (const turn of sessionScript()) {
    for (const edit of turn.before ?? []) apply(bo, edit);
    const entry = said.append({ role: 'user', text: fill(turn.say, plan) });
    await agent.respond(entry.id);
  }
  let sent = 0;
  let cached = 0;
  let keptPrefix = 0;
  let problems = 0;
  requests.forEach((request, i) => {
    problems += roleProblems(request).length;
    const tools = cl100kTokenizer.count(JSON.stringify(request.tools));
    const each = request.messages.map((m) => cl100kTokenizer.count(JSON.stringify(m)));
    sent += tools + each.reduce((a, b) => a + b, 0);
    const previous = requests[i - 1];
    if (!previous) return;
    if (keepsPrefix(previous, request)) keptPrefix++;
    let shared = 0;
    while (
      shared < previous.messages.length &&
      JSON.stringify(previous.messages[shared]) === JSON.stringify(request.messages[shared])
    )
      shared++;
    cached += tools + each.slice(0, shared).reduce((a, b) => a + b, 0);
  });
  return { requests: requests.length, sent, cached, keptPrefix, wrongPlans, roleProblems: problems };
}

/** The script's `{n:Title}` as the task's number in the real plan. */
export function fill(text: string, plan: Plan): string {
  return text.replace(/\{n:([^}]+)\}/g, (_, title: string) => {
    const task = plan.list().find((t) => t.title === title);
    if (!task) throw new Error(`the script names "${title}", which the plan does not have`);
    return String(task.num);
  });
}

function apply(plan: Plan, edit: Edit): void {
  const task = () => {
    const found = plan.list().find((t) => t.title === edit.title);
    if (!found) throw new Error(`the script edits "${edit.title}", which the plan does not have`);
    return found;
  };
  if (edit.kind === 'add') plan.add({ title: edit.title });
  else if (edit.kind === 'done') plan.update(task().id, { status: 'done' });
  else if (edit.kind === 'start') plan.update(task().id, { status: 'in_progress' });
  else if (edit.kind === 'rename') plan.update(task().id, { title: edit.to });
  else plan.remove(task().id);
}

function samePlan(told: ReturnType<typeof toldPlan>, plan: Plan): boolean {
  const real = plan.list();
  return (
    real.length === told.size &&
    real.every((t) => {
      const seen = told.get(t.num);
      return seen?.title === t.title && seen.status === t.status;
    })
  );
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

export async function run(_options: BenchOptions): Promise<BenchOutcome> {
  const cairn = await agentSession('deltas');
  const full = await agentSession('every-call');
  const rows: Row[] = [
    {
      measure: 'Tokens sent over the 40-turn session (tool definitions + messages, every request)',
      cairn: count(cairn.sent, 'tokens'),
      baselineName: 'plan re-rendered into the system prompt every request',
      baseline: count(full.sent, 'tokens'),
      ratio: pct(cairn.sent / full.sent),
      target: '',
      met: null,
    },
    {
      measure:
        '… of which a provider could serve from its prompt cache (prefix shared with the previous request)',
      cairn: `${count(cairn.cached, 'tokens')} (${pct(cairn.cached / cairn.sent)})`,
      baselineName: 'the same, plan re-rendered',
      baseline: `${count(full.cached, 'tokens')} (${pct(full.cached / full.sent)})`,
      ratio: '',
      target: '',
      met: null,
    },
    {
      measure: '… tokens not served from the cache (what the provider computes afresh)',
      cairn: count(cairn.sent - cairn.cached, 'tokens'),
      baselineName: 'the same, plan re-rendered',
      baseline: count(full.sent - full.cached, 'tokens'),
      ratio: pct((cairn.sent - cairn.cached) / (full.sent - full.cached)),
      target: '',
      met: null,
    },
    {
      measure: 'Requests whose previous request is a byte-identical prefix of them',
      cairn: `${cairn.keptPrefix} of ${cairn.requests - 1} (${pct(cairn.keptPrefix / (cairn.requests - 1))})`,
      baselineName: 'plan re-rendered',
      baseline: `${full.keptPrefix} of ${full.requests - 1} (${pct(full.keptPrefix / (full.requests - 1))})`,
      ratio: '',
      target: '≥ 90% of requests',
      met: cairn.keptPrefix / (cairn.requests - 1) >= 0.9,
    },
    {
      measure: 'Requests whose told plan differs from the real plan / role rules broken (must be 0 / 0)',
      cairn: `${cairn.wrongPlans} / ${cairn.roleProblems}`,
      baselineName: 'plan re-rendered',
      baseline: `— / ${full.roleProblems}`,
      ratio: '',
      target: '0 / 0',
      met: cairn.wrongPlans === 0 && cairn.roleProblems === 0,
    },
  ];
  return {
    id: 'agent-context',
    number: 12,
    title:
      "The demo agent's requests over a 40-turn session: tokens sent and tokens a prompt cache can serve",
    method:
      'The scripted session of the demo agent test (40 turns, another person editing between turns, ' +
      `${cairn.requests} model requests), run in Node against a scripted model, once with the demo's context and once ` +
      'with the plan rendered again for every request. Each request counted with cl100k as its JSON (tools and ' +
      'messages); the cacheable part is the tools plus the leading messages identical to the previous request.',
    rows,
    notes: [
      'Token counts, not times: the load does not change them, so one run is the figure (no interval needed); ' +
        'task ids are random, so the counts move by a few hundred tokens from run to run.',
      'More tokens are sent than with the plan re-rendered, since changes are told as notes and stay in the ' +
        'history until the next trim; far fewer have to be computed afresh, which is what a cache bills and waits on.',
      'A provider caches in blocks (OpenAI: from 1,024 tokens, in steps of 128), so its real cache hits are ' +
        'somewhat lower than the shared prefix counted here, on both sides alike.',
    ],
  };
}
