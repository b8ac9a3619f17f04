// Mounts the HTTP app (app.ts) on Node's http server: each request becomes a Web-standard Request for the app, and
// its Response is written back. Node's own global Request and Response are left as they are.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import type { Hono } from 'hono';
import { announcesBody, errorResponse } from './app.js';

export type NodeListener = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export function nodeListener(app: Hono): NodeListener {
  return getRequestListener(app.fetch, { overrideGlobalObjects: false });
}

/**
 * Answers a request refused before it reaches the app (origin, rate limit) with the app's error body; its body is
 * unread, so the connection closes after the answer.
 */
export async function refuse(req: IncomingMessage, res: ServerResponse, error: unknown): Promise<void> {
  const unreadBody = announcesBody(req.headers['content-length'], req.headers['transfer-encoding']);
  const response = errorResponse(error, { unreadBody });
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
}
