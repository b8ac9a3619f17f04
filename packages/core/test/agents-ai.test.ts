// The AI SDK's own loop (generateText with stopWhen) over Cairn's tools and prepareStep, driven by the SDK's
// mock model: see test/agents/script.ts for the session and its checks.
import { generateText, isStepCount } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { cairnTools } from '../src/agents/ai.js';
import { AGENT, FINAL_TEXT, type SeenCall, scriptedSession } from './agents/script.js';

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

type Prompt = Array<{ role: string; content: unknown }>;

/** The text of a prompt's parts other than the system message (tool outputs as their JSON). */
function restOf(prompt: Prompt): string {
  return prompt
    .filter((m) => m.role !== 'system')
    .flatMap((m): unknown[] => (typeof m.content === 'string' ? [m.content] : (m.content as unknown[])))
    .map((part) => {
      if (typeof part === 'string') return part;
      const p = part as Record<string, unknown>;
      return JSON.stringify(p['output'] ?? p['text'] ?? p);
    })
    .join('\n');
}

function lastToolResult(prompt: Prompt): string {
  const parts = prompt
    .filter((m) => m.role === 'tool')
    .flatMap((m) => m.content as Array<{ type: string; output: { value: unknown } }>);
  const last = parts.at(-1);
  return last ? JSON.stringify(last.output.value) : '';
}

describe('@cairn/core/ai', () => {
  it('runs the scripted session in generateText: tools, errors, the plan once and deltas after', async () => {
    const session = scriptedSession();
    const seen: SeenCall[] = [];
    const model = new MockLanguageModelV4({
      doGenerate: async ({ prompt }) => {
        const p = prompt as Prompt;
        const system = p.find((m) => m.role === 'system')?.content as string;
        seen.push({ system, rest: restOf(p) });
        const move = session.next(seen.length - 1, lastToolResult(p));
        const content =
          typeof move === 'string'
            ? [{ type: 'text' as const, text: move }]
            : [
                {
                  type: 'tool-call' as const,
                  toolCallId: `c${seen.length}`,
                  toolName: move.name,
                  input: JSON.stringify(move.args),
                },
              ];
        return {
          content,
          finishReason:
            typeof move === 'string'
              ? { unified: 'stop' as const, raw: 'stop' }
              : { unified: 'tool-calls' as const, raw: 'tool_calls' },
          usage,
          warnings: [],
        };
      },
    });
    const cairn = cairnTools(session.plan, { actor: AGENT });
    const result = await generateText({
      model,
      prompt: 'Plan the blog post and start on it.',
      tools: cairn.tools,
      prepareStep: cairn.prepareStep,
      stopWhen: isStepCount(10),
    });
    expect(result.text).toBe(FINAL_TEXT);
    session.check(seen);
    // A refused call is the SDK's tool error: the model read it as error text.
    const errorPart = result.steps[1]!.content.find((part) => part.type === 'tool-error');
    expect(errorPart).toBeDefined();
    cairn.session.destroy();
  });
});
