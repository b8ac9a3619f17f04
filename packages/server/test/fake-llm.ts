// A stand-in for an OpenAI-compatible chat-completions endpoint, speaking its real protocol: answers carry `id`,
// `object`, `created`, `model`, `choices[].finish_reason` (`tool_calls` when the message calls tools) and `usage`;
// errors are 429 (with Retry-After) and 500 with OpenAI's error body. No Cairn client asks for streaming (the model
// proxy forces `stream: false`), so it is not spoken here.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onCleanup } from './helpers.js';

export interface ChatCall {
  url: string;
  headers: IncomingMessage['headers'];
  body: {
    model: string;
    messages: Array<{ role: string; content: string }>;
    stream?: boolean;
    [key: string]: unknown;
  };
}

/** What the endpoint answers: a message (text and/or tool calls), a named error, or raw bytes. */
export type LlmReply =
  | { content: string | null; toolCalls?: Array<{ name: string; arguments: unknown }> }
  | { error: 429 | 500 }
  | { status: number; body: string };

export interface FakeLlm {
  /** Base URL, ending in `/v1`. */
  url: string;
  calls: ChatCall[];
  reply: (call: ChatCall) => LlmReply;
}

let served = 0;

/**
 * Starts one on a free port, closed after the test (or through `cleanup`, e.g. after a whole file); set `reply` to
 * script it.
 */
export async function startFakeLlm(
  reply: FakeLlm['reply'] = () => ({ content: 'ok' }),
  cleanup: (close: () => Promise<void>) => void = onCleanup,
): Promise<FakeLlm> {
  const fake: FakeLlm = { url: '', calls: [], reply };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const call: ChatCall = {
      url: req.url ?? '',
      headers: req.headers,
      body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
    };
    fake.calls.push(call);
    const answer = fake.reply(call);
    if ('status' in answer) {
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(answer.body);
      return;
    }
    if ('error' in answer) {
      const rateLimited = answer.error === 429;
      res.writeHead(answer.error, {
        'content-type': 'application/json',
        ...(rateLimited ? { 'retry-after': '7' } : {}),
      });
      res.end(
        JSON.stringify({
          error: rateLimited
            ? {
                message: 'Rate limit reached for requests',
                type: 'requests',
                param: null,
                code: 'rate_limit_exceeded',
              }
            : {
                message: 'The server had an error while processing your request.',
                type: 'server_error',
                param: null,
                code: null,
              },
        }),
      );
      return;
    }
    served++;
    const toolCalls = answer.toolCalls?.map((t, i) => ({
      id: `call_${served}_${i}`,
      type: 'function',
      function: { name: t.name, arguments: JSON.stringify(t.arguments) },
    }));
    const promptTokens = JSON.stringify(call.body.messages).length >> 2;
    const completionTokens = ((answer.content ?? '').length + JSON.stringify(toolCalls ?? []).length) >> 2;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: `chatcmpl-${served}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: call.body.model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: answer.content,
              refusal: null,
              ...(toolCalls?.length ? { tool_calls: toolCalls } : {}),
            },
            logprobs: null,
            finish_reason: toolCalls?.length ? 'tool_calls' : 'stop',
          },
        ],
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: completionTokens,
          total_tokens: promptTokens + completionTokens,
        },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup(() => new Promise<void>((resolve) => server.close(() => resolve())));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return fake;
}
