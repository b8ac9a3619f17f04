// Mastra's own Agent over Cairn's tools, instructions and prepareStep, driven by the AI SDK's mock model (which
// Mastra takes as a model): see test/agents/script.ts for the session and its checks.
import { Agent } from '@mastra/core/agent';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { cairnMastra } from '../src/agents/mastra.js';
import { AGENT, FINAL_TEXT, type SeenCall, scriptedSession } from './agents/script.js';

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

type Prompt = Array<{ role: string; content: unknown }>;

function partText(part: unknown): string {
  if (typeof part === 'string') return part;
  const p = part as Record<string, unknown>;
  return JSON.stringify(p['output'] ?? p['text'] ?? p);
}

describe('@cairn/core/mastra', () => {
  it('runs the scripted session in Agent.generate: tools, errors, the plan once and deltas after', async () => {
    const session = scriptedSession();
    const seen: SeenCall[] = [];
    const model = new MockLanguageModelV4({
      doGenerate: async ({ prompt }) => {
        const p = prompt as Prompt;
        const systems = p.filter((m) => m.role === 'system').map((m) => m.content as string);
        const rest = p
          .filter((m) => m.role !== 'system')
          .flatMap((m): unknown[] => (typeof m.content === 'string' ? [m.content] : (m.content as unknown[])))
          .map(partText)
          .join('\n');
        seen.push({ system: systems.join('\n'), rest });
        const results = p
          .filter((m) => m.role === 'tool')
          .flatMap((m) => m.content as Array<{ output: { value: unknown } }>);
        const last = results.at(-1);
        const move = session.next(seen.length - 1, last ? JSON.stringify(last.output.value) : '');
        return {
          content:
            typeof move === 'string'
              ? [{ type: 'text' as const, text: move }]
              : [
                  {
                    type: 'tool-call' as const,
                    toolCallId: `c${seen.length}`,
                    toolName: move.name,
                    input: JSON.stringify(move.args),
                  },
                ],
          finishReason:
            typeof move === 'string'
              ? { unified: 'stop' as const, raw: 'stop' }
              : { unified: 'tool-calls' as const, raw: 'tool_calls' },
          usage,
          warnings: [],
        };
      },
    });
    const cairn = cairnMastra(session.plan, { actor: AGENT });
    const agent = new Agent({
      id: 'planner',
      name: 'planner',
      instructions: cairn.instructions,
      // The AI SDK's mock, which Mastra runs; its types come from Mastra's own copy of the provider interface.
      model: model as never,
      tools: cairn.tools,
    });
    const result = await agent.generate('Plan the blog post and start on it.', { maxSteps: 10 });
    expect(result.text).toBe(FINAL_TEXT);
    // Mastra checks a JSON Schema before the tool runs, and tells the model in its own words.
    session.check(seen, /Tool input validation failed for add_tasks/);
    cairn.session.destroy();
  });
});
