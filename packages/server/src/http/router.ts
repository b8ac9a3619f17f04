// A tiny HTTP router for the server's JSON API: method + path patterns with `:params`, errors answered as JSON
// CairnErrors with a status that matches their code. Routes register themselves (see routes.ts), so the plan
// API (tasks, context, tools) can drop in beside /healthz and /metrics.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { CairnError, type ErrorCode, toCairnError } from '@cairn/core';
import { requireJsonBody } from './origin.js';

export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  /** Decoded path parameters. */
  params: Record<string, string>;
}

export type Handler = (ctx: RequestContext) => void | Promise<void>;

interface Route {
  method: string;
  parts: string[];
  handler: Handler;
}

/** HTTP status for each error code, so clients can branch on either. */
export const STATUS_BY_CODE: Record<ErrorCode, number> = {
  invalid_argument: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  unknown_tool: 404,
  conflict: 409,
  cycle: 409,
  invalid_transition: 409,
  locked: 423,
  limit: 429,
  storage: 503,
  internal: 500,
};

export class Router {
  private readonly routes: Route[] = [];
  private fallbackHandler: Handler | null = null;

  /** `pattern` like `/api/plans/:plan/tasks/:taskId`; each `:name` matches one non-empty segment. */
  add(method: string, pattern: string, handler: Handler): this {
    this.routes.push({ method: method.toUpperCase(), parts: pattern.split('/').slice(1), handler });
    return this;
  }

  get(pattern: string, handler: Handler): this {
    return this.add('GET', pattern, handler);
  }

  /** Answers requests no route matches (the static SPA); without one they get a JSON 404. */
  fallback(handler: Handler): this {
    this.fallbackHandler = handler;
    return this;
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    try {
      const segments = url.pathname.split('/').slice(1);
      const allowed = new Set<string>();
      for (const route of this.routes) {
        const params = match(route.parts, segments);
        if (!params) continue;
        if (route.method === req.method || (route.method === 'GET' && req.method === 'HEAD')) {
          if (route.method !== 'GET') {
            const refusal = requireJsonBody(req);
            if (refusal) throw refusal;
          }
          await route.handler({ req, res, url, params });
          return;
        }
        allowed.add(route.method);
      }
      if (allowed.size > 0) {
        res.setHeader('allow', [...allowed].join(', '));
        throw new CairnError(
          'invalid_argument',
          `${req.method} is not allowed here; use ${[...allowed].join(' or ')}.`,
          {
            status: 405,
          },
        );
      }
      if (this.fallbackHandler) {
        await this.fallbackHandler({ req, res, url, params: {} });
        return;
      }
      throw notFound(url.pathname);
    } catch (error) {
      sendError(res, error);
    }
  }
}

export function notFound(path: string): CairnError {
  return new CairnError(
    'not_found',
    `Nothing at ${path}. Known endpoints: GET /healthz, GET /metrics, WS /sync/<planId>, and the plan API: ` +
      'GET /api/plans/<planId>/tasks, PATCH .../tasks/<taskId>, GET .../context, GET .../tools, ' +
      'POST .../tools/<name>, POST .../judge, GET .../traces, GET .../learned, POST .../distill, GET /api/scopes/<scope>/skills ' +
      '(docs/PROTOCOL.md, "HTTP API").',
    {
      path,
    },
  );
}

function match(parts: string[], segments: string[]): Record<string, string> | null {
  if (parts.length !== segments.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    const segment = segments[i]!;
    if (part.startsWith(':')) {
      if (segment === '') return null;
      try {
        params[part.slice(1)] = decodeURIComponent(segment);
      } catch {
        throw new CairnError(
          'invalid_argument',
          `The path segment "${segment}" is not valid percent-encoding (e.g. acme%3Aconv%3A7).`,
          { field: part.slice(1) },
        );
      }
    } else if (part !== segment) {
      return null;
    }
  }
  return params;
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** `{ error: { code, message, ...details } }` with the status of the code (or `details.status`). */
export function sendError(res: ServerResponse, caught: unknown): void {
  const error = toCairnError(caught);
  const status = typeof error.details.status === 'number' ? error.details.status : STATUS_BY_CODE[error.code];
  const { status: _status, ...details } = error.details;
  // A body left unread (too large, refused before reading) would be taken for the next request on a kept-alive
  // connection: close it after this answer instead.
  if (!res.headersSent && hasUnreadBody(res.req)) res.setHeader('connection', 'close');
  if (!res.headersSent && typeof details.retryAfter === 'number')
    res.setHeader('retry-after', `${details.retryAfter}`);
  sendJson(res, status, { error: { ...details, code: error.code, message: error.message } });
}

function hasUnreadBody(req: IncomingMessage | undefined): boolean {
  if (!req || req.readableEnded) return false;
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

export interface ReadJsonOptions {
  /** Largest body, in bytes (413 above). Default 1 MiB. */
  maxBytes?: number;
  /** Most objects and arrays in the body (413 above): the work a request may ask for. Default: no bound. */
  maxNodes?: number;
  /** An empty body is `undefined` (a tool without arguments) instead of a 400. */
  optional?: boolean;
}

/**
 * Reads a JSON body (see ReadJsonOptions; a number is `maxBytes`). Bad JSON or a key `__proto__` is a CairnError
 * `invalid_argument` (400), a body over a bound a CairnError `limit` (413).
 */
export async function readJson(
  req: IncomingMessage,
  options: ReadJsonOptions | number = {},
): Promise<unknown> {
  const {
    maxBytes = 1024 * 1024,
    maxNodes = Number.POSITIVE_INFINITY,
    optional = false,
  } = typeof options === 'number' ? { maxBytes: options } : options;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).byteLength;
    if (size > maxBytes) {
      throw new CairnError('limit', `The body is larger than ${maxBytes} bytes.`, { status: 413, maxBytes });
    }
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') {
    if (optional) return undefined;
    throw new CairnError('invalid_argument', 'The body is empty; send a JSON object.', { field: 'body' });
  }
  let protoKey = false;
  let nodes = 0;
  let value: unknown;
  try {
    value = JSON.parse(text, (key, v) => {
      if (key === '__proto__') protoKey = true;
      if (typeof v === 'object' && v !== null) nodes++;
      return v;
    });
  } catch (error) {
    throw new CairnError(
      'invalid_argument',
      `The body is not valid JSON (${(error as Error).message}); send a JSON object.`,
      { field: 'body' },
    );
  }
  // A JavaScript object cannot keep such a key: it would be accepted and then silently lost.
  if (protoKey) {
    throw new CairnError(
      'invalid_argument',
      'The body has a key "__proto__", which is never accepted; rename it.',
      {
        field: 'body',
      },
    );
  }
  if (nodes > maxNodes) {
    throw new CairnError(
      'limit',
      `The body has ${nodes} objects and arrays; at most ${maxNodes} are accepted in one request (split the call).`,
      { status: 413, maxNodes },
    );
  }
  return value;
}

/** The token of `Authorization: Bearer <token>`, or null. */
export function bearerToken(req: IncomingMessage): string | null {
  const header = req.headers.authorization;
  const found = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return found?.[1] ?? null;
}
