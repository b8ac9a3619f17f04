// @cairn/core/ai: Cairn in a Vercel AI SDK loop (`generateText`/`streamText` with `stopWhen`, or a ToolLoopAgent).
// The tools are `tool()`s over the toolkit's JSON Schemas; a refused call throws, which the SDK hands the model as
// the tool's error (`error-text`) and the loop goes on. `prepareStep` puts the plan in the step's instructions
// (byte-identical until the plan is rendered again) and appends what others changed as a user message; the SDK
// carries a returned message list forward, so each delta is told once and stays where it was told.
import { jsonSchema, type ModelMessage, type PrepareStepFunction, type ToolSet, tool } from 'ai';
import {
  type AgentSession,
  type AgentSessionOptions,
  type AgentSource,
  createAgentSession,
} from './session.js';

export interface CairnAI {
  /** For `generateText({ tools })`: the toolkit's tools, run as its actor. */
  tools: ToolSet;
  /** For `generateText({ prepareStep })`: the plan as instructions, others' changes as messages. */
  prepareStep: PrepareStepFunction<ToolSet>;
  session: AgentSession;
}

/** Cairn for the AI SDK, over a Plan (a toolkit is made with `options`), a Toolkit, or an HTTP toolkit. */
export function cairnTools(source: AgentSource, options: AgentSessionOptions = {}): CairnAI {
  const session = createAgentSession(source, options);
  const tools: ToolSet = {};
  for (const t of session.tools) {
    tools[t.name] = tool({
      description: t.description,
      // Not validated here: the toolkit validates every call and its refusal names the expected shape.
      inputSchema: jsonSchema<Record<string, unknown>>(t.parameters as Parameters<typeof jsonSchema>[0]),
      execute: async (input) => {
        const outcome = await session.run(t.name, input);
        if (!outcome.ok) throw new Error(outcome.text);
        return outcome.result as Record<string, unknown>;
      },
    });
  }
  const prepareStep: PrepareStepFunction<ToolSet> = async ({ messages }) => {
    const turn = await session.turn();
    if (turn.delta === '') return { instructions: turn.system };
    const told: ModelMessage = { role: 'user', content: turn.delta };
    return { instructions: turn.system, messages: [...messages, told] };
  };
  return { tools, prepareStep, session };
}
