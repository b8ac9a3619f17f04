// The Node host of the sync hub: one node:http server for the HTTP routes, the WebSocket upgrade at
// /sync/<planId> (ws 8, token checked before the upgrade completes), heartbeats for half-open sockets; the plan
// API, the wake-up sweeper and auto-close beside it.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { CairnError } from '@cairn/core';
import type { Hono } from 'hono';
import { type WebSocket, WebSocketServer } from 'ws';
import { createAuthenticator } from './auth.js';
import { createOnFirstWrite } from './create-on-write.js';
import { type AutoCloseOptions, AutoCloser, type Judge } from './extensions/auto-close.js';
import { ClaimArbiterService, type ClaimOptions } from './extensions/claims.js';
import { withLearningAccess } from './extensions/learning/access.js';
import type { Distiller } from './extensions/learning/distiller.js';
import { Learner, type LearningOptions } from './extensions/learning/learner.js';
import { registerLearningRoutes } from './extensions/learning/routes.js';
import { type WakeOptions, WakeSweeper } from './extensions/wake.js';
import { createHttpApp } from './http/app.js';
import { registerContextTemplateRoute } from './http/context-template.js';
import { registerConversationRoutes } from './http/conversation.js';
import { nodeListener, refuse } from './http/node-listener.js';
import { createOriginPolicy, isLoopback, type OriginOptions } from './http/origin.js';
import { type PlanRoutesOptions, registerPlanRoutes } from './http/plans.js';
import { HttpRateLimiter, type HttpRateLimits } from './http/rate-limit.js';
import { authorizeRequest, registerCoreRoutes, type ServiceCheck } from './http/routes.js';
import { serveStatic } from './http/static.js';
import type { HubSocket } from './hub/connection.js';
import type { Extension, ExtensionHost } from './hub/extension.js';
import { type HubOptions, SyncHub } from './hub/hub.js';
import { createConsoleLogger, describeError, type Logger } from './log.js';
import { MetricsRegistry } from './metrics.js';
import { type ModelProxyOptions, registerModelRoutes, writersOnly } from './model-proxy.js';
import { nodeProcessMetrics } from './process-metrics.js';
import { DiskStore } from './store/disk.js';
import { diskPlanExists, listDiskDocuments, listDiskPlans } from './store/disk-plans.js';
import { nodeIndexFile } from './store/index-file.js';
import type { PlanStore } from './store/store.js';
import { boundUnfinishedMessages } from './unfinished-messages.js';
import { CloseCode, chooseSubprotocol, SYNC_PATH_PREFIX, tokenOfUpgrade } from './wire.js';

export interface CairnServerOptions extends Omit<HubOptions, 'store' | 'auth' | 'logger'>, OriginOptions {
  /** Where the disk store keeps plans. Default `./data`. Ignored when `store` is given. */
  dataDir?: string;
  /** Another PlanStore instead of the disk store. */
  store?: PlanStore;
  /** HS256 secret (at least 32 bytes). Without one the server is open and listens on loopback only. */
  secret?: string | Uint8Array | null;
  /** A built single-page app to serve on the same port (index.html for unknown paths). */
  staticDir?: string | null;
  /** Sockets that miss a pong for this long are dropped as half-open. Default 30 s. */
  pingIntervalMs?: number;
  /** Default: warnings and errors to stderr. */
  logger?: Logger;
  /** Claim arbitration and leases (docs/PROTOCOL.md, "Claims"). `false`: claim messages are refused (4400). */
  claims?: ClaimOptions | false;
  /**
   * The wake-up sweeper (docs/decisions/008). With the disk store its index is `<dataDir>/.cairn-wake.json`.
   * `false` turns wake-ups off.
   */
  wake?: Omit<WakeOptions, 'logger'> | false;
  /** Judges open tasks after each turn (auto-close). None: tasks are closed only by agents and people. */
  judge?: Judge | null;
  autoClose?: Omit<AutoCloseOptions, 'judge' | 'logger'>;
  /** Mounts the model proxy (`/api/model`); with auth on, a call needs a write token for its `x-cairn-plan`. */
  model?: ModelProxyOptions | null;
  /** More hub extensions (e.g. the Redis relay of a cluster), added after the built-in ones. */
  extensions?: ReadonlyArray<(host: ExtensionHost) => Extension>;
  /** Services `/healthz` checks and reports (answering 503 while one is down). */
  services?: readonly ServiceCheck[];
  /** Writes learned skills with a model (the judge's endpoint in `cairn serve`); none: the offline distiller. */
  distiller?: Distiller | null;
  /** Traces and learned skills (docs/decisions/020). `false` turns learning off (tool calls are not traced). */
  learning?: Omit<LearningOptions, 'distiller' | 'logger'> | false;
  /** Per-token (or per-address) limits of `/api/` requests; `false` turns them off. Defaults: DEFAULT_HTTP_RATE_LIMITS. */
  httpRateLimits?: Partial<HttpRateLimits> | false;
}

export interface ListenInfo {
  host: string;
  port: number;
  /** `http://HOST:PORT` (IPv6 hosts in brackets). */
  url: string;
}

export interface CairnServer {
  readonly hub: SyncHub;
  /** Decides claims and keeps leases. Null when turned off. */
  readonly claims: ClaimArbiterService | null;
  /**
   * The HTTP API (Hono): register more routes here, before the server answers its first request. Its handlers
   * take Web-standard Requests; `authorizeRequest(server.hub, c.req.raw, planId, role)` checks a token.
   */
  readonly app: Hono;
  /** Emits `task_woken`; `sweep()` runs a sweep now. Null when turned off. */
  readonly wake: WakeSweeper | null;
  /** Emits `task_close` and `judged`. Null without a judge. */
  readonly autoClose: AutoCloser | null;
  /** Emits `queued`, `learned`, `retry` and `outcome`; `sweep()` distils due traces now. Null when turned off. */
  readonly learner: Learner | null;
  readonly httpServer: Server;
  /**
   * Starts listening (port 0 = a free port). Rejects with CairnError `invalid_argument` when the server is open
   * (no secret) and `host` is not a loopback address.
   */
  listen(port?: number, host?: string): Promise<ListenInfo>;
  /** Stops accepting, closes every socket (1001), flushes and releases every plan. */
  close(): Promise<void>;
}

/** The token of an upgrade: `?token=` or the subprotocol `cairn.token.<jwt>`. */
export function upgradeToken(req: IncomingMessage, url: URL): string | null {
  return tokenOfUpgrade(url, req.headers['sec-websocket-protocol']);
}

export function createCairnServer(options: CairnServerOptions = {}): CairnServer {
  const logger = options.logger ?? createConsoleLogger();
  const auth = withLearningAccess(createAuthenticator({ secret: options.secret ?? null }));
  const baseStore = options.store ?? DiskStore.open(options.dataDir ?? './data');
  const disk = baseStore instanceof DiskStore ? baseStore : null;
  // A disk plan gets its file with its first write, not when a reader (or an idle writer) opens it.
  const store = disk ? createOnFirstWrite(disk, (planId) => diskPlanExists(disk.dir, planId)) : baseStore;
  const registry = options.registry ?? new MetricsRegistry({ extra: nodeProcessMetrics });
  const hub = new SyncHub({ ...options, store, auth, logger, registry });
  const claimOptions = options.claims;
  const claims =
    claimOptions === false ? null : hub.use((host) => new ClaimArbiterService(host, claimOptions));
  const wake =
    options.wake === false
      ? null
      : hub.use(
          (host) =>
            new WakeSweeper(host, {
              index: disk ? nodeIndexFile(join(disk.dir, '.cairn-wake.json')) : null,
              listPlans: disk ? () => listDiskPlans(disk.dir) : null,
              ...options.wake,
              logger,
            }),
        );
  const judge = options.judge;
  const autoClose = judge
    ? hub.use((host) => new AutoCloser(host, { ...options.autoClose, judge, logger }))
    : null;
  const learner =
    options.learning === false
      ? null
      : hub.use(
          (host) =>
            new Learner(host, {
              index: disk ? nodeIndexFile(join(disk.dir, '.cairn-learning.json')) : null,
              listDocuments: disk ? () => listDiskDocuments(disk.dir) : null,
              ...options.learning,
              distiller: options.distiller ?? null,
              logger,
            }),
        );
  const planExists = disk ? { planExists: (planId: string) => diskPlanExists(disk.dir, planId) } : {};
  for (const create of options.extensions ?? []) hub.use(create);
  const app = createHttpApp(options.staticDir ? { fallback: serveStatic(options.staticDir) } : {});
  registerCoreRoutes(app, hub, options.services);
  const planRoutes: PlanRoutesOptions = {
    autoClose,
    claims,
    ...planExists,
    learning: learner,
    recordCall: learner ? (planId, call) => learner.recordCall(planId, call) : null,
  };
  registerPlanRoutes(app, hub, planRoutes);
  registerConversationRoutes(app, hub, planRoutes);
  registerContextTemplateRoute(app, hub, planRoutes);
  if (learner) registerLearningRoutes(app, hub, learner, planExists);
  if (options.model) {
    registerModelRoutes(app, {
      ...options.model,
      authorize: writersOnly(auth.open, (request, plan) => authorizeRequest(hub, request, plan, 'write')),
    });
  }

  let listeningOn: string | null = null;
  const origins = createOriginPolicy({
    open: auth.open,
    listening: () => listeningOn,
    allowedHosts: options.allowedHosts ?? null,
    allowedOrigins: options.allowedOrigins ?? null,
  });
  const rateLimiter = options.httpRateLimits === false ? null : new HttpRateLimiter(options.httpRateLimits);
  const serveHttp = nodeListener(app);
  const httpServer = createServer((req, res) => {
    try {
      const refusal = origins.check(req);
      if (refusal) throw refusal;
      if (req.url?.startsWith('/api/')) rateLimiter?.check(req);
    } catch (error) {
      void refuse(req, res, error);
      return;
    }
    void serveHttp(req, res);
  });
  const wss = new WebSocketServer({
    noServer: true,
    // A backstop: boundUnfinishedMessages closes a message past the limit (4413) as its bytes arrive, before ws
    // buffers them; ws itself cuts one past twice the limit (1009).
    maxPayload: hub.limits.maxMessageBytes * 2,
    perMessageDeflate: false,
    // Never the token's own subprotocol: echoing it would put the token in the response headers.
    handleProtocols: (offered) => chooseSubprotocol(offered) ?? false,
  });
  const alive = new Map<WebSocket, boolean>();

  httpServer.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    upgrade(req, socket, head).catch((error: unknown) => {
      logger.error('upgrade failed', { error: describeError(error) });
      refuseHttp(socket, 500, 'Internal Server Error');
    });
  });

  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    // A page of another site never gets a socket, not even a refused one.
    const refusal = origins.check(req);
    if (refusal) {
      hub.metrics.refusedTotal.inc({ reason: 'origin' });
      refuseHttp(socket, 403, 'Forbidden', refusal.message);
      return;
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (!url.pathname.startsWith(SYNC_PATH_PREFIX)) {
      refuseHttp(socket, 404, 'Not Found', 'WebSocket sync is at /sync/<planId>.');
      return;
    }
    if (hub.isClosing) {
      refuseHttp(socket, 503, 'Service Unavailable', 'The server is shutting down.');
      return;
    }
    let planId: string;
    try {
      planId = decodeURIComponent(url.pathname.slice(SYNC_PATH_PREFIX.length));
    } catch {
      refuseHttp(socket, 400, 'Bad Request', 'The plan id in the path is not valid percent-encoding.');
      return;
    }
    // Decided before the upgrade completes: a refused socket never reaches a room.
    const decision = await hub.authorize(planId, upgradeToken(req, url));
    if (socket.destroyed) return;
    wss.handleUpgrade(req, socket, head, (ws) => {
      if (!decision.ok) {
        ws.close(decision.code, clipReason(decision.reason));
        return;
      }
      attach(ws, decision.grant, socket);
    });
  }

  function attach(ws: WebSocket, grant: Parameters<SyncHub['connect']>[1], socket: Duplex): void {
    alive.set(ws, true);
    const conn = hub.connect(new WsHubSocket(ws), grant);
    boundUnfinishedMessages(ws, socket, hub.limits, (code, reason) => conn.close(code, reason));
    ws.on('pong', () => alive.set(ws, true));
    ws.on('message', (data, isBinary) => {
      if (!isBinary) {
        conn.close(CloseCode.BadMessage, 'Text frames are not part of the protocol.');
        return;
      }
      conn.receive(toBytes(data));
    });
    ws.on('close', () => {
      alive.delete(ws);
      conn.closed();
    });
    ws.on('error', (error) => {
      logger.info('socket error', { plan: grant.planId, error: describeError(error) });
    });
  }

  const pingIntervalMs = options.pingIntervalMs ?? 30_000;
  const heartbeat = setInterval(() => {
    for (const [ws, ok] of alive) {
      if (!ok) {
        ws.terminate(); // no pong since the last ping: the peer is gone
        continue;
      }
      alive.set(ws, false);
      ws.ping();
    }
  }, pingIntervalMs);
  heartbeat.unref();

  let closing: Promise<void> | null = null;
  return {
    hub,
    claims,
    app,
    wake,
    autoClose,
    learner,
    httpServer,
    listen(port = 1234, host = '127.0.0.1') {
      if (auth.open && !isLoopback(host)) {
        return Promise.reject(
          new CairnError(
            'invalid_argument',
            `Refusing to listen on ${host} without a secret: anyone could read and write every plan. ` +
              'Set CAIRN_SECRET (or --secret-file), or listen on 127.0.0.1.',
            { field: 'host' },
          ),
        );
      }
      if (auth.open) {
        logger.warn(
          `AUTH IS OFF: no secret configured, so anyone who can reach ${host}:${port === 0 ? '<port>' : port} ` +
            'can read and write every plan. Set CAIRN_SECRET or --secret-file to require tokens.',
        );
      }
      return new Promise((resolve, reject) => {
        const onError = (error: Error) => reject(error);
        httpServer.once('error', onError);
        httpServer.listen(port, host, () => {
          httpServer.off('error', onError);
          const address = httpServer.address() as AddressInfo;
          listeningOn = address.address;
          const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
          resolve({ host: address.address, port: address.port, url: `http://${shown}:${address.port}` });
        });
      });
    },
    close() {
      closing ??= (async () => {
        clearInterval(heartbeat);
        const stopped = new Promise<void>((resolve) => httpServer.close(() => resolve()));
        try {
          // The hub closes its extensions first (wake-ups, auto-close, learning), so their last writes are flushed.
          await hub.close();
        } finally {
          // Sockets got a 1001 close frame; give them a moment to answer it before cutting what is left.
          await closedOrTimeout([...alive.keys()], 1000);
          for (const ws of alive.keys()) ws.terminate();
          wss.close();
          httpServer.closeAllConnections();
          await stopped;
        }
      })();
      return closing;
    },
  };
}

/**
 * A ws socket as the hub sees it. A class, not an object literal per socket: every relay calls `send` and reads
 * `bufferedAmount` on each peer, and a literal's getter is a new function per socket, which made those calls
 * megamorphic (a profile under fan-out showed the lookups); one class keeps them monomorphic.
 */
class WsHubSocket implements HubSocket {
  constructor(private readonly ws: WebSocket) {}
  send(data: Uint8Array): void {
    this.ws.send(data);
  }
  close(code: number, reason: string): void {
    this.ws.close(code, reason);
  }
  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }
}

function closedOrTimeout(sockets: WebSocket[], ms: number): Promise<void> {
  const open = sockets.filter((ws) => ws.readyState !== ws.CLOSED);
  if (open.length === 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    let left = open.length;
    for (const ws of open) {
      ws.once('close', () => {
        left--;
        if (left === 0) {
          clearTimeout(timer);
          resolve();
        }
      });
    }
  });
}

function toBytes(data: Buffer | ArrayBuffer | Buffer[]): Uint8Array {
  if (Array.isArray(data)) data = Buffer.concat(data);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

function clipReason(reason: string): string {
  let out = reason;
  while (Buffer.byteLength(out) > 123) out = `${out.slice(0, -2)}…`;
  return out;
}

function refuseHttp(socket: Duplex, status: number, statusText: string, body = statusText): void {
  if (socket.destroyed) return;
  socket.end(
    `HTTP/1.1 ${status} ${statusText}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}
