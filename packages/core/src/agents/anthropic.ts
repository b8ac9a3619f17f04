// @cairn/core/anthropic: Cairn in the Anthropic SDK's tool runner (`client.beta.messages.toolRunner({ system,
// tools })`). The tools are `betaTool()`s over the toolkit's JSON Schemas; the runner does not validate them, so
// the toolkit does, and a refusal is thrown as a ToolError: a `tool_result` with `is_error` whose text names the
// expected shape. The runner keeps its conversation in a server-held thread by default, whose system prompt
// cannot change: the plan goes in `system` once (`await cairn.system()`), and what others changed since the
// model's previous call is told after the next tool result, which the runner sends on the model's next call.
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import {
  type AgentSession,
  type AgentSessionOptions,
  type AgentSource,
  createAgentSession,
} from './session.js';

export interface CairnAnthropic {
  /** For `toolRunner({ tools })`. */
  tools: Array<ReturnType<typeof betaTool>>;
  /** For `toolRunner({ system })`: the instructions and the plan, rendered on the first call. */
  system: () => Promise<string>;
  session: AgentSession;
}

/** Cairn for the Anthropic tool runner, over a Plan (a toolkit is made with `options`), a Toolkit, or an HTTP toolkit. */
export function cairnAnthropic(source: AgentSource, options: AgentSessionOptions = {}): CairnAnthropic {
  const session = createAgentSession(source, options);
  const tools = session.tools.map((t) =>
    betaTool({
      name: t.name,
      description: t.description,
      inputSchema: t.parameters as Parameters<typeof betaTool>[0]['inputSchema'],
      run: async (input: unknown) => {
        const outcome = await session.run(t.name, input);
        const told = await session.news();
        const text = told === '' ? outcome.text : `${outcome.text}\n\n${told}`;
        if (!outcome.ok) throw new ToolError(text);
        return text;
      },
    }),
  );
  return {
    tools,
    system: () => session.systemPrompt(),
    session,
  };
}
