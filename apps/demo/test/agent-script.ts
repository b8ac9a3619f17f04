// A scripted 40-turn session with the in-page agent, shared by its end-to-end test (Chromium, a local
// chat-completions server) and the context benchmark (bench/agent-context.ts): what the person asks, what another
// person changes in between, a scripted model that acts only on what its request tells it, and the checks run
// on every request (the plan the model is told, the roles a strict provider accepts, the cached prefix).

/** One request as the endpoint receives it. */
export interface ChatRequest {
  messages: Array<{
    role: string;
    content: string | null;
    tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
    tool_call_id?: string;
  }>;
  tools?: unknown[];
}

/** A task as the check compares it: number, title and status. */
export interface ToldTask {
  num: number;
  title: string;
  status: string;
}

/** What another person does before a turn; `target` counts from the first open task the script made. */
export type Edit =
  | { kind: 'add'; title: string }
  | { kind: 'done'; title: string }
  | { kind: 'start'; title: string }
  | { kind: 'rename'; title: string; to: string }
  | { kind: 'remove'; title: string };

export interface Turn {
  /** What the person says to the agent; `{n:Title}` becomes the task number of Title in the real plan. */
  say: string;
  /** What the other person changes before the message is sent. */
  before?: Edit[];
}

/** 40 turns: plan, chat, finish and rename tasks by number, while the other person edits the same plan. */
export function sessionScript(): Turn[] {
  const turns: Turn[] = [
    { say: 'add Book the venue; Send invites; Order food' },
    { say: 'hello, what do we have?' },
    { say: 'start {n:Book the venue}', before: [{ kind: 'add', title: 'Rent chairs' }] },
    { say: 'done {n:Book the venue}' },
    { say: 'add Hire a band', before: [{ kind: 'done', title: 'Rent chairs' }] },
    { say: 'thanks' },
    { say: 'rename {n:Order food} to Order vegan food' },
    { say: 'start {n:Send invites}', before: [{ kind: 'add', title: 'Print menus' }] },
    { say: 'what is left?', before: [{ kind: 'rename', title: 'Print menus', to: 'Print the menus' }] },
    { say: 'done {n:Send invites}' },
  ];
  // Then the same rhythm on tasks of their own, so the chat grows well past the window and the plan keeps moving.
  for (let round = 1; turns.length < 40; round++) {
    const a = `Task ${round}a`;
    const b = `Task ${round}b`;
    turns.push(
      { say: `add ${a}; ${b}`, before: [{ kind: 'add', title: `Errand ${round}` }] },
      { say: `start {n:${a}}` },
      { say: 'how are we doing?', before: [{ kind: 'done', title: `Errand ${round}` }] },
      { say: `done {n:${a}}`, before: [{ kind: 'start', title: b }] },
      { say: `rename {n:${b}} to ${b} (checked)` },
      { say: `remove {n:${b} (checked)}`, before: [{ kind: 'remove', title: `Errand ${round}` }] },
    );
  }
  return turns.slice(0, 40);
}

const CHANGES = /<plan_changes>\n([\s\S]*?)\n<\/plan_changes>/g;
const VERBS: Record<string, string> = {
  reopened: 'pending',
  started: 'in_progress',
  'now waiting on user': 'waiting_user',
  'now waiting on external': 'waiting_external',
  done: 'done',
  failed: 'failed',
  cancelled: 'cancelled',
  skipped: 'skipped',
};

/**
 * The plan as the request tells it: the native render in the system prompt, with every plan-changes note of the
 * conversation applied in order. Tasks by number.
 */
export function toldPlan(request: ChatRequest): Map<number, ToldTask> {
  const tasks = new Map<number, ToldTask & { id: string }>();
  const system = request.messages[0]?.content ?? '';
  for (const line of system.split('\n')) {
    const m = /^\s*- \[(.)\] (\d+)\. (.*) \[(\w+)\](?: \((failed|cancelled|skipped|waiting on user)\))?/.exec(
      line,
    );
    if (!m) continue;
    const status = m[1] === ' ' ? 'pending' : m[1] === '-' ? 'in_progress' : (m[5] ?? 'done');
    tasks.set(Number(m[2]), { num: Number(m[2]), title: m[3]!, status, id: m[4]! });
  }
  for (const message of request.messages.slice(1)) {
    for (const block of (message.content ?? '').matchAll(CHANGES)) {
      for (const line of block[1]!.split('\n').slice(1)) {
        const m = /^- task (\d+) \[(\w+)\](?: "((?:[^"\\]|\\.)*)")? (.*)$/.exec(line);
        if (!m) throw new Error(`a plan change the check cannot read: ${line}`);
        const num = Number(m[1]);
        const title = m[3] === undefined ? '' : (JSON.parse(`"${m[3]}"`) as string);
        const rest = m[4]!;
        if (rest.startsWith('removed')) tasks.delete(num);
        else if (rest.startsWith('added')) {
          const status = /\((\w+)\)$/.exec(rest)?.[1] ?? 'pending';
          tasks.set(num, { num, title, status, id: m[2]! });
        } else {
          const known = tasks.get(num);
          if (!known) throw new Error(`a change to task ${num}, which the model was never told of: ${line}`);
          known.title = title;
          const verb = Object.keys(VERBS).find((v) => rest.startsWith(`${v} by`));
          if (verb) known.status = VERBS[verb]!;
        }
      }
    }
  }
  return new Map([...tasks].map(([num, { id: _, ...task }]) => [num, task]));
}

/** The task ids the request tells of, by number (the scripted model needs them for the native tools). */
function toldIds(request: ChatRequest): Map<number, string> {
  const ids = new Map<number, string>();
  const text = request.messages.map((m) => m.content ?? '').join('\n');
  for (const m of text.matchAll(/^\s*- \[.\] (\d+)\. .* \[(\w+)\]/gm)) ids.set(Number(m[1]), m[2]!);
  for (const m of text.matchAll(/^- task (\d+) \[(\w+)\]/gm)) ids.set(Number(m[1]), m[2]!);
  return ids;
}

/**
 * The rules of the strictest chat-completions providers: one system message, first; then a user message;
 * user and assistant alternate; an assistant's tool calls are answered, each once and in order, by the tool
 * messages right after it, which an assistant message follows; the request ends with a user or tool message.
 * Returns what is wrong, or [] when nothing is.
 */
export function roleProblems(request: ChatRequest): string[] {
  const problems: string[] = [];
  const messages = request.messages;
  if (messages[0]?.role !== 'system') problems.push('the first message is not the system message');
  if (messages[1]?.role !== 'user') problems.push(`message 1 is ${messages[1]?.role}, not user`);
  let expected: string[] = [];
  for (let i = 1; i < messages.length; i++) {
    const m = messages[i]!;
    const prev = messages[i - 1]!;
    if (m.role === 'system') problems.push(`message ${i} is a system message mid-conversation`);
    if (expected.length > 0) {
      if (m.role !== 'tool' || m.tool_call_id !== expected[0])
        problems.push(`message ${i} is ${m.role}, not the result of tool call ${expected[0]}`);
      expected = expected.slice(1);
      continue;
    }
    if (m.role === 'tool') problems.push(`message ${i} is a tool result no call asked for`);
    if (m.role === 'user' && prev.role !== 'assistant' && i > 1)
      problems.push(`message ${i} (user) follows ${prev.role}`);
    if (m.role === 'assistant' && prev.role !== 'user' && prev.role !== 'tool')
      problems.push(`message ${i} (assistant) follows ${prev.role}`);
    if (m.role === 'assistant') expected = (m.tool_calls ?? []).map((c) => c.id);
  }
  if (expected.length > 0) problems.push(`tool calls ${expected.join(', ')} are never answered`);
  const last = messages.at(-1)?.role;
  if (last !== 'user' && last !== 'tool') problems.push(`the request ends with a ${last} message`);
  return problems;
}

/** Whether `previous`'s messages (and tools) are a byte-identical prefix of `next`'s. */
export function keepsPrefix(previous: ChatRequest, next: ChatRequest): boolean {
  if (JSON.stringify(previous.tools ?? []) !== JSON.stringify(next.tools ?? [])) return false;
  if (previous.messages.length > next.messages.length) return false;
  return previous.messages.every((m, i) => JSON.stringify(m) === JSON.stringify(next.messages[i]));
}

let calls = 0;

/**
 * The scripted model: it reads the person's last words and acts with the native tools, naming tasks by the ids
 * its request tells it for their numbers (so "done 2" works only if the numbers it was told are right). After
 * its tool calls it answers with text.
 */
export function scriptedReply(request: ChatRequest): {
  role: 'assistant';
  content: string | null;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
} {
  const last = request.messages.at(-1)!;
  if (last.role === 'tool') return { role: 'assistant', content: 'Done.' };
  const said = (last.content ?? '')
    .replace(/<(plan_changes|learned_procedures)>[\s\S]*?<\/\1>/g, '')
    .trim()
    .split(/\n{2,}/)
    .at(-1)!;
  const ids = toldIds(request);
  const idOf = (n: string) => ids.get(Number(n)) ?? `unknown-${n}`;
  const call = (name: string, args: unknown) => ({
    role: 'assistant' as const,
    content: null,
    tool_calls: [
      {
        id: `call_${++calls}`,
        type: 'function' as const,
        function: { name, arguments: JSON.stringify(args) },
      },
    ],
  });
  let m = /^add (.+)$/.exec(said);
  if (m) return call('add_tasks', { tasks: m[1]!.split('; ').map((title) => ({ title })) });
  m = /^(start|done) (\d+)$/.exec(said);
  if (m) {
    const status = m[1] === 'start' ? 'in_progress' : 'done';
    return call('update_tasks', { updates: [{ id: idOf(m[2]!), status }] });
  }
  m = /^rename (\d+) to (.+)$/.exec(said);
  if (m) return call('update_tasks', { updates: [{ id: idOf(m[1]!), title: m[2]! }] });
  m = /^remove (\d+)$/.exec(said);
  if (m) return call('remove_tasks', { ids: [idOf(m[1]!)] });
  return { role: 'assistant', content: `You said: ${said}` };
}
