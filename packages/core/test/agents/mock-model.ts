// The AI SDK's mock model playing the scripted session, for the loops that take an AI SDK model (the AI SDK's own,
// and Mastra's): each call records what the model was shown and answers with the script's next move.
import { MockLanguageModelV4 } from 'ai/test';
import type { ScriptedSession, SeenCall } from './script.js';

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

type Prompt = Array<{ role: string; content: unknown }>;

/** One part of a message as text (tool outputs as their JSON). */
function partText(part: unknown): string {
  if (typeof part === 'string') return part;
  const p = part as Record<string, unknown>;
  return JSON.stringify(p['output'] ?? p['text'] ?? p);
}

/** A mock model playing `session`; `seen` holds each call's system text and the rest of its prompt. */
export function scriptedModel(session: ScriptedSession): { model: MockLanguageModelV4; seen: SeenCall[] } {
  const seen: SeenCall[] = [];
  const model = new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      const p = prompt as Prompt;
      // Mastra may send several system messages (its instructions, then the plan); the AI SDK sends one.
      const system = p
        .filter((m) => m.role === 'system')
        .map((m) => m.content as string)
        .join('\n');
      const rest = p
        .filter((m) => m.role !== 'system')
        .flatMap((m): unknown[] => (typeof m.content === 'string' ? [m.content] : (m.content as unknown[])))
        .map(partText)
        .join('\n');
      seen.push({ system, rest });
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
  return { model, seen };
}
