// Each agent framework's own loop, driven by a scripted model the framework supports for testing, over one of
// Cairn's adapters; returns what the model was sent on each call, as the text of its tools, system prompt and
// messages in that order (the order providers cache a prompt's prefix in). Used by the adapter benchmark.
import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { type AgentSessionOptions, createAgentSession, type Plan, renderPlan } from '@cairn/core';
import { cairnTools } from '@cairn/core/ai';
import { cairnAnthropic } from '@cairn/core/anthropic';
import { cairnLangChain } from '@cairn/core/langchain';
import { cairnMastra } from '@cairn/core/mastra';
import { cairnAgentTools } from '@cairn/core/openai-agents';
import { DEFAULT_INSTRUCTIONS } from '@cairn/core/protocol';
import { AIMessage, type BaseMessage, HumanMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { Agent as MastraAgent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { Agent, run, setTracingDisabled } from '@openai/agents';
import { assistantMessage, functionCall, modelResponder, ScriptedModel } from '@openai/agents/testing';
import { generateText, isStepCount } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { createAgent } from 'langchain';
import { fakeMessagesApi } from '../../packages/core/test/agents/messages-api.js';

setTracingDisabled(true);

export const FRAMEWORKS = ['ai', 'openai-agents', 'langchain', 'mastra', 'anthropic'] as const;
export type Framework = (typeof FRAMEWORKS)[number];

/** The model's move on call `step`, given the text of everything it was sent: a tool call or its answer. */
export type Move = (step: number, sent: string) => { name: string; args: Record<string, unknown> } | string;

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

const json = (value: unknown) => JSON.stringify(value);

function aiSdkModel(move: Move, sent: string[], tools: () => unknown) {
  return new MockLanguageModelV4({
    doGenerate: async ({ prompt, tools: offered }) => {
      const text = [json(offered ?? tools()), ...prompt.map((m) => json(m.content))].join('\n');
      sent.push(text);
      const next = move(sent.length - 1, text);
      return typeof next === 'string'
        ? {
            content: [{ type: 'text', text: next }],
            finishReason: { unified: 'stop', raw: 'stop' },
            usage,
            warnings: [],
          }
        : {
            content: [
              {
                type: 'tool-call',
                toolCallId: `c${sent.length}`,
                toolName: next.name,
                input: json(next.args),
              },
            ],
            finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
            usage,
            warnings: [],
          };
    },
  });
}

/** The whole plan as a loop without Cairn's context feed puts it in the system prompt on every call. */
const rendered = (plan: Plan) => `${DEFAULT_INSTRUCTIONS}\n\n${renderPlan(plan, { format: 'native' })}`;

/**
 * Runs `steps` model calls of one framework's loop over `plan`; returns what each call was sent. `reRender`: the
 * baseline, the plan rendered whole into the system prompt on every call it changed (the adapter with
 * reRenderShare 0 where the system prompt can change between calls; for Mastra and the Anthropic runner, whose
 * adapters tell changes with tool results, the loop a developer writes without Cairn's context: tools run by the
 * toolkit, the system prompt rendered again before each call).
 */
export async function runLoop(
  framework: Framework,
  plan: Plan,
  move: Move,
  steps: number,
  reRender: boolean,
): Promise<string[]> {
  const sent: string[] = [];
  const task = 'Work through the plan.';
  const options: AgentSessionOptions = reRender ? { reRenderShare: 0 } : {};
  if (reRender && framework === 'mastra') return mastraReRendered(plan, move, steps, sent);
  if (reRender && framework === 'anthropic') return anthropicReRendered(plan, move, steps, sent);
  switch (framework) {
    case 'ai': {
      const cairn = cairnTools(plan, options);
      await generateText({
        model: aiSdkModel(move, sent, () => cairn.tools),
        prompt: task,
        tools: cairn.tools,
        prepareStep: cairn.prepareStep,
        stopWhen: isStepCount(steps),
      });
      cairn.session.destroy();
      return sent;
    }
    case 'mastra': {
      const cairn = cairnMastra(plan, options);
      const agent = new MastraAgent({
        id: 'bench',
        name: 'bench',
        instructions: cairn.instructions,
        model: aiSdkModel(move, sent, () => null) as never, // Mastra types its own copy of the model interface
        tools: cairn.tools,
      });
      await agent.generate(task, { maxSteps: steps });
      cairn.session.destroy();
      return sent;
    }
    case 'openai-agents': {
      const cairn = cairnAgentTools(plan, options);
      const model = new ScriptedModel(
        Array.from({ length: steps }, () =>
          modelResponder(({ request }) => {
            const input = Array.isArray(request.input) ? request.input : [request.input];
            const text = [json(request.tools), request.systemInstructions ?? '', ...input.map(json)].join(
              '\n',
            );
            sent.push(text);
            const next = move(sent.length - 1, text);
            return typeof next === 'string'
              ? [assistantMessage(next)]
              : [functionCall(next.name, next.args, { callId: `c${sent.length}` })];
          }),
        ),
      );
      const agent = new Agent({ name: 'bench', model, tools: cairn.tools, instructions: cairn.instructions });
      await run(agent, task, { maxTurns: steps, callModelInputFilter: cairn.callModelInputFilter });
      cairn.session.destroy();
      return sent;
    }
    case 'langchain': {
      const cairn = cairnLangChain(plan, options);
      // The fake model keeps bound tools to itself; what is sent is the toolkit's own schemas.
      const toolsText = json(cairn.session.tools.map((t) => [t.name, t.description, t.parameters]));
      let model = fakeModel();
      for (let i = 0; i < steps; i++) {
        model = model.respond((messages: BaseMessage[]) => {
          const text = [toolsText, ...messages.map((m) => json(m.content))].join('\n');
          sent.push(text);
          const next = move(sent.length - 1, text);
          return typeof next === 'string'
            ? new AIMessage(next)
            : new AIMessage({
                content: '',
                tool_calls: [{ name: next.name, args: next.args, id: `c${sent.length}` }],
              });
        });
      }
      const agent = createAgent({ model, tools: cairn.tools, middleware: [cairn.middleware] });
      await agent.invoke({ messages: [new HumanMessage(task)] }, { recursionLimit: 2 * steps + 2 });
      cairn.session.destroy();
      return sent;
    }
    case 'anthropic': {
      const cairn = cairnAnthropic(plan, options);
      const { url, close } = await messagesApi(move, sent);
      try {
        const client = new Anthropic({ apiKey: 'bench', baseURL: url, maxRetries: 0 });
        await client.beta.messages
          .toolRunner({
            model: 'bench',
            max_tokens: 1024,
            max_iterations: steps,
            system: await cairn.system(),
            messages: [{ role: 'user', content: task }],
            tools: cairn.tools,
          })
          .runUntilDone();
      } finally {
        close();
        cairn.session.destroy();
      }
      return sent;
    }
  }
}

async function mastraReRendered(plan: Plan, move: Move, steps: number, sent: string[]): Promise<string[]> {
  const session = createAgentSession(plan);
  const tools = Object.fromEntries(
    session.tools.map((t) => [
      t.name,
      createTool({
        id: t.name,
        description: t.description,
        // biome-ignore lint/suspicious/noExplicitAny: a JSON Schema
        inputSchema: t.parameters as any,
        execute: async (input: unknown) => (await session.run(t.name, input)).result,
      }),
    ]),
  );
  const agent = new MastraAgent({
    id: 'bench',
    name: 'bench',
    instructions: rendered(plan),
    model: aiSdkModel(move, sent, () => null) as never, // Mastra types its own copy of the model interface
    tools,
  });
  await agent.generate('Work through the plan.', {
    maxSteps: steps,
    prepareStep: async () => ({ systemMessages: [{ role: 'system', content: rendered(plan) }] }),
  });
  session.destroy();
  return sent;
}

async function anthropicReRendered(plan: Plan, move: Move, steps: number, sent: string[]): Promise<string[]> {
  const session = createAgentSession(plan);
  const tools = session.tools.map((t) =>
    betaTool({
      name: t.name,
      description: t.description,
      inputSchema: t.parameters as Parameters<typeof betaTool>[0]['inputSchema'],
      run: async (input: unknown) => (await session.run(t.name, input)).text,
    }),
  );
  const { url, close } = await messagesApi(move, sent);
  try {
    const client = new Anthropic({ apiKey: 'bench', baseURL: url, maxRetries: 0 });
    // The tool runner without a thread, its system prompt set anew before each call (the SDK's documented way).
    const runner = client.beta.messages.toolRunner({
      model: 'bench',
      max_tokens: 1024,
      max_iterations: steps,
      system: rendered(plan),
      messages: [{ role: 'user', content: 'Work through the plan.' }],
      tools,
      thread: false,
    });
    for await (const message of runner) {
      if (message.stop_reason !== 'tool_use') continue;
      const results = await runner.generateToolResponse();
      runner.setMessagesParams((p) => ({
        ...p,
        system: rendered(plan),
        messages: [
          ...p.messages,
          { role: 'assistant', content: message.content },
          ...(results ? [results] : []),
        ],
      }));
    }
  } finally {
    close();
    session.destroy();
  }
  return sent;
}

/** A Messages API on a free port answering with the script's moves, each shown the whole thread as text. */
function messagesApi(move: Move, sent: string[]): Promise<{ url: string; close: () => void }> {
  return fakeMessagesApi((conversation) => {
    const text = [json(conversation.tools), conversation.system, ...conversation.messages.map(json)].join(
      '\n',
    );
    sent.push(text);
    return move(sent.length - 1, text);
  });
}
