// A model for browsers that have none: GET /api/model says whether the server has one configured (and which),
// POST /api/model/chat/completions forwards an OpenAI-compatible request to it with the server's key, so the
// key never reaches a browser. Configured from the same environment as the agents runner (llmFromEnv):
// CAIRN_LLM_BASE_URL, CAIRN_LLM_API_KEY, CAIRN_LLM_MODEL (or OPENAI_BASE_URL / OPENAI_API_KEY).
import { CairnError } from '@cairn/core';
import type { Handler, Hono } from 'hono';
import { llmFromEnv } from './agents/llm.js';
import { postChatCompletions } from './chat-completions.js';
import { jsonResponse, readJson, textResponse } from './http/app.js';

export interface ModelProxyOptions {
  /** The upstream's base URL, e.g. `https://api.openai.com/v1` (`/chat/completions` is appended). */
  baseUrl?: string | null;
  /** The model every request uses (a browser's choice is replaced, so the server decides what it pays for). */
  model?: string | null;
  apiKey?: string | null;
  /** Shown in the demo's model picker. Default: the model name. */
  label?: string | null;
  /** Refuses a request (throws a CairnError) before it is forwarded, e.g. without a valid token. */
  authorize?: (request: Request) => Promise<void> | void;
  /** Largest request body forwarded. Default 512 KiB. */
  maxBodyBytes?: number;
  /** Upstream deadline. Default 60 s. */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/** The server's model as the agents runner reads it from the environment; CAIRN_LLM_LABEL names it in the UI. */
export function modelProxyFromEnv(env: Record<string, string | undefined>): ModelProxyOptions {
  const llm = llmFromEnv(env);
  return {
    baseUrl: llm?.baseUrl ?? null,
    model: llm?.model ?? null,
    apiKey: llm?.apiKey ?? null,
    label: env.CAIRN_LLM_LABEL?.trim() || null,
  };
}

/** The GET handler: `{ available, model?, label? }`; never the key or the upstream URL. */
export function modelConfigHandler(options: ModelProxyOptions): Handler {
  return () => {
    const available = Boolean(options.baseUrl && options.model);
    return jsonResponse(
      available ? { available, model: options.model, label: options.label ?? options.model } : { available },
    );
  };
}

/** The POST handler: the body is an OpenAI chat-completions request; the answer is the upstream's, as is. */
export function modelProxyHandler(options: ModelProxyOptions): Handler {
  return async (c) => {
    if (!options.baseUrl || !options.model) {
      throw new CairnError(
        'not_found',
        'This server has no model configured: set CAIRN_LLM_BASE_URL and CAIRN_LLM_MODEL (and CAIRN_LLM_API_KEY), or OPENAI_API_KEY.',
      );
    }
    await options.authorize?.(c.req.raw);
    const body = await readJson(c.req.raw, options.maxBodyBytes ?? 512 * 1024);
    if (
      typeof body !== 'object' ||
      body === null ||
      Array.isArray(body) ||
      !Array.isArray((body as { messages?: unknown }).messages)
    ) {
      throw new CairnError(
        'invalid_argument',
        'The body must be a chat-completions request: { messages: [...], tools?: [...] }.',
        {
          field: 'messages',
        },
      );
    }
    // No streaming through the proxy (the demo does not ask for it), and the server's model, whatever was asked.
    const forwarded = { ...(body as Record<string, unknown>), model: options.model, stream: false };
    let upstream: Response;
    try {
      upstream = await postChatCompletions(
        { ...options, baseUrl: options.baseUrl },
        forwarded,
        AbortSignal.timeout(options.timeoutMs ?? 60_000),
      );
    } catch (error) {
      throw new CairnError(
        'internal',
        `The model endpoint could not be reached: ${(error as Error).message}`,
        {
          status: 502,
        },
      );
    }
    const text = await upstream.text();
    const retryAfter = upstream.headers.get('retry-after');
    return textResponse(text, upstream.status, {
      'content-type': upstream.headers.get('content-type') ?? 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      // A rate-limited upstream says when to come back; the caller should hear it.
      ...(retryAfter ? { 'retry-after': retryAfter } : {}),
    });
  };
}

/**
 * The proxy spends the server's key: with auth on (`open` false), a call needs the header `x-cairn-plan` and a
 * token `authorizeWriter` accepts as a writer of that plan. Every host authorizes model calls with this rule.
 */
export function writersOnly(
  open: boolean,
  authorizeWriter: (request: Request, planId: string) => Promise<unknown>,
): (request: Request) => Promise<void> {
  return async (request) => {
    if (open) return;
    const plan = request.headers.get('x-cairn-plan');
    if (!plan) {
      throw new CairnError(
        'unauthorized',
        'A model call needs the headers x-cairn-plan: <planId> and Authorization: Bearer <write token>.',
      );
    }
    await authorizeWriter(request, plan);
  };
}

/** Mounts both endpoints: `registerModelRoutes(server.app, modelProxyFromEnv(process.env))`. */
export function registerModelRoutes(app: Hono, options: ModelProxyOptions): void {
  app.get('/api/model', modelConfigHandler(options));
  app.post('/api/model/chat/completions', modelProxyHandler(options));
}
