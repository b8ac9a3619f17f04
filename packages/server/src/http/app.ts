// The server's HTTP API as a Hono app over Web-standard Request/Response, with what every route shares: errors as
// JSON CairnErrors with the status of their code, 405 with `Allow` when only the method is wrong, 400 for a path
// parameter that is not valid percent-encoding, 415 for a write that is not JSON, the JSON 404 listing the
// endpoints, and the bounded JSON body reader. Nothing here needs Node (node-listener.ts mounts it there).
import { CairnError, type ErrorCode } from '@cairn/core';
import { toCairnError } from '@cairn/core/protocol';
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import type { RouterRoute } from 'hono/types';
import { requireJsonBody } from './origin.js';

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
  two_yjs_copies: 500, // the server's own installation is broken, not the request
  internal: 500,
};

export interface HttpAppOptions {
  /** Answers a request whose path no route has (the static app); without one it gets the JSON 404. */
  fallback?: (c: Context) => Response | Promise<Response>;
}

/**
 * A Hono app with the contract above. Routes are added with Hono's own methods (`app.get(path, (c) => ...)`),
 * before the app answers its first request; a handler throws a CairnError to refuse.
 */
export function createHttpApp(options: HttpAppOptions = {}): Hono {
  const app = new Hono();
  app.use('*', routeContract);
  app.notFound(async (c) => {
    const others = routesOfPath(app, c.req.path);
    if (others.length > 0) {
      checkParams(others[0]!.path, pathnameOf(c));
      const allowed = [...new Set(others.map((route) => route.method))];
      return errorResponse(
        new CairnError(
          'invalid_argument',
          `${c.req.method} is not allowed here; use ${allowed.join(' or ')}.`,
          { status: 405 },
        ),
        { unreadBody: hasUnreadBody(c.req.raw), headers: { allow: allowed.join(', ') } },
      );
    }
    if (options.fallback) return options.fallback(c);
    return errorResponse(notFound(pathnameOf(c)), { unreadBody: hasUnreadBody(c.req.raw) });
  });
  app.onError((error, c) => errorResponse(error, { unreadBody: hasUnreadBody(c.req.raw) }));
  return app;
}

/** Before the route's handler: its parameters decode strictly, and a write says it is JSON. */
const routeContract: MiddlewareHandler = async (c, next) => {
  const route = matchedRoutes(c).find((r) => r.method !== 'ALL');
  if (route) {
    checkParams(route.path, pathnameOf(c));
    if (route.method !== 'GET') {
      const refusal = requireJsonBody(c.req.raw);
      if (refusal) throw refusal;
    }
  }
  await next();
};

/** The routes (not middleware) of any method whose pattern matches `path`, in the order they were added. */
function routesOfPath(app: Hono, path: string): RouterRoute[] {
  const matched = new Set<RouterRoute>();
  const methods = new Set(app.routes.map((route) => route.method).filter((method) => method !== 'ALL'));
  for (const method of methods) {
    for (const [[, route]] of app.router.match(method, path)[0]) {
      if (route.method === method) matched.add(route);
    }
  }
  return app.routes.filter((route) => matched.has(route));
}

/**
 * Throws a 400 for a `:param` segment of `pattern` that is not valid percent-encoding: Hono would pass it on
 * half-decoded, and a plan id must never be guessed.
 */
function checkParams(pattern: string, pathname: string): void {
  const parts = pattern.split('/');
  const segments = pathname.split('/');
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (part.startsWith(':')) decodeSegment(segments[i] ?? '', part.slice(1));
  }
}

/** A path segment decoded, or a 400 naming `field` when it is not valid percent-encoding. */
export function decodeSegment(segment: string, field: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new CairnError(
      'invalid_argument',
      `The path segment "${segment}" is not valid percent-encoding (e.g. acme%3Aconv%3A7).`,
      { field },
    );
  }
}

/** The path as the client sent it (still percent-encoded). */
function pathnameOf(c: Context): string {
  return new URL(c.req.url).pathname;
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

const JSON_TYPE = 'application/json; charset=utf-8';

/** `body` as JSON with its length. */
export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return textResponse(JSON.stringify(body), status, { 'content-type': JSON_TYPE, ...headers });
}

/** `text` with its length (`content-type` in `headers`). */
export function textResponse(text: string, status: number, headers: Record<string, string>): Response {
  const bytes = new TextEncoder().encode(text);
  return new Response(bytes, { status, headers: { ...headers, 'content-length': `${bytes.byteLength}` } });
}

/**
 * `{ error: { code, message, ...details } }` with the status of the code (or `details.status`), `Retry-After` for
 * a `retryAfter` detail. `unreadBody`: the request's body was left unread (too large, refused before reading), so
 * the connection closes after this answer and the body is never taken for the next request.
 */
export function errorResponse(
  caught: unknown,
  { unreadBody = false, headers = {} }: { unreadBody?: boolean; headers?: Record<string, string> } = {},
): Response {
  const error = toCairnError(caught);
  const status = typeof error.details.status === 'number' ? error.details.status : STATUS_BY_CODE[error.code];
  const { status: _status, ...details } = error.details;
  return jsonResponse({ error: { ...details, code: error.code, message: error.message } }, status, {
    ...headers,
    ...(unreadBody ? { connection: 'close' } : {}),
    ...(typeof details.retryAfter === 'number' ? { 'retry-after': `${details.retryAfter}` } : {}),
  });
}

/** Requests whose body `readJson` read to its end. */
const bodiesRead = new WeakSet<Request>();

function hasUnreadBody(request: Request): boolean {
  return (
    !bodiesRead.has(request) &&
    announcesBody(request.headers.get('content-length'), request.headers.get('transfer-encoding'))
  );
}

/** Whether a request's headers say a body follows. */
export function announcesBody(
  contentLength: string | null | undefined,
  transferEncoding: string | null | undefined,
): boolean {
  return (contentLength != null && contentLength !== '0') || transferEncoding != null;
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
 * Reads a JSON body (see ReadJsonOptions; a number is `maxBytes`), never more than `maxBytes` of it. Bad
 * JSON or a key `__proto__` is a CairnError `invalid_argument` (400), a body over a bound a CairnError `limit` (413).
 */
export async function readJson(request: Request, options: ReadJsonOptions | number = {}): Promise<unknown> {
  const {
    maxBytes = 1024 * 1024,
    maxNodes = Number.POSITIVE_INFINITY,
    optional = false,
  } = typeof options === 'number' ? { maxBytes: options } : options;
  const declared = request.headers.get('content-length');
  let text: string;
  if (declared !== null && !request.headers.has('transfer-encoding')) {
    // HTTP framing ends the body at its declared length: a larger one is refused unread, a smaller one read whole.
    if (Number(declared) > maxBytes) throw tooLarge(maxBytes);
    text = await request.text();
  } else {
    text = await readUpTo(request, maxBytes);
  }
  bodiesRead.add(request);
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

/** A body of unknown length (chunked), read until it ends or passes `maxBytes`. */
async function readUpTo(request: Request, maxBytes: number): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  let size = 0;
  const reader = request.body?.getReader();
  if (!reader) return text;
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    size += read.value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(maxBytes);
    }
    text += decoder.decode(read.value, { stream: true });
  }
  return text + decoder.decode();
}

function tooLarge(maxBytes: number): CairnError {
  return new CairnError('limit', `The body is larger than ${maxBytes} bytes.`, { status: 413, maxBytes });
}

/** The token of an `Authorization: Bearer <token>` header's value, or null. */
export function bearerToken(authorization: string | null | undefined): string | null {
  const found = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
  return found?.[1] ?? null;
}
