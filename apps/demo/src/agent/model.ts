// What the in-page agent asks of a model: OpenAI chat-completions messages and tool definitions in, text and tool
// calls out. The built-in offline planner and any OpenAI-compatible endpoint both meet it.
import type { OpenAIToolDefinition } from '@cairn/core/protocol';

export interface ModelToolCall {
  id: string;
  name: string;
  /** JSON text. */
  arguments: string;
}

export type ModelMessage =
  | { role: 'system' | 'user'; content: string }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
    }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface ModelRequest {
  messages: ModelMessage[];
  tools: OpenAIToolDefinition[];
  signal?: AbortSignal;
}

export interface ModelReply {
  text: string;
  toolCalls: ModelToolCall[];
}

export interface Model {
  /** What the UI calls it, honestly (the offline planner says it is rule-based). */
  readonly label: string;
  complete(request: ModelRequest): Promise<ModelReply>;
}

export interface OpenAIModelOptions {
  /** e.g. `https://api.openai.com/v1`, `http://localhost:11434/v1`, or the server's proxy `/api/model`. */
  baseUrl: string;
  model: string;
  /** Sent as a bearer token; leave empty for the server's proxy (it adds its own) or a local endpoint. */
  apiKey?: string;
  label?: string;
  /** Extra headers (the server proxy may want the plan id to authorize the call). */
  headers?: Record<string, string>;
}

/** Any OpenAI-compatible chat-completions endpoint. */
export function createOpenAIModel(options: OpenAIModelOptions): Model {
  const url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  return {
    label: options.label ?? `${options.model} at ${options.baseUrl}`,
    async complete({ messages, tools, signal }) {
      let response: Response;
      try {
        response = await fetch(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
            ...options.headers,
          },
          body: JSON.stringify({
            model: options.model,
            messages,
            ...(tools.length > 0 ? { tools, tool_choice: 'auto' } : {}),
          }),
          ...(signal ? { signal } : {}),
        });
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        throw unreachable(url, error);
      }
      const text = await response.text();
      if (!response.ok) throw new Error(`${response.status} ${response.statusText}: ${text.slice(0, 300)}`);
      let json: { choices?: Array<{ message?: { content?: string | null; tool_calls?: unknown[] } }> };
      try {
        json = JSON.parse(text);
      } catch {
        throw new Error(`the endpoint answered with something that is not JSON: ${text.slice(0, 200)}`);
      }
      const message = json.choices?.[0]?.message;
      if (!message) throw new Error('the answer has no choices[0].message');
      const calls = (message.tool_calls ?? []) as Array<{
        id?: string;
        function?: { name?: string; arguments?: string };
      }>;
      return {
        text: typeof message.content === 'string' ? message.content : '',
        toolCalls: calls.map((call, i) => ({
          id: call.id || `call_${i + 1}`,
          name: call.function?.name ?? '',
          arguments: call.function?.arguments || '{}',
        })),
      };
    },
  };
}

/**
 * A fetch that failed before any answer: the browser says only "Failed to fetch" (or "NetworkError…"), on
 * purpose the same for a refused connection, a bad address and a cross-origin answer without CORS headers.
 */
function unreachable(url: string, error: unknown): Error {
  const said = error instanceof Error ? error.message : String(error);
  const here = typeof location === 'undefined' ? null : location.origin;
  const target = new URL(url, here ?? undefined);
  const crossOrigin = here !== null && target.origin !== here;
  return new Error(
    `no answer from ${url} (the browser said "${said}"). ` +
      (crossOrigin
        ? `Either the endpoint is down or unreachable from this browser, or it does not allow calls from this page: a browser only lets a page read another site's answer when that site sends CORS headers (Access-Control-Allow-Origin for ${here}). Check the base URL in Settings, allow this origin at the endpoint, or use the server's model.`
        : 'The endpoint is down or unreachable from this browser; check the base URL in Settings.'),
  );
}
