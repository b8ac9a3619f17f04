// @cairn/core/langchain: Cairn in a LangChain.js agent (`createAgent` from `langchain`). The tools are
// `tool()`s over the toolkit's JSON Schemas; the middleware runs each of their calls through the toolkit (whose
// refusal, a ToolMessage with status "error", names the expected shape, where LangChain's own check of a JSON
// Schema would hand the model a stack trace), and before each model call sets the system message to the plan
// (byte-identical until it is rendered again) with what others changed as human messages where they were told.
// Without the middleware (`model.bindTools(tools)` and `tool.invoke(call)`), a refused call throws.
import { HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { type StructuredToolInterface, tool } from '@langchain/core/tools';
import { type AgentMiddleware, createMiddleware } from 'langchain';
import {
  type AgentSession,
  type AgentSessionOptions,
  type AgentSource,
  createAgentSession,
} from './session.js';

export interface CairnLangChain {
  /** For `createAgent({ tools })` (or `model.bindTools(tools)`). */
  tools: StructuredToolInterface[];
  /** For `createAgent({ middleware: [middleware] })`: the plan in context, and calls run by the toolkit. */
  middleware: AgentMiddleware;
  session: AgentSession;
}

/** Cairn for LangChain, over a Plan (a toolkit is made with `options`), a Toolkit, or an HTTP toolkit. */
export function cairnLangChain(source: AgentSource, options: AgentSessionOptions = {}): CairnLangChain {
  const session = createAgentSession(source, options);
  const names = new Set(session.tools.map((t) => t.name));
  const tools = session.tools.map(
    (t) =>
      tool(
        async (input: unknown) => {
          const outcome = await session.run(t.name, input);
          if (!outcome.ok) throw new Error(outcome.text);
          return outcome.text;
        },
        { name: t.name, description: t.description, schema: t.parameters },
      ) as unknown as StructuredToolInterface,
  );
  const middleware = createMiddleware({
    name: 'CairnPlan',
    wrapModelCall: async (request, handler) => {
      const prepared = await session.prepare(request.messages, (delta) => new HumanMessage(delta));
      return handler({
        ...request,
        systemMessage: new SystemMessage(prepared.system),
        messages: prepared.messages,
      });
    },
    wrapToolCall: async (request, handler) => {
      const call = request.toolCall;
      if (!names.has(call.name)) return handler(request);
      const outcome = await session.run(call.name, call.args);
      return new ToolMessage({
        content: outcome.text,
        tool_call_id: call.id ?? '',
        name: call.name,
        status: outcome.ok ? 'success' : 'error',
      });
    },
  });
  return { tools, middleware: middleware as unknown as AgentMiddleware, session };
}
