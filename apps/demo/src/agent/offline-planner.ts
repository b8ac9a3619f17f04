// The built-in offline "model": a small deterministic planner, not an AI. It reads the last request in the
// conversation ("plan a launch: write post, review, publish", "done 2", "start the review", "what's next?"),
// looks at the plan to resolve which task is meant, and answers with tool calls of whichever family it was
// offered, exactly as a model would; every change goes through the toolkit's dispatch. After the tools ran it
// reads their results and says what happened.
import type { Plan, TaskSnapshot } from '@cairn/core';
import { taskNumbers } from '@cairn/core/protocol';
import { withoutNotes } from './conversation.js';
import type { Model, ModelMessage, ModelReply, ModelRequest, ModelToolCall } from './model.js';

export const OFFLINE_LABEL = 'Built-in offline planner (rule-based, not an AI model)';

export type Intent =
  | { kind: 'plan'; goal: string; steps: string[] }
  | { kind: 'add'; titles: string[] }
  | { kind: 'done' | 'start' | 'cancel' | 'remove'; ref: string }
  | { kind: 'next' }
  | { kind: 'list' }
  | { kind: 'help' };

type Family = 'cairn' | 'task_manage' | 'todo' | 'task_graph' | 'ongoing_task';

/** One tool call of this turn and its result, parsed. */
interface Step {
  name: string;
  args: Record<string, unknown>;
  result: unknown;
}

const HELP =
  'I am the built-in offline planner: a few fixed rules, not an AI model. I understand “plan a launch: write ' +
  'post, review, publish”, “add buy milk”, “done 2”, “start the review”, “cancel 3”, “remove 4”, “what’s ' +
  'next?” and “list”. Configure a model in Settings for free-form requests.';

export function createOfflinePlanner(plan: Plan): Model {
  return {
    label: OFFLINE_LABEL,
    async complete(request: ModelRequest): Promise<ModelReply> {
      return plannerStep(plan, request);
    },
  };
}

export function plannerStep(plan: Plan, { messages, tools }: ModelRequest): ModelReply {
  const names = new Set(tools.map((t) => t.function.name));
  const family = familyOf(names);
  const lastUser = findLastIndex(messages, (m) => m.role === 'user');
  // The person's words: without the plan changes told with them, and the last of several messages in a row.
  const said = lastUser === -1 ? '' : withoutNotes((messages[lastUser] as { content: string }).content);
  const request = said.split(/\n{2,}/).at(-1) ?? '';
  const steps = turnSteps(messages.slice(lastUser + 1));
  const intent = parseIntent(request);
  if (!family) return say('I was given no task tools, so I cannot change the plan.');
  const failed = steps.find((s) => isError(s.result));
  if (failed) return say(`The ${failed.name} tool refused: ${errorMessage(failed.result)}`);
  return FAMILIES[family](intent, steps, plan);
}

// ---------------------------------------------------------------- understanding requests

export function parseIntent(raw: string): Intent {
  const text = raw
    .trim()
    .replace(/[.!?\s]+$/, '')
    .replace(/[’‘]/g, "'");
  const lower = text.toLowerCase();
  if (/^(what'?s|what is|whats) next\b|^next( up)?$|^what (should|do|can) (i|we) do|^what now/.test(lower)) {
    return { kind: 'next' };
  }
  if (/^(list|show)( me)?( the)?( (tasks|plan|list|todos?))?$|^status$/.test(lower)) return { kind: 'list' };
  let m = /^(?:please\s+)?(?:plan|make a plan for|create a plan for|let'?s plan)\s+(.+)$/i.exec(text);
  if (m) {
    const body = m[1]!;
    const colon = body.search(/[:—]/);
    const goal = cleanTitle(colon === -1 ? body : body.slice(0, colon), true);
    const steps = colon === -1 ? [] : splitList(body.slice(colon + 1));
    return { kind: 'plan', goal, steps };
  }
  m = /^(?:add|new|create)(?:\s+an?)?(?:\s+(?:task|tasks|todo|todos|item|items))?:?\s+(.+)$/i.exec(text);
  if (m) return { kind: 'add', titles: splitList(m[1]!, false) };
  m =
    /^(?:done|did|finished|finish|complete|completed|close|check off)\s+(.+)$/i.exec(text) ??
    /^mark\s+(.+?)\s+(?:as\s+)?(?:done|complete|completed|finished)$/i.exec(text) ??
    /^(.+?)\s+(?:is\s+)?(?:done|finished|complete)$/i.exec(text);
  if (m) return { kind: 'done', ref: m[1]! };
  m =
    /^(?:start|begin|work on|working on|pick up|i'?m on|let'?s do)\s+(.+)$/i.exec(text) ??
    /^mark\s+(.+?)\s+(?:as\s+)?(?:started|in progress|active)$/i.exec(text);
  if (m) return { kind: 'start', ref: m[1]! };
  m = /^(?:cancel|drop|abandon)\s+(.+)$/i.exec(text);
  if (m) return { kind: 'cancel', ref: m[1]! };
  m = /^(?:remove|delete)\s+(.+)$/i.exec(text);
  if (m) return { kind: 'remove', ref: m[1]! };
  return { kind: 'help' };
}

function splitList(text: string, splitAnd = true): string[] {
  const separators = splitAnd ? /,|;|\s+then\s+|\s+and\s+/i : /,|;/;
  return text
    .split(separators)
    .map((part) => cleanTitle(part.replace(/^\s*(and|then)\s+/i, ''), false))
    .filter((part) => part.length > 0);
}

function cleanTitle(text: string, dropArticle: boolean): string {
  let t = text.trim().replace(/\s+/g, ' ');
  if (dropArticle) t = t.replace(/^(a|an|the|our|my)\s+/i, '');
  return t.slice(0, 1).toUpperCase() + t.slice(1);
}

/** "Write post" → "Writing post", for the todo family's activeForm. */
export function gerund(title: string): string {
  const [first = '', ...rest] = title.split(' ');
  let w = first.toLowerCase();
  if (w.endsWith('ie')) w = `${w.slice(0, -2)}ying`;
  else if (/[^aeiou]e$/.test(w) && w !== 'be') w = `${w.slice(0, -1)}ing`;
  else if (/^[^aeiou]*[aeiou][^aeiouwxy]$/.test(w)) w = `${w}${w.at(-1)}ing`;
  else w = `${w}ing`;
  return [w.slice(0, 1).toUpperCase() + w.slice(1), ...rest].join(' ');
}

/** The task a request names: `2` or `#2` (its number), or words of its title. Open tasks win ties. */
export function resolveTask(plan: Plan, ref: string): TaskSnapshot | null {
  let r = ref
    .trim()
    .toLowerCase()
    .replace(/^["“'']|["”'']$/g, '');
  for (let before = ''; before !== r; ) {
    before = r;
    r = r.replace(/^(the|task|step|item|number|no\.?|#)\s*/, '').trim();
  }
  if (/^\d+$/.test(r)) return plan.byNum(Number(r)) ?? null;
  if (!r) return null;
  const words = r.split(/\s+/);
  let best: { task: TaskSnapshot; score: number } | null = null;
  for (const task of plan.list()) {
    const title = task.title.toLowerCase();
    let score = 0;
    if (title === r) score = 100;
    else if (title.startsWith(r)) score = 80;
    else if (title.includes(r)) score = 60;
    else if (words.every((w) => title.includes(w))) score = 40;
    if (score === 0) continue;
    if (task.status === 'pending' || task.status === 'in_progress') score += 10;
    if (!best || score > best.score) best = { task, score };
  }
  return best?.task ?? null;
}

// ---------------------------------------------------------------- the families

type FamilyStep = (intent: Intent, steps: Step[], plan: Plan) => ModelReply;

const FAMILIES: Record<Family, FamilyStep> = {
  cairn: cairnStep,
  task_manage: taskManageStep,
  todo: todoStep,
  task_graph: taskGraphStep,
  ongoing_task: ongoingTaskStep,
};

function familyOf(names: Set<string>): Family | null {
  if (names.has('add_tasks')) return 'cairn';
  if (names.has('task_manage')) return 'task_manage';
  if (names.has('todo')) return 'todo';
  if (names.has('create_task')) return 'task_graph';
  if (names.has('set_ongoing_task')) return 'ongoing_task';
  return null;
}

function cairnStep(intent: Intent, steps: Step[], plan: Plan): ModelReply {
  if (steps.length > 0) return summarize(intent, steps, plan);
  switch (intent.kind) {
    case 'plan': {
      const keyed = intent.steps.map((title, i) => ({
        title,
        key: `s${i + 1}`,
        ...(i > 0 ? { blockedBy: [`s${i}`] } : {}),
      }));
      return call('add_tasks', {
        tasks: [{ title: intent.goal, ...(keyed.length ? { steps: keyed } : {}) }],
      });
    }
    case 'add':
      return call('add_tasks', { tasks: intent.titles.map((title) => ({ title })) });
    case 'done':
    case 'start':
    case 'cancel': {
      const task = resolveTask(plan, intent.ref);
      if (!task) return notFound(intent.ref);
      const status = { done: 'done', start: 'in_progress', cancel: 'cancelled' }[intent.kind];
      return call('update_tasks', { updates: [{ id: task.id, status }] });
    }
    case 'remove': {
      const task = resolveTask(plan, intent.ref);
      return task ? call('remove_tasks', { ids: [task.id] }) : notFound(intent.ref);
    }
    case 'next':
      return call('list_tasks', { view: 'ready', limit: 5 });
    case 'list':
      return call('list_tasks', { view: 'open' });
    default:
      return say(HELP);
  }
}

function taskManageStep(intent: Intent, steps: Step[], plan: Plan): ModelReply {
  if (steps.length > 0) return summarize(intent, steps, plan);
  switch (intent.kind) {
    case 'plan':
    case 'add': {
      const titles =
        intent.kind === 'add' ? intent.titles : intent.steps.length ? intent.steps : [intent.goal];
      return calls(titles.map((text) => ['task_manage', { action: 'add', text }]));
    }
    case 'done':
    case 'start': {
      const task = resolveTask(plan, intent.ref);
      if (!task) return notFound(intent.ref);
      return call('task_manage', {
        action: 'update',
        id: task.num,
        status: intent.kind === 'done' ? 'done' : 'active',
      });
    }
    case 'cancel':
      return say(
        'The task_manage tool has only pending, active and done, so it cannot cancel; say “remove N” to drop a task.',
      );
    case 'remove': {
      const task = resolveTask(plan, intent.ref);
      return task ? call('task_manage', { action: 'remove', id: task.num }) : notFound(intent.ref);
    }
    case 'next':
    case 'list':
      return call('task_manage', { action: 'list' });
    default:
      return say(HELP);
  }
}

interface TodoItem {
  content: string;
  activeForm: string;
  status: 'pending' | 'in_progress' | 'completed';
}

function todoStep(intent: Intent, steps: Step[], plan: Plan): ModelReply {
  if (intent.kind === 'help') return say(HELP);
  // The todo tool rewrites the whole list, so read it first, then send it back changed.
  const listed = steps.find((s) => s.name === 'todo' && s.args['action'] === 'list');
  if (!listed) return call('todo', { action: 'list' });
  const wrote = steps.find((s) => s.name === 'todo' && s.args['action'] !== 'list');
  if (wrote || intent.kind === 'next' || intent.kind === 'list') return summarize(intent, steps, plan);
  const current = ((listed.result as { todos?: TodoItem[] }).todos ?? []).map((t) => ({ ...t }));
  const write = (todos: TodoItem[]) => call('todo', { action: current.length ? 'update' : 'create', todos });
  switch (intent.kind) {
    case 'plan':
    case 'add': {
      const titles =
        intent.kind === 'add' ? intent.titles : intent.steps.length ? intent.steps : [intent.goal];
      return write([
        ...current,
        ...titles.map((content) => ({ content, activeForm: gerund(content), status: 'pending' as const })),
      ]);
    }
    default: {
      const task = resolveTask(plan, intent.ref);
      if (!task) return notFound(intent.ref);
      const index = current.findIndex((t) => t.content === task.title);
      if (task.parent !== null || index === -1) {
        return say(
          `“${task.title}” is a step of another task, and the todo tool sees only the top-level list.`,
        );
      }
      if (intent.kind === 'cancel') {
        return say(
          'The todo tool has only pending, in_progress and completed, so it cannot cancel; say “remove N” to drop an item.',
        );
      }
      if (intent.kind === 'remove') return write(current.filter((_, i) => i !== index));
      current[index]!.status = intent.kind === 'done' ? 'completed' : 'in_progress';
      return write(current);
    }
  }
}

function taskGraphStep(intent: Intent, steps: Step[], plan: Plan): ModelReply {
  switch (intent.kind) {
    case 'plan': {
      // One create_task at a time: each step waits on the one before, whose id only the last result tells.
      const titles = intent.steps.length ? intent.steps : [intent.goal];
      const created = steps.filter((s) => s.name === 'create_task');
      if (created.length >= titles.length) return summarize(intent, steps, plan);
      const previous = created.at(-1)?.result as { id?: number } | undefined;
      return call('create_task', {
        title: titles[created.length]!,
        ...(previous?.id !== undefined ? { blocked_by: [previous.id] } : {}),
      });
    }
    case 'add':
      if (steps.length > 0) return summarize(intent, steps, plan);
      return calls(intent.titles.map((title) => ['create_task', { title }]));
    case 'done': {
      if (steps.length > 0) return summarize(intent, steps, plan);
      const task = resolveTask(plan, intent.ref);
      return task ? call('complete_task', { task_id: task.num }) : notFound(intent.ref);
    }
    case 'start':
    case 'cancel':
    case 'remove':
      return say(
        `The task_graph tools are create_task, complete_task and list_ready_tasks: they cannot ${intent.kind} a task. Choose another tool family for that.`,
      );
    case 'next':
    case 'list':
      if (steps.length > 0) return summarize(intent, steps, plan);
      return call('list_ready_tasks', {});
    default:
      return say(HELP);
  }
}

interface OngoingTask {
  taskId: number;
  task: string;
  status: string;
  nextStep: string | null;
  steps: Array<{ title: string; status: string; note?: string }>;
}

function ongoingTaskStep(intent: Intent, steps: Step[], plan: Plan): ModelReply {
  const wrote = steps.some((s) => s.name !== 'get_ongoing_task');
  if (wrote) return summarize(intent, steps, plan);
  switch (intent.kind) {
    case 'plan':
      return call('set_ongoing_task', {
        task: intent.goal,
        status: 'in_progress',
        ...(intent.steps.length
          ? { steps: intent.steps.map((title) => ({ title, status: 'pending' })), nextStep: intent.steps[0] }
          : {}),
      });
    case 'add':
      return calls(intent.titles.map((task) => ['set_ongoing_task', { task, status: 'pending' }]));
    case 'next':
    case 'list':
      return steps.length ? summarize(intent, steps, plan) : call('get_ongoing_task', {});
    case 'done':
    case 'start':
    case 'cancel':
    case 'remove': {
      const task = resolveTask(plan, intent.ref);
      if (!task) return notFound(intent.ref);
      const parent = task.parent === null ? null : plan.get(task.parent);
      // The family numbers the conversation's tasks, not the plan's aliases (steps use up none).
      const numbers = taskNumbers(plan);
      const numberOf = (id: string) => numbers.numberOf(id);
      if (!parent) {
        if (intent.kind === 'start')
          return call('set_ongoing_task', {
            taskId: numberOf(task.id),
            task: task.title,
            status: 'in_progress',
          });
        return call('clear_ongoing_task', {
          taskId: numberOf(task.id),
          outcome: intent.kind === 'done' ? 'done' : 'cancelled',
        });
      }
      // A step: the tool takes the whole step list, so read the task, change the one step, send it back.
      const read = steps.find((s) => s.name === 'get_ongoing_task');
      if (!read) return call('get_ongoing_task', {});
      const parentNumber = numberOf(parent.id);
      const open = ((read.result as { tasks?: OngoingTask[] }).tasks ?? []).find(
        (t) => t.taskId === parentNumber,
      );
      if (!open) return say(`“${parent.title}” is closed, so its steps cannot change.`);
      const stepStatus = { done: 'done', start: 'in_progress', cancel: 'skipped', remove: 'skipped' }[
        intent.kind
      ];
      const next = open.steps.map((s) => (s.title === task.title ? { ...s, status: stepStatus } : s));
      const upcoming = next.find((s) => s.status === 'pending' || s.status === 'in_progress');
      return call('set_ongoing_task', {
        taskId: open.taskId,
        task: open.task,
        status: open.status,
        steps: next,
        nextStep: upcoming?.title ?? null,
      });
    }
    default:
      return say(HELP);
  }
}

// ---------------------------------------------------------------- replies

function summarize(intent: Intent, steps: Step[], plan: Plan): ModelReply {
  const last = steps.at(-1)!;
  switch (intent.kind) {
    case 'plan': {
      const list = intent.steps.length ? `: ${intent.steps.map(quote).join(' → ')}` : '';
      return say(
        `Planned ${quote(intent.goal)}${list}.${intent.steps.length > 1 ? ' Each step waits on the one before.' : ''}`,
      );
    }
    case 'add':
      return say(`Added ${intent.titles.map(quote).join(', ')}.`);
    case 'done':
    case 'start':
    case 'cancel':
    case 'remove': {
      const task = resolveTask(plan, intent.ref);
      const name = task ? quote(task.title) : quote(intent.ref);
      const verb = {
        done: 'Marked %s done.',
        start: 'Started %s.',
        cancel: 'Cancelled %s.',
        remove: 'Removed %s.',
      }[intent.kind];
      const ready = plan.ready().filter((t) => t.id !== task?.id);
      const nextUp = intent.kind === 'done' && ready[0] ? ` Next up: ${quote(ready[0].title)}.` : '';
      return say(verb.replace('%s', name) + nextUp);
    }
    case 'next':
      return say(nextFrom(last));
    case 'list':
      return say(listFrom(last));
    default:
      return say(HELP);
  }
}

/** "What's next" from the family's own read tool, in its vocabulary. */
function nextFrom(step: Step): string {
  const r = step.result as Record<string, unknown> | unknown[];
  let titles: string[] = [];
  if (step.name === 'list_tasks') {
    // What is under way comes first, then what can start.
    const tasks = (r as { tasks?: Array<{ title: string; status: string }> }).tasks ?? [];
    const started = tasks.filter((t) => t.status === 'in_progress');
    titles = [...started, ...tasks.filter((t) => t.status !== 'in_progress')].map((t) => t.title);
  } else if (step.name === 'list_ready_tasks') titles = (r as Array<{ title: string }>).map((t) => t.title);
  else if (step.name === 'task_manage') {
    const tasks = (r as { tasks?: Array<{ text: string; status: string }> }).tasks ?? [];
    titles = [
      ...tasks.filter((t) => t.status === 'active'),
      ...tasks.filter((t) => t.status === 'pending'),
    ].map((t) => t.text);
  } else if (step.name === 'todo') {
    const todos = (r as { todos?: TodoItem[] }).todos ?? [];
    titles = [
      ...todos.filter((t) => t.status === 'in_progress'),
      ...todos.filter((t) => t.status === 'pending'),
    ].map((t) => t.content);
  } else if (step.name === 'get_ongoing_task') {
    const tasks = (r as { tasks?: OngoingTask[] }).tasks ?? [];
    titles = tasks.map((t) => t.nextStep ?? t.steps.find((s) => s.status === 'pending')?.title ?? t.task);
  }
  if (titles.length === 0) return 'Nothing is ready right now.';
  const rest = titles.slice(1, 4);
  return `Next up: ${quote(titles[0]!)}.${rest.length ? ` After that: ${rest.map(quote).join(', ')}.` : ''}`;
}

function listFrom(step: Step): string {
  const text = JSON.stringify(step.result);
  const titles = [...text.matchAll(/"(?:title|text|content|task)":"((?:[^"\\]|\\.)*)"/g)].map(
    (m) => JSON.parse(`"${m[1]}"`) as string,
  );
  return titles.length ? `Open: ${titles.map(quote).join(', ')}.` : 'The list is empty.';
}

// ---------------------------------------------------------------- helpers

/** Call ids only need to be unique within the conversation: a per-page prefix and a counter. */
const prefix = Math.random().toString(36).slice(2, 7);
let counter = 0;

function call(name: string, args: Record<string, unknown>): ModelReply {
  return calls([[name, args]]);
}

function calls(list: Array<[string, Record<string, unknown>]>): ModelReply {
  const toolCalls: ModelToolCall[] = list.map(([name, args]) => ({
    id: `call_${prefix}${++counter}`,
    name,
    arguments: JSON.stringify(args),
  }));
  return { text: '', toolCalls };
}

function say(text: string): ModelReply {
  return { text, toolCalls: [] };
}

function notFound(ref: string): ModelReply {
  return say(
    `I could not find a task matching ${quote(ref)}. Name it by its number (like “done 2”) or by words of its title.`,
  );
}

function quote(text: string): string {
  return `“${text}”`;
}

function isError(result: unknown): boolean {
  return typeof result === 'object' && result !== null && 'error' in result;
}

function errorMessage(result: unknown): string {
  const error = (result as { error?: { message?: string } }).error;
  return error?.message ?? JSON.stringify(result);
}

/** The tool calls made since the request and their results, in order. */
function turnSteps(messages: ModelMessage[]): Step[] {
  const results = new Map<string, unknown>();
  for (const m of messages) {
    if (m.role === 'tool') {
      try {
        results.set(m.tool_call_id, JSON.parse(withoutNotes(m.content)));
      } catch {
        results.set(m.tool_call_id, withoutNotes(m.content));
      }
    }
  }
  const steps: Step[] = [];
  for (const m of messages) {
    if (m.role !== 'assistant') continue;
    for (const c of m.tool_calls ?? []) {
      let args: Record<string, unknown> = {};
      try {
        args = JSON.parse(c.function.arguments) as Record<string, unknown>;
      } catch {
        // Arguments the planner did not write; leave them empty.
      }
      steps.push({ name: c.function.name, args, result: results.get(c.id) });
    }
  }
  return steps;
}

function findLastIndex<T>(items: T[], test: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (test(items[i]!)) return i;
  return -1;
}
