// The context template of seeds 000 and 002: a list of sections `{ section, role, content | tool, skip_if_empty }`
// whose `{{variables}}` (the plan in any format, ready tasks, what changed, who the agent is, who else is here)
// are resolved into chat messages. A section that resolves to nothing is skipped when it says so.

import * as z from 'zod/mini';
import '../zod-messages.js';
import type { ChangePoint } from '../changes-since.js';
import { CairnError } from '../errors.js';
import { type LearnedContext, learnedProcedures } from '../learning/context.js';
import type { Plan } from '../plan.js';
import { type Actor, SYSTEM_ACTORS } from '../schema.js';
import type { DonePolicy } from './budget.js';
import { renderDelta } from './delta.js';
import { type RenderFormat, renderPlan } from './render-plan.js';
import type { Tokenizer } from './tokenizer.js';
import { inline, inlineMarked, type Presence } from './view.js';

export interface ContextSection {
  /** A name for the section (for logs and tests; not sent to the model). */
  section: string;
  role: 'system' | 'user' | 'assistant';
  /** Text with `{{variables}}`. Exactly one of content and tool. */
  content?: string;
  /** A context tool whose output is the section's text. */
  tool?: string;
  /** Leave the section out when it resolves to blank text (seed 000: an empty task list costs zero tokens). */
  skip_if_empty?: boolean;
}

/**
 * A template as JSON from outside (an HTTP body, an MCP call): at most 100 sections, names and texts bounded.
 * `resolveContext` checks the rest (exactly one of content and tool).
 */
const name = () => z.string().check(z.minLength(1), z.maxLength(100));
export const ContextTemplateSchema = z
  .array(
    z.strictObject({
      section: name().check(z.describe('A name for the section.')),
      role: z.enum(['system', 'user', 'assistant']),
      content: z
        .optional(z.string().check(z.maxLength(20_000)))
        .check(z.describe('Text with {{variables}}; exactly one of content and tool.')),
      tool: z.optional(name()).check(z.describe('A context tool whose output is the text.')),
      skip_if_empty: z
        .optional(z.boolean())
        .check(z.describe('Leave the section out when it resolves to nothing.')),
    }),
  )
  .check(z.minLength(1), z.maxLength(100));

/** A message of the context `resolveContext` returns, in the shape chat APIs take. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface Identity {
  actor: Actor;
  /** A display name ("Scout"). */
  name?: string;
  /** A sentence on what the agent is for. */
  about?: string;
}

type Source = string | (() => string | Promise<string>);

/** The plan, the agent and the values a context template refers to: the options of `resolveContext`. */
export interface ContextOptions {
  plan: Plan;
  /** Who the agent is. Default: the plan's actor. */
  identity?: Identity | Actor;
  /** Who is connected, from awareness (for `collaborators` and the native plan). */
  presence?: Iterable<Presence> | null;
  /** Where the agent's last turn ended, for `plan_changes`; without it `plan_changes` is empty. */
  since?: ChangePoint;
  /** Time for ages (ms since the epoch). Default: `Date.now()`. */
  now?: number;
  /** Budget and done policy applied to each plan rendering. */
  maxTokens?: number;
  tokenizer?: Tokenizer;
  done?: DonePolicy;
  /** Extra `{{variables}}`, or replacements of the built-in ones. */
  variables?: Record<string, Source>;
  /** Context tools for `tool:` sections; the built-in variables can be named there too. */
  tools?: Record<string, Source>;
  /**
   * How `ready_tasks`, `plan_changes` and `collaborators` name tasks, so one context speaks one naming:
   * `num` (integer aliases, as the seeds' formats do) or `id`. Default: `id` when the template uses the
   * native `plan` (which names tasks by id), else `num`.
   */
  ids?: 'num' | 'id';
  /**
   * Told of what was left out rather than failing the context: a `skip_if_empty` section naming a context tool
   * or variable nobody provides. Default: `console.warn`.
   */
  onWarning?: (message: string) => void;
  /** The scope's learned skills, for `learned_procedures`; without them that variable is empty. */
  learned?: LearnedContext;
}

/** The variables every template can use. */
export const CONTEXT_VARIABLES = [
  'tasks_content',
  'todo_reminder',
  'open_tasks',
  'plan',
  'ready_tasks',
  'plan_changes',
  'agent_identity',
  'my_actor',
  'collaborators',
  'learned_procedures',
] as const;

/**
 * The seeds' own names for the built-in context tools and variables: seed 002's template ends with
 * `{section: tasks, tool: task_list}`, seed 000 calls its section `agent_tasks`, and the families' read tools
 * name what they list.
 */
export const CONTEXT_ALIASES: Readonly<Record<string, (typeof CONTEXT_VARIABLES)[number]>> = {
  task_list: 'tasks_content',
  agent_tasks: 'tasks_content',
  list_ready_tasks: 'ready_tasks',
  get_ongoing_task: 'open_tasks',
};

const PLAN_FORMATS: Record<string, RenderFormat> = {
  tasks_content: 'checklist',
  todo_reminder: 'reminder',
  open_tasks: 'open-tasks',
  plan: 'native',
};

const VARIABLE = /\{\{\s*([A-Za-z_][\w.-]*)\s*\}\}/g;

/**
 * Builds the messages of a model call from a context template: sections of text with `{{variables}}` (the plan,
 * its delta, the agent's identity, your own values) resolved in order.
 */
export async function resolveContext(
  template: readonly ContextSection[],
  options: ContextOptions,
): Promise<ChatMessage[]> {
  checkTemplate(template);
  const identity: Identity =
    typeof options.identity === 'string'
      ? { actor: options.identity }
      : (options.identity ?? { actor: options.plan.actor });
  const ids = options.ids ?? (usesNativePlan(template) ? 'id' : 'num');
  const builtins = builtinSources(options, identity, ids);
  const sources: Record<string, Source> = { ...builtins, ...options.variables };
  const tools: Record<string, Source> = { ...builtins, ...options.tools };
  const warn = options.onWarning ?? ((message: string) => console.warn(message));
  const cache = new Map<string, Promise<string>>();
  const value = (table: Record<string, Source>, name: string, kind: string): Promise<string> => {
    const key = `${kind}:${name}`;
    let hit = cache.get(key);
    if (!hit) {
      const source = Object.hasOwn(table, name) ? table[name] : undefined;
      if (source === undefined) {
        throw new CairnError(
          'invalid_argument',
          `Unknown context ${kind} "${name}"; known: ${Object.keys(table).sort().join(', ')}.`,
          { valid: Object.keys(table).sort(), unknown: name },
        );
      }
      hit = Promise.resolve(typeof source === 'function' ? source() : source);
      cache.set(key, hit);
    }
    return hit;
  };

  const messages: ChatMessage[] = [];
  for (const section of template) {
    let text: string;
    try {
      if (section.tool !== undefined) text = await value(tools, section.tool, 'tool');
      else {
        const content = section.content ?? '';
        const names = [...content.matchAll(VARIABLE)].map((m) => m[1]!);
        const values = new Map<string, string>();
        for (const name of names) values.set(name, await value(sources, name, 'variable'));
        text = content.replace(VARIABLE, (_, name: string) => values.get(name) ?? '');
      }
    } catch (error) {
      // A section that may be empty is optional: one naming what this host does not provide (seed 002's
      // nostr_* tools, say) is left out with a warning instead of failing every other section.
      if (!(section.skip_if_empty && error instanceof CairnError && error.details.unknown !== undefined)) {
        throw error;
      }
      warn(`Context section "${section.section}" left out: ${error.message}`);
      continue;
    }
    text = text.replace(/\s+$/, '');
    if (section.skip_if_empty && text.trim() === '') continue;
    messages.push({ role: section.role, content: text });
  }
  return messages;
}

function builtinSources(
  options: ContextOptions,
  identity: Identity,
  ids: 'num' | 'id',
): Record<string, Source> {
  const { plan } = options;
  const actor = identity.actor;
  const render = (format: RenderFormat) => () =>
    renderPlan(plan, {
      format,
      actor,
      presence: options.presence ?? null,
      ...(options.now !== undefined ? { now: options.now } : {}),
      ...(options.maxTokens !== undefined ? { maxTokens: options.maxTokens } : {}),
      ...(options.tokenizer ? { tokenizer: options.tokenizer } : {}),
      ...(options.done ? { done: options.done } : {}),
    });
  const out: Record<string, Source> = {};
  for (const [name, format] of Object.entries(PLAN_FORMATS)) out[name] = render(format);
  out['ready_tasks'] = () =>
    plan
      .ready({ actor })
      .map((t) =>
        ids === 'num'
          ? `- ${t.num}. ${inlineMarked(t.title)}`
          : `- ${inlineMarked(t.title)} [${inlineMarked(t.id)}]`,
      )
      .join('\n');
  out['plan_changes'] = () =>
    options.since === undefined ? '' : renderDelta(plan, { since: options.since, exclude: actor, ids });
  out['agent_identity'] = () => {
    const who = identity.name ? `You are ${identity.name} (${actor}).` : `You are ${actor}.`;
    const about = identity.about ? ` ${identity.about}` : '';
    return `${who}${about} Your changes to the plan are recorded as ${actor}.`;
  };
  out['my_actor'] = actor;
  out['collaborators'] = () => collaborators(plan, actor, options.presence ?? null, ids);
  out['learned_procedures'] = () =>
    options.learned ? learnedProcedures(plan, options.learned, actor, options.now ?? Date.now()) : '';
  for (const [alias, name] of Object.entries(CONTEXT_ALIASES)) out[alias] = out[name]!;
  return out;
}

/** Whether a section shows the native plan, which names tasks by id. */
function usesNativePlan(template: readonly ContextSection[]): boolean {
  return template.some(
    (s) => s.tool === 'plan' || [...(s.content ?? '').matchAll(VARIABLE)].some((m) => m[1] === 'plan'),
  );
}

/**
 * Everyone else who is here or has worked on the plan: "user:ann (here now, on task 3 "Deploy"), agent:c" (or
 * "on Deploy [k3x9a2b]" when the context names tasks by id).
 */
function collaborators(
  plan: Plan,
  self: Actor,
  presence: Iterable<Presence> | null,
  ids: 'num' | 'id',
): string {
  const here = new Map<string, Presence>();
  for (const p of presence ?? []) if (!here.has(p.actor)) here.set(p.actor, p);
  const known = new Set<string>(here.keys());
  for (const task of plan.list()) {
    for (const actor of [task.createdBy, task.updatedBy, task.assignee]) if (actor) known.add(actor);
  }
  const people = [...known]
    .filter((a) => a !== self && !(SYSTEM_ACTORS as readonly string[]).includes(a))
    .sort();
  return people
    .map((actor) => {
      const p = here.get(actor);
      if (!p) return inline(actor);
      const task = p.taskId ? plan.get(p.taskId) : undefined;
      const on = !task
        ? ''
        : ids === 'num'
          ? `, on task ${task.num} ${JSON.stringify(inline(task.title))}`
          : `, on ${inlineMarked(task.title)} [${inlineMarked(task.id)}]`;
      return `${inline(actor)} (here now${on})`;
    })
    .join(', ');
}

function checkTemplate(template: readonly ContextSection[]): void {
  if (!Array.isArray(template)) {
    throw new CairnError('invalid_argument', 'A context template is an array of sections.');
  }
  template.forEach((s, i) => {
    const where = `Section ${i}${s && typeof s.section === 'string' ? ` (${s.section})` : ''}`;
    if (!s || typeof s !== 'object') throw new CairnError('invalid_argument', `${where} is not an object.`);
    if (!['system', 'user', 'assistant'].includes(s.role)) {
      throw new CairnError('invalid_argument', `${where}: role must be system, user or assistant.`);
    }
    if ((s.content === undefined) === (s.tool === undefined)) {
      throw new CairnError('invalid_argument', `${where}: give exactly one of content and tool.`);
    }
  });
}
