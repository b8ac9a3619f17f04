// @cairn/core/mastra: Cairn in a Mastra agent (`new Agent({ tools, instructions })`, `agent.generate(input,
// { prepareStep })`). The tools are `createTool()`s over the toolkit's JSON Schemas, keyed by name (the record
// keys are the names the model sees). Mastra validates a JSON Schema itself and hands the model
// `{ error: true, message }` when a call does not match; a call the toolkit refuses comes back the same way, with
// the toolkit's code and message. `instructions` is the plan for the system prompt; `prepareStep` adds what
// others changed as a message before each step (the run's message list keeps it where it was told).
import type { ProcessInputStepArgs, ProcessInputStepResult } from '@mastra/core/processors';
import { createTool } from '@mastra/core/tools';
import type { Plan } from '../plan.js';
import type { Toolkit } from '../tools/toolkit.js';
import {
  type AgentSession,
  type AgentSessionOptions,
  type AgentToolkit,
  type ContextSource,
  createAgentSession,
} from './session.js';

type MastraTool = ReturnType<typeof createTool>;
/** Mastra's `prepareStep` (the options of `generate` and `stream`): called before each step. */
type PrepareStep = (args: ProcessInputStepArgs) => Promise<ProcessInputStepResult | undefined>;

export interface CairnMastra {
  /** For `new Agent({ tools })`. */
  tools: Record<string, MastraTool>;
  /** For `new Agent({ instructions })`: the system prompt with the plan. */
  instructions: () => Promise<string>;
  /** For `agent.generate(input, { prepareStep })` (or `stream`): others' changes before each step. */
  prepareStep: PrepareStep;
  session: AgentSession;
}

/** Cairn for Mastra, over a Plan (a toolkit is made with `options`), a Toolkit, or an HTTP toolkit. */
export function cairnMastra(
  source: Plan | Toolkit | (AgentToolkit & ContextSource),
  options: AgentSessionOptions = {},
): CairnMastra {
  const session = createAgentSession(source, options);
  let system: string | null = null;
  const tools: Record<string, MastraTool> = {};
  for (const t of session.tools) {
    tools[t.name] = createTool({
      id: t.name,
      description: t.description,
      // biome-ignore lint/suspicious/noExplicitAny: a JSON Schema, which Mastra takes beside zod and standard schemas
      inputSchema: t.parameters as any,
      execute: async (input: unknown) => {
        const outcome = await session.run(t.name, input);
        if (outcome.ok) return outcome.result;
        const { error } = outcome.result as { error: { code: string; message: string } };
        return { error: true, code: error.code, message: error.message };
      },
    }) as MastraTool;
  }
  const prepareStep: PrepareStep = async ({ messageList, systemMessages }) => {
    const before = system;
    const turn = await session.turn();
    system = turn.system;
    if (turn.delta !== '') messageList.add({ role: 'user', content: turn.delta }, 'input');
    // Rendered again: the new plan replaces the old one in the system prompt.
    if (before !== null && before !== system) {
      return {
        systemMessages: systemMessages.map((m) =>
          m.content === before ? { role: 'system', content: system } : m,
        ),
      } as Awaited<ReturnType<PrepareStep>>;
    }
    return undefined;
  };
  return {
    tools,
    instructions: async () => {
      system ??= (await session.turn()).system;
      return system;
    },
    prepareStep,
    session,
  };
}
