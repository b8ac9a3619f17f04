// Calls to an OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp, ...): the request
// every caller sends (the model proxy, the agents runner), and one JSON answer, shared by the auto-close judge
// and the skill distiller, which are configured by the same CAIRN_JUDGE_* settings.
import { CairnError } from '@cairn/core';

export interface ChatCompletionsEndpoint {
  /** The endpoint's base URL, e.g. `https://api.openai.com/v1` (`/chat/completions` is appended). */
  baseUrl: string;
  model: string;
  apiKey?: string | null;
  /** Ask for `response_format: { type: 'json_object' }`. Default true; turn off for endpoints that refuse it. */
  jsonMode?: boolean;
  fetch?: typeof fetch;
}

/**
 * POSTs a chat-completions request: to the base URL with `/chat/completions` appended (unless it ends so already),
 * the key as a bearer token.
 */
export function postChatCompletions(
  endpoint: { baseUrl: string; apiKey?: string | null; fetch?: typeof fetch },
  body: object,
  signal: AbortSignal,
): Promise<Response> {
  const base = endpoint.baseUrl.replace(/\/+$/, '');
  return (endpoint.fetch ?? fetch)(base.endsWith('/chat/completions') ? base : `${base}/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(endpoint.apiKey ? { authorization: `Bearer ${endpoint.apiKey}` } : {}),
    },
    body: JSON.stringify(body),
    signal,
  });
}

/**
 * Asks for one answer at temperature 0 and reads the JSON object in it. Rejects on a non-2xx status, an answer
 * that is not chat-completions JSON, or content without a JSON object (CairnError `invalid_argument` naming
 * `shape`).
 */
export async function askForJson(
  endpoint: ChatCompletionsEndpoint,
  messages: Array<{ role: 'system' | 'user'; content: string }>,
  shape: string,
  signal: AbortSignal,
): Promise<unknown> {
  const body = {
    model: endpoint.model,
    temperature: 0,
    stream: false,
    ...((endpoint.jsonMode ?? true) ? { response_format: { type: 'json_object' } } : {}),
    messages,
  };
  const response = await postChatCompletions(endpoint, body, signal);
  const text = await response.text();
  if (!response.ok) throw new Error(`the endpoint answered ${response.status}: ${clip(text, 300)}`);
  let content: unknown;
  try {
    content = (JSON.parse(text) as { choices?: Array<{ message?: { content?: unknown } }> }).choices?.[0]
      ?.message?.content;
  } catch {
    throw new Error(`the endpoint's answer is not JSON: ${clip(text, 300)}`);
  }
  if (typeof content !== 'string') throw new Error('the answer has no choices[0].message.content text');
  return parseContent(content, shape);
}

/** The JSON object in a model's text: as is, inside a code fence, or between the first { and the last }. */
function parseContent(content: string, shape: string): unknown {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(content)?.[1];
  const candidates = [
    content.trim(),
    fenced?.trim(),
    content.slice(content.indexOf('{'), content.lastIndexOf('}') + 1),
  ];
  for (const candidate of candidates) {
    if (!candidate) continue;
    try {
      return JSON.parse(candidate);
    } catch {
      // try the next reading
    }
  }
  throw new CairnError('invalid_argument', `The model's answer is not JSON: ${clip(content, 300)}`, {
    valid: shape,
  });
}

/**
 * The endpoint of the environment: CAIRN_JUDGE_URL (base URL) and CAIRN_JUDGE_MODEL, optionally CAIRN_JUDGE_KEY.
 * Null when neither is set; a CairnError when only one is, or the URL is not one.
 */
export function endpointFromEnv(env: Record<string, string | undefined>): ChatCompletionsEndpoint | null {
  const baseUrl = env.CAIRN_JUDGE_URL?.trim() || null;
  const model = env.CAIRN_JUDGE_MODEL?.trim() || null;
  if (!baseUrl && !model) return null;
  if (!baseUrl || !model) {
    throw new CairnError(
      'invalid_argument',
      'Auto-close needs both CAIRN_JUDGE_URL (an OpenAI-compatible base URL, e.g. https://api.openai.com/v1) ' +
        `and CAIRN_JUDGE_MODEL; only ${baseUrl ? 'CAIRN_JUDGE_URL' : 'CAIRN_JUDGE_MODEL'} is set.`,
      { field: baseUrl ? 'CAIRN_JUDGE_MODEL' : 'CAIRN_JUDGE_URL' },
    );
  }
  try {
    new URL(baseUrl);
  } catch {
    throw new CairnError('invalid_argument', `CAIRN_JUDGE_URL "${baseUrl}" is not a URL.`, {
      field: 'CAIRN_JUDGE_URL',
    });
  }
  return { baseUrl, model, apiKey: env.CAIRN_JUDGE_KEY?.trim() || null };
}

export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
