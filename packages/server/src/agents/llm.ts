// A real model for the agents runner, through any OpenAI-compatible chat completions endpoint: it splits the goal
// by calling the toolkit's own add_tasks tool, and writes a short result for each step it works on.
import { CairnError, createToolkit, isToolError, type Plan } from '@cairn/core';
import { inline } from '@cairn/core/protocol';
import { postChatCompletions } from '../chat-completions.js';

export interface LlmOptions {
  /** e.g. `https://api.openai.com/v1` or a local server's `/v1`. */
  baseUrl: string;
  apiKey?: string | null;
  model: string;
  /** Per request. Default 60 s. */
  timeoutMs?: number;
}

/**
 * The model configured in the environment: `CAIRN_LLM_BASE_URL` (or `OPENAI_BASE_URL`, or the OpenAI API when only
 * a key is set), `CAIRN_LLM_API_KEY` (or `OPENAI_API_KEY`), `CAIRN_LLM_MODEL` (default `gpt-4o-mini`). Null when
 * none is configured: the agents simulate their work.
 */
export function llmFromEnv(env: Record<string, string | undefined>): LlmOptions | null {
  const apiKey = env.CAIRN_LLM_API_KEY ?? env.OPENAI_API_KEY ?? null;
  const baseUrl =
    env.CAIRN_LLM_BASE_URL ?? env.OPENAI_BASE_URL ?? (apiKey ? 'https://api.openai.com/v1' : null);
  if (!baseUrl) return null;
  return { baseUrl, apiKey, model: env.CAIRN_LLM_MODEL ?? 'gpt-4o-mini' };
}

interface ChatMessage {
  content?: string | null;
  tool_calls?: Array<{ function: { name: string; arguments: string } }>;
}

async function chat(llm: LlmOptions, body: Record<string, unknown>): Promise<ChatMessage> {
  const response = await postChatCompletions(
    llm,
    { model: llm.model, ...body },
    AbortSignal.timeout(llm.timeoutMs ?? 60_000),
  );
  if (!response.ok) {
    throw new CairnError(
      'internal',
      `The model endpoint answered ${response.status}: ${await response.text()}`,
    );
  }
  const json = (await response.json()) as { choices?: Array<{ message?: ChatMessage }> };
  const message = json.choices?.[0]?.message;
  if (!message) throw new CairnError('internal', 'The model endpoint sent no message.');
  return message;
}

/**
 * Asks the model to add the plan for `goal` (about `count` tasks) with the add_tasks tool; the toolkit runs the
 * call, so a bad plan is refused like any model's. Returns how many top-level tasks were added.
 */
export async function planWithModel(
  llm: LlmOptions,
  plan: Plan,
  goal: string,
  count: number,
): Promise<number> {
  const toolkit = createToolkit(plan);
  try {
    const tool = toolkit.definitions('openai').find((d) => d.function.name === 'add_tasks')!;
    const message = await chat(llm, {
      messages: [
        {
          role: 'system',
          content:
            `Split the user's goal into about ${count} top-level tasks that several agents can work on in ` +
            'parallel. Give each task a `key`, two or three short `steps`, and `blockedBy` naming the keys of ' +
            'the tasks it needs first (no cycles). Call add_tasks once with the whole plan.',
        },
        { role: 'user', content: goal },
      ],
      tools: [tool],
      tool_choice: { type: 'function', function: { name: 'add_tasks' } },
    });
    const call = message.tool_calls?.find((c) => c.function.name === 'add_tasks');
    if (!call) throw new CairnError('internal', 'The model did not call add_tasks.');
    const result = await toolkit.dispatch('add_tasks', call.function.arguments);
    if (isToolError(result)) throw new CairnError(result.error.code, `add_tasks: ${result.error.message}`);
    return (result as { added: unknown[] }).added.length;
  } finally {
    toolkit.destroy();
  }
}

/** One or two sentences of result for a step, from the model. */
export async function workWithModel(
  llm: LlmOptions,
  actor: string,
  task: string,
  step: string,
  /** "Since your last call: …" (what the others did meanwhile), or '' when nothing. */
  news = '',
): Promise<string> {
  const message = await chat(llm, {
    messages: [
      {
        role: 'system',
        content: `You are ${actor}, one of several agents sharing a plan. Answer in at most two sentences.`,
      },
      {
        role: 'user',
        // Titles are a writer's text: each on its line, so a title cannot add a "Step:" or an instruction of its own.
        content: `Task: ${inline(task)}\nStep: ${inline(step)}\nWhat did you do, and what came out of it?${news ? `\n\n${news}` : ''}`,
      },
    ],
  });
  return (message.content ?? '').trim().slice(0, 2000);
}
