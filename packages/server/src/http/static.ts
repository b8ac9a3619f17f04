// Serves a built single-page app (the demo) from a directory with sirv (content types, ETag and 304, Range):
// files as they are, and index.html for any other GET that is not part of the API and names no file, so
// client-side routes survive a reload. The app's files are listed once, when the server starts. It is the HTTP
// app's fallback and answers on Node's own request and response (sirv is a Node handler).
import { existsSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join, resolve, sep } from 'node:path';
import type { HttpBindings } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Context } from 'hono';
import sirv from 'sirv';
import { notFound } from './app.js';

/** Paths that belong to the server, never to the app. */
const RESERVED = /^\/(api|sync)(\/|$)/;

/** A page (or the app's shell) is revalidated on every load, so a new build shows at once; assets are cached. */
const ASSET_MAX_AGE_SECONDS = 3600;

/** One range of bytes from a known start; anything else (suffix or multiple ranges) gets the whole file. */
const SIMPLE_RANGE = /^bytes=(\d+)-(\d*)$/;

/** The `fallback` of `createHttpApp` that serves the app in `dir`, mounted on Node (node-listener.ts). */
export function serveStatic(dir: string): (c: Context<{ Bindings: HttpBindings }>) => Promise<Response> {
  const root = resolve(dir);
  const serve = existsSync(root)
    ? sirv(root, {
        single: true,
        etag: true,
        maxAge: ASSET_MAX_AGE_SECONDS,
        setHeaders: (res: ServerResponse, pathname: string) => {
          if (isPage(pathname)) res.setHeader('cache-control', 'no-cache');
        },
      })
    : null;
  return async (c) => {
    const { incoming: req, outgoing: res } = c.env;
    const url = new URL(c.req.url);
    if ((req.method !== 'GET' && req.method !== 'HEAD') || RESERVED.test(url.pathname) || !serve)
      throw notFound(url.pathname);
    // The listing sirv serves from cannot reach outside the directory; a path that tries is still answered
    // 404, not with the app's shell.
    let path: string;
    try {
      path = resolve(join(root, decodeURIComponent(url.pathname)));
    } catch {
      throw notFound(url.pathname);
    }
    if (path !== root && !path.startsWith(root + sep)) throw notFound(url.pathname);
    const range = req.headers.range;
    if (range !== undefined && !isSimpleRange(range)) delete req.headers.range;
    await new Promise<void>((done, fail) => {
      res.once('close', () => done());
      serve(req, res, () => fail(notFound(url.pathname)));
    });
    return RESPONSE_ALREADY_SENT;
  };
}

function isPage(pathname: string): boolean {
  const last = pathname.slice(pathname.lastIndexOf('/') + 1);
  return !last.includes('.') || last.endsWith('.html');
}

function isSimpleRange(range: string): boolean {
  const m = SIMPLE_RANGE.exec(range);
  return m !== null && (m[2] === '' || Number(m[1]) <= Number(m[2]));
}
