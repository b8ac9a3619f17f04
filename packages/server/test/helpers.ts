// Shared test parts: a real server on a free port over a real temp dir, stock and Cairn clients, a raw socket, a
// hand-written WebSocket upgrade.
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPlan, type Plan, type TaskInput } from '@cairn/core';
import { planFiles, UpdateLog } from '@cairn/core/fs';
import { until } from '@cairn/core/testing';
import { type ConnectPlanOptions, connectPlan, type PlanConnection } from '@cairn/core/websocket';
import { afterEach, expect, vi } from 'vitest';
import { WebSocket } from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import {
  type CairnServer,
  type CairnServerOptions,
  createCairnServer,
  type LogFields,
  type Logger,
} from '../src/index.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  // Last in, first out: clients before their server, servers before their directory.
  while (cleanups.length > 0) await cleanups.pop()?.();
});

export function onCleanup(fn: () => Promise<void> | void): void {
  cleanups.push(fn);
}

export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-server-'));
  onCleanup(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** What plan `planId`'s log in the server's data dir `dir` holds, read from disk. */
export function storedDoc(dir: string, planId: string): Y.Doc {
  const doc = new Y.Doc();
  for (const update of UpdateLog.read(planFiles(dir, planId).log) ?? []) Y.applyUpdate(doc, update);
  return doc;
}

/** A logger that keeps what it was told, so tests can check that errors are surfaced. */
export function recordingLogger(): Logger & {
  lines: Array<{ level: string; message: string; fields?: LogFields }>;
} {
  const lines: Array<{ level: string; message: string; fields?: LogFields }> = [];
  return {
    lines,
    info: (message, fields) => lines.push({ level: 'info', message, fields }),
    warn: (message, fields) => lines.push({ level: 'warn', message, fields }),
    error: (message, fields) => lines.push({ level: 'error', message, fields }),
  };
}

export interface TestServer {
  server: CairnServer;
  /** ws://127.0.0.1:PORT */
  url: string;
  /** http://127.0.0.1:PORT */
  http: string;
  port: number;
  dir: string;
  logger: ReturnType<typeof recordingLogger>;
}

/** `port`: 0 (a free one) unless a restart must come back on the same port. */
export async function startServer(options: CairnServerOptions & { port?: number } = {}): Promise<TestServer> {
  const { port = 0, ...rest } = options;
  const dir = rest.dataDir ?? (await tempDir());
  const logger = recordingLogger();
  const server = createCairnServer({ dataDir: dir, logger, ...rest });
  const info = await server.listen(port, '127.0.0.1');
  onCleanup(() => server.close().catch(() => undefined));
  return { server, url: `ws://127.0.0.1:${info.port}`, http: info.url, port: info.port, dir, logger };
}

/**
 * Writes tasks into a plan on the server as `agent:seed`, stamped by `now` (default: the clock), and waits until
 * the server has stored them. Returns their ids.
 */
export async function seedPlan(
  server: TestServer,
  planId: string,
  inputs: TaskInput[],
  now?: () => number,
): Promise<string[]> {
  const handle = await server.server.hub.openPlan(planId);
  const plan = createPlan({ doc: handle.doc, actor: 'agent:seed', ...(now ? { now } : {}) });
  const ids = inputs.map((input) => plan.add(input).id);
  plan.destroy();
  await handle.flush();
  handle.release();
  return ids;
}

/** The plan's whole encoded state on the server: byte-for-byte equal means nothing changed. */
export async function serverState(server: TestServer, planId: string): Promise<Uint8Array> {
  const handle = await server.server.hub.openPlan(planId);
  const state = Y.encodeStateAsUpdate(handle.doc);
  handle.release();
  return state;
}

/** A stock y-websocket client, exactly as an app without Cairn would use it. */
export function stockClient(
  url: string,
  planId: string,
  doc: Y.Doc,
  options: { token?: string } = {},
): WebsocketProvider {
  const provider = new WebsocketProvider(`${url}/sync`, encodeURIComponent(planId), doc, {
    WebSocketPolyfill: WebSocket as unknown as typeof globalThis.WebSocket,
    disableBc: true,
    params: options.token ? { token: options.token } : {},
  });
  onCleanup(() => provider.destroy());
  return provider;
}

export function cairnClient(
  url: ConnectPlanOptions['url'],
  planId: string,
  doc: Y.Doc,
  options: Partial<ConnectPlanOptions> = {},
): PlanConnection {
  const conn = connectPlan(doc, {
    url,
    planId,
    WebSocketPolyfill: WebSocket,
    reconnectJitterMs: 20,
    ...options,
  });
  onCleanup(() => conn.destroy());
  return conn;
}

/**
 * Two healthy clients of `planId` that keep editing and getting acks while others misbehave: `stillSyncing` makes
 * one edit, waits for its acknowledgement and for the other client to see it.
 */
export async function healthyPair(
  url: string,
  planId: string,
  options: { token?: string } = {},
): Promise<{ stillSyncing(): Promise<void> }> {
  const a = new Y.Doc();
  const b = new Y.Doc();
  const ca = cairnClient(url, planId, a, options);
  const cb = cairnClient(url, planId, b, options);
  await Promise.all([ca.whenSynced(), cb.whenSynced()]);
  let n = 0;
  return {
    async stillSyncing() {
      n++;
      a.getMap('tasks').set(`k${n}`, n);
      await ca.whenAcknowledged();
      await vi.waitFor(() => expect(b.getMap('tasks').get(`k${n}`)).toBe(n));
    },
  };
}

export function whenProviderSynced(provider: WebsocketProvider): Promise<void> {
  if (provider.synced) return Promise.resolve();
  return new Promise((resolve) => {
    const on = (synced: boolean) => {
      if (!synced) return;
      provider.off('sync', on);
      resolve();
    };
    provider.on('sync', on);
  });
}

/** A bare socket: sends raw frames, records every frame and the close. */
export interface RawClient {
  ws: WebSocket;
  opened: Promise<void>;
  messages: Uint8Array[];
  closed: Promise<{ code: number; reason: string }>;
  /** Resolves with the first message (already received or future) that satisfies `test`. */
  next(test: (message: Uint8Array) => boolean): Promise<Uint8Array>;
  send(bytes: Uint8Array | number[]): void;
}

export function rawClient(
  url: string,
  planId: string,
  options: { token?: string; protocols?: string[] } = {},
): RawClient {
  const query = options.token ? `?token=${encodeURIComponent(options.token)}` : '';
  const ws = new WebSocket(`${url}/sync/${encodeURIComponent(planId)}${query}`, options.protocols ?? []);
  ws.binaryType = 'nodebuffer';
  const messages: Uint8Array[] = [];
  const waiting: Array<{ test: (m: Uint8Array) => boolean; resolve: (m: Uint8Array) => void }> = [];
  ws.on('message', (data: Buffer) => {
    const message = new Uint8Array(data);
    messages.push(message);
    for (const w of [...waiting]) {
      if (w.test(message)) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(message);
      }
    }
  });
  ws.on('error', () => undefined);
  const opened = new Promise<void>((resolve) => ws.once('open', () => resolve()));
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  onCleanup(() => ws.terminate());
  return {
    ws,
    opened,
    messages,
    closed,
    next(test) {
      const found = messages.find(test);
      if (found) return Promise.resolve(found);
      return new Promise((resolve) => waiting.push({ test, resolve }));
    },
    send(bytes) {
      ws.send(bytes instanceof Uint8Array ? bytes : Uint8Array.from(bytes));
    },
  };
}

/** A WebSocket upgrade written by hand on a bare TCP socket to `path`; `reply` is the first bytes the server sends. */
export function rawUpgrade(port: number, path: string): { socket: Socket; reply: Promise<string> } {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  const reply = new Promise<string>((resolve) => socket.once('data', (d) => resolve(d.toString())));
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
  );
  return { socket, reply };
}

/** A replica of `planId` that speaks as `actor`, present in awareness, synced with the server at `url`. */
export interface TestAgent {
  plan: Plan;
  connection: PlanConnection;
}

export async function agentOn(
  url: string,
  planId: string,
  actor: string,
  token?: string,
): Promise<TestAgent> {
  const doc = new Y.Doc();
  const plan = createPlan({ doc, actor });
  const connection = cairnClient(url, planId, doc, {
    plan,
    presence: { id: actor, name: actor, kind: 'agent' },
    ...(token ? { token } : {}),
  });
  await connection.whenSynced(30_000);
  return { plan, connection };
}

/** agent:a claims a task of `planId` and leaves; resolves with how long until agent:b sees the lease free it. */
export async function freedByLease(url: string, planId: string): Promise<number> {
  const a = await agentOn(url, planId, 'agent:a');
  const b = await agentOn(url, planId, 'agent:b');
  const task = a.plan.add({ title: 'Lease me' });
  expect(await a.plan.claim(task.id)).toMatchObject({ outcome: 'won' });
  await until(b.plan, () => b.plan.get(task.id)?.assignee === 'agent:a');
  const left = Date.now();
  a.connection.destroy();
  await until(b.plan, () => b.plan.get(task.id)?.assignee === null);
  expect(b.plan.get(task.id)).toMatchObject({ status: 'pending', updatedBy: 'lease' });
  return Date.now() - left;
}
