// @cairn/core/openai-agents: Cairn in an OpenAI Agents SDK run (`run(agent, input, options)`). The tools are
// function tools in OpenAI's strict mode, with the toolkit's own strict schemas (optional fields nullable; the
// toolkit takes a null as "absent"). The SDK does not validate JSON-Schema arguments and hides a thrown error
// behind a generic message, so every call is validated by the toolkit and a refusal's text is what the model
// reads (`errorFunction`). `instructions` puts the plan in the system prompt; `callModelInputFilter` (a run
// option) keeps it byte-identical and places what others changed as user messages where they were told.
import { type CallModelInputFilter, type FunctionTool, tool } from '@openai/agents';
import {
  type AgentSession,
  type AgentSessionOptions,
  type AgentSource,
  createAgentSession,
} from './session.js';

export interface CairnAgents {
  /** For `new Agent({ tools })`. */
  tools: FunctionTool[];
  /** For `new Agent({ instructions })`: the system prompt with the plan, as of the last model call. */
  instructions: () => Promise<string>;
  /** For `run(agent, input, { callModelInputFilter })`: the plan and the deltas before each model call. */
  callModelInputFilter: CallModelInputFilter;
  session: AgentSession;
}

/** The toolkit's refusal, thrown so the SDK records a failed call; its message is the refusal as JSON. */
class RefusedCall extends Error {}

/** Cairn for the Agents SDK, over a Plan (a toolkit is made with `options`), a Toolkit, or an HTTP toolkit. */
export function cairnAgentTools(source: AgentSource, options: AgentSessionOptions = {}): CairnAgents {
  const session = createAgentSession(source, options);
  const tools = session.tools.map((t) =>
    tool({
      name: t.name,
      description: t.description,
      // biome-ignore lint/suspicious/noExplicitAny: the toolkit's strict schema, typed by the SDK as zod or JSON Schema
      parameters: t.strictParameters as any,
      strict: true,
      execute: async (input: unknown) => {
        const outcome = await session.run(t.name, input);
        if (!outcome.ok) throw new RefusedCall(outcome.text);
        return outcome.text;
      },
      errorFunction: (_context, error) =>
        error instanceof RefusedCall ? error.message : `The tool failed: ${String(error)}`,
    }),
  );
  const callModelInputFilter: CallModelInputFilter = async ({ modelData }) => {
    const prepared = await session.prepare(modelData.input, (delta) => ({
      role: 'user' as const,
      content: delta,
    }));
    return { instructions: prepared.system, input: prepared.messages };
  };
  return {
    tools,
    instructions: () => session.systemPrompt(),
    callModelInputFilter,
    session,
  };
}
