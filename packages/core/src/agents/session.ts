// What every agent-framework adapter shares, with no framework imported: the offered tools as JSON Schemas, a
// call run through the toolkit's dispatch (the toolkit's actor writes), and the plan context of each model call
// from a context feed: the system prompt carries the plan text byte-identical from call to call, and what others
// changed since the previous call comes as a short message placed where it was told, so the history a provider
// caches only ever grows at its end. Each adapter maps these onto its framework's tool and step hooks.
import type { Plan } from '../plan.js';
import type { ContextTurn } from '../render/context-feed.js';
import { createContextFeed } from '../render/context-feed.js';
import type { RenderFormat } from '../render/render-plan.js';
import type { Actor } from '../schema.js';
import type { JsonSchemaObject } from '../tools/definitions.js';
import { createToolkit } from '../tools/families.js';
import type { FamilyName } from '../tools/tool.js';
import { isToolError, type Toolkit, type ToolResult } from '../tools/toolkit.js';

/** The context format that goes with each family: the one its seed's agents read. */
export const FAMILY_FORMATS: Readonly<Record<FamilyName, RenderFormat>> = {
  cairn: 'native',
  task_manage: 'checklist',
  todo: 'reminder',
  task_graph: 'native',
  ongoing_task: 'open-tasks',
  cairn_compact: 'native',
};

/** The toolkit surface an adapter needs: a local `Toolkit`, or `createHttpToolkit`'s client of a server. */
export interface AgentToolkit {
  readonly actor: Actor;
  readonly families: readonly FamilyName[];
  readonly names: readonly string[];
  definitions: Toolkit['definitions'];
  dispatch(name: string, args?: unknown): Promise<ToolResult>;
}

/** A toolkit that also says what the plan looks like and what changed (the HTTP client). */
export interface ContextSource {
  contextFeed(options: { format: RenderFormat }): { turn(): Promise<ContextTurn> };
}

/** Who the agent is, which families it gets and how its system prompt is made: the options of `createAgentSession`. */
export interface AgentSessionOptions {
  /** With a Plan: who writes. Default: the plan's actor. */
  actor?: Actor;
  /** With a Plan: the families offered. Default `['cairn']`. */
  families?: readonly FamilyName[];
  /** The plan's format in the system prompt. Default: the first family's (FAMILY_FORMATS). */
  format?: RenderFormat;
  /** What the system prompt says before the plan. Default: a few lines on how the plan and its changes come. */
  instructions?: string;
  /** As createContextFeed's (with a Plan or Toolkit; an HTTP toolkit takes its own). Default 3. */
  reRenderShare?: number;
}

export const DEFAULT_INSTRUCTIONS =
  'You work on a shared task plan, with others who change it too. The plan as it stood when you last read it ' +
  'whole is below; what others changed since comes headed "Changes since your last turn". Read and ' +
  'change the plan only through the tools.';

export interface AgentTool {
  name: string;
  description: string;
  /** The arguments' JSON Schema, as the toolkit defines it. */
  parameters: JsonSchemaObject;
  /** OpenAI's strict form of it (every property required, optional ones nullable, objects closed). */
  strictParameters: JsonSchemaObject;
}

export interface ToolOutcome {
  /** False when the toolkit refused the call (the plan is unchanged). */
  ok: boolean;
  /** The toolkit's result; `{ error: { code, message } }` when refused. */
  result: ToolResult;
  /** The result as JSON text, for frameworks whose tool results are strings. */
  text: string;
}

export interface PreparedCall<M> {
  /** The system prompt: instructions and the plan text, the same bytes as the call before unless re-rendered. */
  system: string;
  /** The framework's history with every delta told so far placed where it was told. */
  messages: M[];
  /** What was told this call ('' when nothing changed, or the plan was rendered again). */
  delta: string;
}

/**
 * One agent's run over a plan, framework-free: its tools, a `run` that never throws, and before each model call
 * the system prompt and what others changed since. The framework adapters (`@cairn/core/ai` and kin) wrap it.
 */
export interface AgentSession {
  readonly actor: Actor;
  readonly tools: readonly AgentTool[];
  /** Runs a call through the toolkit's dispatch; never throws. */
  run(name: string, args: unknown): Promise<ToolOutcome>;
  /**
   * Before each model call: the system prompt, and `history` (the framework's messages, without any delta) with
   * the deltas told so far spliced in at the points they were told, this call's (if any) at the end.
   */
  prepare<M>(history: readonly M[], toMessage: (delta: string) => M): Promise<PreparedCall<M>>;
  /** The system prompt as it stands (the first call renders the plan), for frameworks that ask for it apart. */
  systemPrompt(): Promise<string>;
  /** The next context turn alone (the first renders the plan for the system prompt). */
  turn(): Promise<ContextTurn & { system: string }>;
  /**
   * For a framework whose history Cairn cannot add a message to, or whose system prompt cannot change once sent:
   * what to tell with the next tool result. Others' changes since the previous call, or, when the plan is
   * rendered again, the whole plan as it is now; '' before the first turn or when nothing changed.
   */
  news(): Promise<string>;
  /** Stops the toolkit this session made (with a Plan); a toolkit passed in is the caller's to destroy. */
  destroy(): void;
}

function isContextSource(value: object): value is AgentToolkit & ContextSource {
  return typeof (value as Partial<ContextSource>).contextFeed === 'function';
}

function isToolkit(value: object): value is Toolkit {
  return 'plan' in value && typeof (value as Partial<AgentToolkit>).dispatch === 'function';
}

/** What an agent's session runs over: a Plan (a toolkit is made for it), a Toolkit, or an HTTP toolkit. */
export type AgentSource = Plan | Toolkit | (AgentToolkit & ContextSource);

/** One agent's session over a Plan (a toolkit is made for it), a Toolkit, or an HTTP toolkit. */
export function createAgentSession(source: AgentSource, options: AgentSessionOptions = {}): AgentSession {
  const own = !isToolkit(source) && !isContextSource(source);
  const toolkit: Toolkit | (AgentToolkit & ContextSource) = own
    ? createToolkit(source as Plan, {
        ...(options.actor !== undefined ? { actor: options.actor } : {}),
        families: options.families ?? ['cairn'],
      })
    : (source as Toolkit | (AgentToolkit & ContextSource));
  const format = options.format ?? FAMILY_FORMATS[toolkit.families[0] ?? 'cairn'];
  const preamble = options.instructions ?? DEFAULT_INSTRUCTIONS;
  const feed = isContextSource(toolkit)
    ? toolkit.contextFeed({ format })
    : (() => {
        const local = createContextFeed(toolkit.plan, {
          format,
          actor: toolkit.actor,
          ...(options.reRenderShare !== undefined ? { reRenderShare: options.reRenderShare } : {}),
        });
        return { turn: async () => local.turn() };
      })();

  const strict = toolkit.definitions('openai', { strict: true });
  const tools: AgentTool[] = toolkit.definitions('openai').map((def, i) => ({
    name: def.function.name,
    description: def.function.description,
    parameters: def.function.parameters,
    strictParameters: strict[i]!.function.parameters,
  }));

  let system = '';
  /** Deltas told since the plan text was last rendered, each at the history length it was told at. */
  let told: Array<{ at: number; text: string }> = [];
  const turn = async () => {
    const next = await feed.turn();
    if (next.reRendered || system === '') {
      system = `${preamble}\n\n${next.plan}`;
      told = [];
    }
    return { ...next, system };
  };

  return {
    actor: toolkit.actor,
    tools,
    async run(name, args) {
      const result = await toolkit.dispatch(name, args);
      return { ok: !isToolError(result), result, text: JSON.stringify(result ?? null) };
    },
    async prepare(history, toMessage) {
      const next = await turn();
      if (next.delta !== '') told.push({ at: history.length, text: next.delta });
      const messages: (typeof history)[number][] = [];
      let pending = 0;
      for (let i = 0; i <= history.length; i++) {
        while (pending < told.length && told[pending]!.at <= i)
          messages.push(toMessage(told[pending++]!.text));
        if (i < history.length) messages.push(history[i]!);
      }
      return { system: next.system, messages, delta: next.delta };
    },
    turn,
    async systemPrompt() {
      return system === '' ? (await turn()).system : system;
    },
    async news() {
      if (system === '') return '';
      const before = system;
      const next = await turn();
      return next.system === before ? next.delta : `The plan as it is now:\n${next.plan}`;
    },
    destroy() {
      if (own) (toolkit as Toolkit).destroy();
    },
  };
}
