// Each agent framework's own loop, driven by a scripted model the framework supports for testing, over one of
// Cairn's adapters; returns what the model was sent on each call, as the text of its tools, system prompt and
// messages in that order (the order providers cache a prompt's prefix in). Used by the adapter benchmark.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import type { AgentSessionOptions, Plan } from '@cairn/core';
import { cairnTools } from '@cairn/core/ai';
import { cairnAnthropic } from '@cairn/core/anthropic';
import { cairnLangChain } from '@cairn/core/langchain';
import { cairnMastra } from '@cairn/core/mastra';
import { cairnAgentTools } from '@cairn/core/openai-agents';
import { AIMessage, type BaseMessage, HumanMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { Agent as MastraAgent } from '@mastra/core/agent';
import { Agent, run, setTracingDisabled } from '@openai/agents';
import { assistantMessage, functionCall, modelResponder, ScriptedModel } from '@openai/agents/testing';
import { generateText, isStepCount } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { createAgent } from 'langchain';

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
        ? { content: [{ type: 'text', text: next }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] }
        : {
            content: [
              { type: 'tool-call', toolCallId: `c${sent.length}`, toolName: next.name, input: json(next.args) },
            ],
            finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
            usage,
            warnings: [],
          };
    },
  });
}

/** Runs `steps` model calls of one framework's loop over `plan`; returns what each call was sent. */
export async function runLoop(
  framework: Framework,
  plan: Plan,
  move: Move,
  steps: number,
  options: AgentSessionOptions,
): Promise<string[]> {
  const sent: string[] = [];
  const task = 'Work through the plan.';
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
        model: aiSdkModel(move, sent, () => null),
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
            const text = [json(request.tools), request.systemInstructions ?? '', ...input.map(json)].join('\n');
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
            : new AIMessage({ content: '', tool_calls: [{ name: next.name, args: next.args, id: `c${sent.length}` }] });
        });
      }
      const agent = createAgent({ model, tools: cairn.tools, middleware: [cairn.middleware] });
      await agent.invoke({ messages: [new HumanMessage(task)] }, { recursionLimit: 2 * steps + 2 });
      cairn.session.destroy();
      return sent;
    }
    case 'anthropic': {
      const cairn = cairnAnthropic(plan, options);
      const held = new Map<string, { system: string; tools: unknown; messages: unknown[] }>();
      const server = createServer(async (req, res) => {
        let body = '';
        for await (const chunk of req) body += chunk;
        const p = JSON.parse(body);
        const previous = p.thread?.type === 'continue' ? held.get(p.thread.previous_message_id) : undefined;
        const conversation = previous
          ? { ...previous, messages: [...previous.messages, ...p.messages] }
          : { system: p.system, tools: p.tools, messages: p.messages };
        const text = [json(conversation.tools), conversation.system, ...conversation.messages.map(json)].join('\n');
        sent.push(text);
        const next = move(sent.length - 1, text);
        const content =
          typeof next === 'string'
            ? [{ type: 'text', text: next }]
            : [{ type: 'tool_use', id: `toolu_${sent.length}`, name: next.name, input: next.args }];
        const id = `msg_${sent.length}`;
        held.set(id, { ...conversation, messages: [...conversation.messages, { role: 'assistant', content }] });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          json({
            id,
            type: 'message',
            role: 'assistant',
            model: p.model,
            content,
            stop_reason: typeof next === 'string' ? 'end_turn' : 'tool_use',
            stop_sequence: null,
            usage: { input_tokens: 1, output_tokens: 1 },
          }),
        );
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const client = new Anthropic({
          apiKey: 'bench',
          baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          maxRetries: 0,
        });
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
        server.close();
        cairn.session.destroy();
      }
      return sent;
    }
  }
}
