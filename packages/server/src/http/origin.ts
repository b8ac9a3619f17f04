// Which requests a browser page may make: the Host a request is addressed to and the Origin of the page that made
// it, checked on HTTP and on WebSocket upgrades before anything else (docs/decisions/014-open-mode-origin-and-host.md).
import type { IncomingMessage } from 'node:http';
import { CairnError } from '@cairn/core';

export interface OriginOptions {
  /**
   * Host names (without port) requests may be addressed to, besides the listening address and loopback names;
   * `*` allows any. Default: with a secret, any host; open, only those.
   */
  allowedHosts?: readonly string[] | null;
  /**
   * Origins (`https://app.example`) whose pages may call the server, besides its own origin; `*` allows any.
   * Default: with a secret, any origin (a token is never sent by the browser on its own); open, only its own.
   */
  allowedOrigins?: readonly string[] | null;
}

export interface OriginPolicy {
  /** A CairnError `forbidden` (403) for a request this policy refuses, else null. */
  check(req: IncomingMessage): CairnError | null;
}

/** `open`: the server has no secret. `listening()`: the address it listens on, once it does. */
export function createOriginPolicy(
  options: OriginOptions & { open: boolean; listening: () => string | null },
): OriginPolicy {
  const hosts = options.allowedHosts ?? (options.open ? [] : ['*']);
  const origins = options.allowedOrigins ?? (options.open ? [] : ['*']);
  const anyHost = hosts.includes('*');
  const anyOrigin = origins.includes('*');
  const allowedHosts = new Set(hosts.map((h) => h.toLowerCase()));
  const allowedOrigins = new Set(origins.map((o) => o.toLowerCase().replace(/\/+$/, '')));

  function hostAllowed(hostname: string): boolean {
    if (anyHost || allowedHosts.has(hostname) || isLoopback(hostname)) return true;
    const listening = options.listening();
    return listening !== null && unbracket(listening).toLowerCase() === hostname;
  }

  return {
    check(req) {
      const host = req.headers.host ?? '';
      const hostname = hostnameOf(host);
      if (hostname === null || !hostAllowed(hostname)) {
        return new CairnError(
          'forbidden',
          `Requests addressed to host "${host}" are not served: a page under another name may have been pointed ` +
            'at this address (DNS rebinding). Use the address the server listens on, or add the name to ' +
            'allowedHosts (CAIRN_ALLOWED_HOSTS).',
          { field: 'host' },
        );
      }
      const origin = req.headers.origin;
      // No Origin: not a browser page (curl, agents, y-websocket in Node); the token, if any, decides.
      if (origin === undefined) return null;
      const normalized = origin.toLowerCase();
      if (anyOrigin || allowedOrigins.has(normalized)) return null;
      if (normalized === `http://${host.toLowerCase()}` || normalized === `https://${host.toLowerCase()}`) {
        return null;
      }
      return new CairnError(
        'forbidden',
        `Pages from ${origin} may not use this server: only its own origin and allowedOrigins ` +
          '(CAIRN_ALLOWED_ORIGINS) may.',
        { field: 'origin' },
      );
    },
  };
}

/** A write must say it is JSON: a cross-site form or `text/plain` POST cannot, without a CORS preflight. */
export function requireJsonBody(request: Request): CairnError | null {
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json') return null;
  return new CairnError(
    'invalid_argument',
    `A ${request.method} needs the header Content-Type: application/json${type ? `, not ${type}` : ''} (even with an empty body).`,
    { status: 415, field: 'content-type' },
  );
}

/** Comma-separated names from an environment variable, or null when unset. */
export function listFromEnv(value: string | undefined): string[] | null {
  if (value === undefined || value.trim() === '') return null;
  return value
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

function hostnameOf(host: string): string | null {
  const found = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::\d+)?$/i.exec(host.trim());
  return found ? unbracket(found[1]!).toLowerCase() : null;
}

function unbracket(host: string): string {
  return host.replace(/^\[|\]$/g, '');
}

/** `localhost` or a loopback address (IPv6 in brackets or not). */
export function isLoopback(host: string): boolean {
  const h = unbracket(host).toLowerCase();
  return (
    h === 'localhost' ||
    h === '::1' ||
    /^127\.\d+\.\d+\.\d+$/.test(h) ||
    /^::ffff:127\.\d+\.\d+\.\d+$/.test(h)
  );
}
