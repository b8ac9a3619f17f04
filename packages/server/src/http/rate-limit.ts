// Per-caller rate limits of the HTTP API, as the WebSocket side has per connection: requests and body bytes per
// second for each token (or each address, without one). Over the limit: 429 with Retry-After.
import type { IncomingMessage } from 'node:http';
import { CairnError } from '@cairn/core';
import { TokenBucket } from '../hub/limits.js';
import { bearerToken } from './app.js';

export interface HttpRateLimits {
  /** Sustained requests per second per caller. Default 20. */
  requestsPerSecond: number;
  /** Requests in a burst above that rate. Default 100. */
  requestBurst: number;
  /** Sustained request body bytes per second per caller (by Content-Length). Default 1 MiB. */
  bytesPerSecond: number;
  /** Body bytes in a burst. Default 8 MiB. */
  byteBurst: number;
}

export const DEFAULT_HTTP_RATE_LIMITS: HttpRateLimits = {
  requestsPerSecond: 20,
  requestBurst: 100,
  bytesPerSecond: 1024 * 1024,
  byteBurst: 8 * 1024 * 1024,
};

/** Callers remembered at once; the idlest are forgotten first (a forgotten caller starts with a full bucket). */
const MAX_CALLERS = 10_000;

interface Buckets {
  requests: TokenBucket;
  bytes: TokenBucket;
}

export class HttpRateLimiter {
  readonly limits: HttpRateLimits;
  private readonly callers = new Map<string, Buckets>();

  constructor(
    overrides: Partial<HttpRateLimits> = {},
    private readonly now?: () => number,
  ) {
    this.limits = { ...DEFAULT_HTTP_RATE_LIMITS, ...overrides };
  }

  /** Throws CairnError `limit` (429, `retryAfter` in seconds) when the request's caller is over its limits. */
  check(req: IncomingMessage): void {
    this.checkCaller(callerOf(req), req.headers['content-length']);
  }

  /** The same check of a Web-standard request (a Worker's), whose remote address the platform reports. */
  checkRequest(request: Request, address: string | null): void {
    const token = bearerToken(request.headers.get('authorization'));
    this.checkCaller(
      token ? `token:${token}` : `address:${address ?? 'unknown'}`,
      request.headers.get('content-length'),
    );
  }

  /**
   * The same check for a host without Node's request: `caller` is `token:<token>` or `address:<ip>`,
   * `contentLength` the request's declared body size.
   */
  checkCaller(caller: string, contentLength: string | null | undefined): void {
    const buckets = this.buckets(caller);
    const declared = Number(contentLength ?? 0);
    const bytes = Number.isFinite(declared) && declared > 0 ? declared : 0;
    const { requestsPerSecond, bytesPerSecond } = this.limits;
    const waitMs = Math.max(buckets.requests.waitMs(1), bytes > 0 ? buckets.bytes.waitMs(bytes) : 0);
    if (waitMs > 0) {
      const retryAfter = Number.isFinite(waitMs) ? Math.max(1, Math.ceil(waitMs / 1000)) : 60;
      throw new CairnError(
        'limit',
        `Too many requests: at most ${requestsPerSecond} per second and ${bytesPerSecond} body bytes per second ` +
          `for ${caller.startsWith('token:') ? 'one token' : 'one address without a token'}. Retry after ${retryAfter} s.`,
        { status: 429, retryAfter },
      );
    }
    buckets.requests.take(1);
    if (bytes > 0) buckets.bytes.take(bytes);
  }

  private buckets(caller: string): Buckets {
    let found = this.callers.get(caller);
    if (found) {
      this.callers.delete(caller); // most recently used last
    } else {
      const { requestsPerSecond, requestBurst, bytesPerSecond, byteBurst } = this.limits;
      found = {
        requests: new TokenBucket(requestsPerSecond, requestBurst, this.now),
        bytes: new TokenBucket(bytesPerSecond, byteBurst, this.now),
      };
      if (this.callers.size >= MAX_CALLERS) this.forgetIdle();
    }
    this.callers.set(caller, found);
    return found;
  }

  private forgetIdle(): void {
    for (const [caller, buckets] of this.callers) {
      if (buckets.requests.full && buckets.bytes.full) this.callers.delete(caller);
    }
    // Still full of busy callers: forget the least recently seen.
    const oldest = this.callers.keys().next();
    if (this.callers.size >= MAX_CALLERS && !oldest.done) this.callers.delete(oldest.value);
  }
}

/** A token is one caller (whoever holds it); without one, the remote address is. */
function callerOf(req: IncomingMessage): string {
  const token = bearerToken(req.headers.authorization);
  return token ? `token:${token}` : `address:${req.socket.remoteAddress ?? 'unknown'}`;
}
