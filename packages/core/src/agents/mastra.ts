// @cairn/core/mastra: Cairn in a Mastra agent (`new Agent({ tools, instructions })`). The tools are
// `createTool()`s over the toolkit's JSON Schemas, keyed by name (the record keys are the names the model sees).
// Mastra validates a JSON Schema itself and hands the model `{ error: true, message }` when a call does not
// match; a call the toolkit refuses comes back the same way, with the toolkit's code and message.
// `instructions` is the plan for the system prompt. What others changed comes with the next tool result
// (`{ result, sinceLastCall }`, as the HTTP API says it): Mastra's message list regroups messages added between
// steps (user messages after every response), so a delta message would move and break the cached prefix.
import { createTool } from '@mastra/core/tools';
import {
  type AgentSession,
  type AgentSessionOptions,
  type AgentSource,
  createAgentSession,
} from './session.js';

type MastraTool = ReturnType<typeof createTool>;
export interface CairnMastra {
  /** For `new Agent({ tools })`. */
  tools: Record<string, MastraTool>;
  /** For `new Agent({ instructions })`: the system prompt with the plan. */
  instructions: () => Promise<string>;
  session: AgentSession;
}

/** Cairn for Mastra, over a Plan (a toolkit is made with `options`), a Toolkit, or an HTTP toolkit. */
export function cairnMastra(source: AgentSource, options: AgentSessionOptions = {}): CairnMastra {
  const session = createAgentSession(source, options);
  const tools: Record<string, MastraTool> = {};
  for (const t of session.tools) {
    tools[t.name] = createTool({
      id: t.name,
      description: t.description,
      // biome-ignore lint/suspicious/noExplicitAny: a JSON Schema, which Mastra takes beside zod and standard schemas
      inputSchema: t.parameters as any,
      execute: async (input: unknown) => {
        const outcome = await session.run(t.name, input);
        const news = await session.news();
        if (outcome.ok) return news === '' ? outcome.result : { result: outcome.result, sinceLastCall: news };
        const { error } = outcome.result as { error: { code: string; message: string } };
        return {
          error: true,
          code: error.code,
          message: error.message,
          ...(news ? { sinceLastCall: news } : {}),
        };
      },
    }) as MastraTool;
  }
  return {
    tools,
    instructions: () => session.systemPrompt(),
    session,
  };
}
