// `cairn agents`: runs N agents on one plan and prints what they do, one line per event, on stdout. Without
// --server it starts a server of its own (on a free port, plans in --data) that a demo can join meanwhile.
import { llmFromEnv } from './agents/llm.js';
import { type AgentEvent, runAgents } from './agents.js';
import { parseOptions, usage } from './cli-args.js';
import { createConsoleLogger } from './log.js';
import { createCairnServer } from './node-host.js';

export const AGENTS_USAGE = `  cairn agents --plan ID --count N [--server URL [--token T] | --data DIR] [--goal TEXT] [--tasks M]
              [--work-ms MIN-MAX] [--timeout SECONDS]
      Runs N agents sharing the plan: one splits the goal into tasks (when the plan is empty), all claim ready
      tasks, work through their steps and complete them, until the plan is done. Without --server a server is
      started on a free port (plans in --data, default ./data). A model does the work when CAIRN_LLM_BASE_URL or
      OPENAI_API_KEY is set (CAIRN_LLM_MODEL, default gpt-4o-mini); otherwise it is simulated (--work-ms per
      step, default 200-1200). The token may also come from CAIRN_TOKEN.
`;

export interface AgentsCliIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
}

export async function runAgentsCli(args: string[], io: AgentsCliIO): Promise<number> {
  const options = parse(args, io.env);
  let url = options.server;
  let close: (() => Promise<void>) | null = null;
  if (!url) {
    const server = createCairnServer({
      dataDir: options.dataDir,
      logger: createConsoleLogger({ quiet: true }),
    });
    const info = await server.listen(0, '127.0.0.1');
    url = info.url;
    close = () => server.close();
    io.stdout(`listening on ${info.url}\n`);
  }
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const llm = llmFromEnv(io.env);
    io.stdout(
      `${options.count} agents on plan "${options.planId}" at ${url}${llm ? ` with model ${llm.model}` : ''}\n`,
    );
    const report = await runAgents({
      url,
      planId: options.planId,
      count: options.count,
      ...(options.token ? { token: options.token } : {}),
      ...(options.goal ? { goal: options.goal } : {}),
      ...(options.tasks ? { tasks: options.tasks } : {}),
      workMs: options.workMs,
      llm,
      signal: stop.signal,
      ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
      onEvent: (event) => io.stdout(`${line(event)}\n`),
    });
    const tops = report.agents[0]?.snapshot.tasks.filter((t) => t.parent === null) ?? [];
    const open = tops.filter((t) => t.status !== 'done').length;
    io.stdout(
      `${open === 0 ? 'plan done' : `stopped with ${open} tasks open`}: ` +
        report.agents.map((a) => `${a.actor} ${a.done.length}`).join(', ') +
        '\n',
    );
    return open === 0 ? 0 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await close?.();
  }
}

function line(event: AgentEvent): string {
  const what = [
    event.type.padEnd(7),
    event.taskId ?? '',
    event.title ? `"${event.title}"` : '',
    event.detail ?? '',
  ]
    .filter(Boolean)
    .join(' ');
  return `${String(event.seq).padStart(4)} ${event.agent.padEnd(18)} ${what}`;
}

interface AgentsCliOptions {
  planId: string;
  count: number;
  server: string | null;
  token: string | null;
  dataDir: string;
  goal: string | null;
  tasks: number | null;
  workMs: [number, number];
  timeoutMs: number | null;
}

function parse(args: string[], env: Record<string, string | undefined>): AgentsCliOptions {
  const values = parseOptions(args, {
    plan: { type: 'string' },
    count: { type: 'string' },
    server: { type: 'string' },
    token: { type: 'string' },
    data: { type: 'string' },
    goal: { type: 'string' },
    tasks: { type: 'string' },
    'work-ms': { type: 'string' },
    timeout: { type: 'string' },
  });
  const text = (name: keyof typeof values): string | null => values[name] ?? null;
  const planId = text('plan');
  if (!planId) throw usage('--plan is required: the id of the plan the agents share.');
  const count = integer(text('count'), '--count', 1, 64);
  if (count === null) throw usage('--count is required: how many agents (1 to 64).');
  const server = text('server');
  if (server && text('data')) throw usage('Give either --server or --data, not both.');
  const token = text('token') ?? env.CAIRN_TOKEN ?? null;
  if (token && !server) throw usage('--token goes with --server.');
  const range = text('work-ms') ?? '200-1200';
  const match = /^(\d+)(?:-(\d+))?$/.exec(range);
  const workMs: [number, number] = match ? [Number(match[1]), Number(match[2] ?? match[1])] : [-1, -1];
  if (!match || workMs[1] < workMs[0])
    throw usage(`--work-ms is MIN-MAX in ms, e.g. 200-1200, not "${range}".`);
  const timeout = integer(text('timeout'), '--timeout', 1, 86_400);
  return {
    planId,
    count,
    server,
    token,
    dataDir: text('data') ?? './data',
    goal: text('goal'),
    tasks: integer(text('tasks'), '--tasks', 1, 200),
    workMs,
    timeoutMs: timeout === null ? null : timeout * 1000,
  };
}

function integer(value: string | null, name: string, min: number, max: number): number | null {
  if (value === null) return null;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max)
    throw usage(`${name} must be an integer from ${min} to ${max}.`);
  return n;
}
