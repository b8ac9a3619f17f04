// Serves a built single-page app (the demo) from a directory: files as they are, and index.html for any other
// GET that is not part of the API, so client-side routes survive a reload.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { type Handler, notFound } from './router.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.ico': 'image/x-icon',
  '.webp': 'image/webp',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.wasm': 'application/wasm',
};

/** Paths that belong to the server, never to the app. */
const RESERVED = /^\/(api|sync)(\/|$)/;

export function serveStatic(dir: string): Handler {
  const root = resolve(dir);
  return async ({ req, res, url }) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || RESERVED.test(url.pathname))
      throw notFound(url.pathname);
    let path: string;
    try {
      path = resolve(join(root, decodeURIComponent(url.pathname)));
    } catch {
      throw notFound(url.pathname);
    }
    if (path !== root && !path.startsWith(root + sep)) throw notFound(url.pathname);
    let file = await fileAt(path);
    // A route of the app (no file extension): the app's shell answers it.
    if (!file && extname(path) === '') file = await fileAt(join(root, 'index.html'));
    if (!file) throw notFound(url.pathname);
    const type = TYPES[extname(file.path).toLowerCase()] ?? 'application/octet-stream';
    res.writeHead(200, {
      'content-type': type,
      'content-length': file.size,
      'cache-control': file.path.endsWith('index.html') ? 'no-cache' : 'public, max-age=3600',
    });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    await new Promise<void>((done, fail) => {
      const stream = createReadStream(file.path);
      stream.on('error', fail);
      res.on('close', () => {
        stream.destroy();
        done();
      });
      stream.pipe(res);
    });
  };
}

async function fileAt(path: string): Promise<{ path: string; size: number } | null> {
  try {
    const info = await stat(path);
    if (info.isFile()) return { path, size: info.size };
    if (info.isDirectory()) return fileAt(join(path, 'index.html'));
    return null;
  } catch {
    return null;
  }
}
