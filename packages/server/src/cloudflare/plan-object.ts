// The Durable Object that holds one Cairn document (a plan, or a plan's traces, or a scope's skills): the same
// SyncHub and extensions as `cairn serve` (learning included), over hibernatable WebSockets, the object's SQLite
// and one alarm. Design: docs/decisions/041-durable-object-host.md, 049-server-routes-and-learning-at-the-edge.md.
import { CairnError } from '@cairn/core';
import { toCairnError } from '@cairn/core/protocol';
import type { Hono } from 'hono';
import type { Grant } from '../auth.js';
import { AutoCloser, judgeFromEnv } from '../extensions/auto-close.js';
import { ClaimArbiterService } from '../extensions/claims.js';
import { withLearningAccess } from '../extensions/learning/access.js';
import { WakeSweeper } from '../extensions/wake.js';
import { createHttpApp, errorResponse } from '../http/app.js';
import { registerContextTemplateRoute } from '../http/context-template.js';
import { registerConversationRoutes } from '../http/conversation.js';
import { type PlanRoutesOptions, registerPlanRoutes } from '../http/plans.js';
import { HttpRateLimiter } from '../http/rate-limit.js';
import { registerCoreRoutes } from '../http/routes.js';
import type { HubConnection } from '../hub/connection.js';
import type { DueQueue } from '../hub/due-times.js';
import type { PlanHandle } from '../hub/extension.js';
import { SyncHub } from '../hub/hub.js';
import { describeError, type Logger } from '../log.js';
import { CloseCode, chooseSubprotocol, tokenOfUpgrade } from '../wire.js';
import { useLearning } from './edge-learning.js';
import {
  ADDRESS_HEADER,
  authenticatorFromEnv,
  type CairnWorkerEnv,
  chunkBytesFromEnv,
  leaseMsFromEnv,
  PLAN_HEADER,
  stringVars,
} from './env.js';
import { DOCUMENT_PATH, ObjectDocuments, serveDocument } from './object-documents.js';
import { SqlitePlanStore } from './sqlite-store.js';
import type {
  DurableObjectState,
  HibernatableWebSocket,
  UpgradeResponseInit,
  WebSocketPairConstructor,
} from './workers-types.js';

declare const WebSocketPair: WebSocketPairConstructor;

/** What a socket keeps across hibernation (`serializeAttachment`): who it is and until when its token holds. */
interface SocketAttachment {
  grant: Grant;
}

/** The object's hub and what hangs on it, built at the first event after the object (re)starts. */
interface Runtime {
  readonly planId: string;
  readonly hub: SyncHub;
  readonly app: Hono;
  readonly claims: ClaimArbiterService;
  readonly wake: WakeSweeper;
  readonly autoClose: AutoCloser | null;
  /** The earliest token expiry of the object's sockets, as a due time of the hub's index. */
  readonly expiries: DueQueue;
  /**
   * Keeps the plan loaded for the object's life once it exists (written, or a client came): the object's eviction
   * is its unload, not an idle timer. Null while nothing was stored, so a read of an unknown plan answers 404.
   */
  handle: PlanHandle | null;
}

/**
 * While `alarm()` runs, the alarm is never cleared but set this far ahead: a run cut short runs again then (a run
 * still going is joined, not started twice).
 */
const STAND_IN_ALARM_MS = 15_000;

const consoleLogger: Logger = {
  info: () => {},
  warn: (message, fields) => console.warn(`[cairn] warn: ${message}`, fields ?? ''),
  error: (message, fields) => console.error(`[cairn] error: ${message}`, fields ?? ''),
};

/**
 * One plan's Durable Object. Users re-export it from their worker under the class name their wrangler config
 * binds (`CAIRN_PLANS`, class `CairnPlanObject`); `cairnWorker` routes requests to it by plan id.
 */
export class CairnPlanObject {
  private runtime: Promise<Runtime> | null = null;
  /** Connections of this incarnation; a socket missing here was accepted before a hibernation. */
  private readonly connections = new Map<HibernatableWebSocket, HubConnection>();
  private readonly rateLimiter = new HttpRateLimiter();
  /** The alarm the hub's due-time index asks for (null: none); `alarm()` sets it once its runs are over. */
  private wantedAlarm: number | null = null;
  private alarmRunning = false;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: CairnWorkerEnv,
  ) {}

  async fetch(request: Request): Promise<Response> {
    try {
      const runtime = await this.start(request.headers.get(PLAN_HEADER));
      const response =
        request.headers.get('upgrade')?.toLowerCase() === 'websocket'
          ? await this.upgrade(runtime, request)
          : new URL(request.url).pathname === DOCUMENT_PATH
            ? await serveDocument(runtime.hub, runtime.planId, request)
            : await this.serveHttp(runtime, request);
      await this.afterEvent(runtime);
      return response;
    } catch (error) {
      return errorResponse(toCairnError(error));
    }
  }

  /** The plan API, behind the same per-caller rate limits as `cairn serve` (here per plan object). */
  private serveHttp(runtime: Runtime, request: Request): Promise<Response> | Response {
    this.rateLimiter.checkRequest(request, request.headers.get(ADDRESS_HEADER));
    return runtime.app.fetch(request);
  }

  async webSocketMessage(ws: HibernatableWebSocket, message: ArrayBuffer | string): Promise<void> {
    const runtime = await this.start(null);
    const conn = this.connectionOf(runtime, ws);
    if (!conn) return;
    if (typeof message === 'string') {
      conn.close(CloseCode.BadMessage, 'Text frames are not part of the protocol.');
    } else {
      conn.receive(new Uint8Array(message));
    }
    await this.afterEvent(runtime);
  }

  async webSocketClose(ws: HibernatableWebSocket, code: number): Promise<void> {
    this.connections.get(ws)?.closed();
    this.connections.delete(ws);
    try {
      // Answer the close, or the client waits for the object's eviction. 1005 and 1006 cannot be sent.
      ws.close(code === 1005 || code === 1006 ? 1000 : code, 'closed');
    } catch {
      // Already closed from this side.
    }
    if (this.runtime) await this.afterEvent(await this.runtime);
  }

  async webSocketError(ws: HibernatableWebSocket): Promise<void> {
    this.connections.get(ws)?.closed();
    this.connections.delete(ws);
  }

  /**
   * The one alarm: whatever the hub's due-time index holds that is due (wake-ups, leases, judging, learning,
   * tokens). While it runs, the index leaves the running queues out of its earliest time, and would often clear the
   * alarm: a stand-in alarm stays set instead, so a run cut short (the object evicted, the runtime killed during a
   * model call) runs again, and the alarm the index wants is set once the runs are over.
   */
  async alarm(): Promise<void> {
    this.alarmRunning = true;
    try {
      await this.setStorageAlarm(null);
      const runtime = await this.start(null);
      await runtime.hub.dueTimes.runDue();
      await this.afterEvent(runtime);
    } finally {
      this.alarmRunning = false;
      await this.setStorageAlarm(this.wantedAlarm);
    }
  }

  /** Sets (or clears) the storage alarm; none is cleared while `alarm()` runs: the stand-in is set instead. */
  private async setStorageAlarm(at: number | null): Promise<void> {
    const next = at ?? (this.alarmRunning ? Date.now() + STAND_IN_ALARM_MS : null);
    try {
      await (next === null ? this.ctx.storage.deleteAlarm() : this.ctx.storage.setAlarm(next));
    } catch (error) {
      consoleLogger.error('could not set the alarm', { error: describeError(error) });
    }
  }

  /** Closes the sockets whose token has expired (4401), and keeps the next expiry in the index. */
  private closeExpired(runtime: Runtime): void {
    const now = Date.now();
    for (const ws of this.ctx.getWebSockets()) {
      const expiresAt = attachmentOf(ws)?.grant.expiresAt;
      if (expiresAt != null && expiresAt <= now) {
        this.connectionOf(runtime, ws)?.close(CloseCode.Unauthorized, 'Token expired.');
      }
    }
    this.trackExpiries(runtime);
  }

  private trackExpiries(runtime: Runtime): void {
    let next: number | null = null;
    for (const ws of this.ctx.getWebSockets()) {
      const expiresAt = attachmentOf(ws)?.grant.expiresAt;
      if (expiresAt != null && (next === null || expiresAt < next)) next = expiresAt;
    }
    runtime.expiries.set('sockets', next);
  }

  private start(planHeader: string | null): Promise<Runtime> {
    if (!this.runtime) {
      const starting = this.ctx.blockConcurrencyWhile(() => this.build(planHeader));
      this.runtime = starting;
      starting.catch(() => {
        if (this.runtime === starting) this.runtime = null;
      });
    }
    return this.runtime;
  }

  private async build(planHeader: string | null): Promise<Runtime> {
    const planId = this.rememberPlanId(planHeader);
    const auth = withLearningAccess(authenticatorFromEnv(this.env));
    // The object's own document in its SQLite; the documents of other objects (learning's) through those objects.
    const local = new SqlitePlanStore(this.ctx.storage, planId, { chunkBytes: chunkBytesFromEnv(this.env) });
    const store = new ObjectDocuments(planId, local, this.env.CAIRN_PLANS);
    const hub = new SyncHub({
      store,
      // Another object's document is read fresh at each use: unloaded as soon as nothing holds it. The object's
      // own stays pinned by `handle`.
      idleUnloadMs: 0,
      auth,
      logger: consoleLogger,
      // No timer may keep an idle object awake: keep-alives go out after each event (clients renew their presence
      // every 15 s, which is such an event), and there is no idle unload (eviction is the unload).
      keepAliveTimer: false,
      // Every due time of the hub (wake-ups, lease checks, auto-close, token expiry below) is the object's one
      // alarm; alarm() runs what is due.
      scheduler: {
        now: Date.now,
        setAlarm: (at) => {
          this.wantedAlarm = at;
          void this.setStorageAlarm(at);
        },
      },
    });
    // y-protocols' Awareness renews and expires presence on a 3 s interval; a pending interval keeps a Durable
    // Object from hibernating. Here a socket's presence ends when it closes, and all of it with the eviction
    // (clients renew theirs every 15 s, so a woken room has it back within that).
    hub.use(() => ({
      name: 'hibernatable presence',
      loaded: (room) =>
        clearInterval((room.awareness as unknown as { _checkInterval: number })._checkInterval),
    }));
    const claims = hub.use((host) => new ClaimArbiterService(host, { absentMs: leaseMsFromEnv(this.env) }));
    const wake = hub.use((host) => new WakeSweeper(host, { logger: consoleLogger }));
    // The token of each socket ends at its expiry: a due time of the same index, not a timer per connection.
    const expiries = hub.dueTimes.queue('token expiry', () => this.closeExpired(runtime));
    const judge = judgeFromEnv(stringVars(this.env));
    const autoClose = judge
      ? hub.use((host) => new AutoCloser(host, { judge, logger: consoleLogger }))
      : null;
    const app = createHttpApp();
    // A plan that was never written has no rows and no snapshot: reads answer 404 as on `cairn serve`. Another
    // object's document is asked of that object.
    const planExists = (docId: string) => docId !== planId || local.holdsPlan();
    const learning = await useLearning(hub, app, {
      sql: this.ctx.storage.sql,
      env: this.env,
      logger: consoleLogger,
      planExists,
    });
    const routes: PlanRoutesOptions = { autoClose, claims, planExists, ...learning };
    registerPlanRoutes(app, hub, routes);
    registerConversationRoutes(app, hub, routes);
    registerContextTemplateRoute(app, hub, routes);
    // `/metrics` of this object (the Worker sends `/metrics?plan=<id>` here).
    registerCoreRoutes(app, hub);
    const runtime: Runtime = { planId, hub, app, claims, wake, autoClose, expiries, handle: null };
    // A plan that cannot load (damaged storage) is not pinned: each request and socket meets the refusal itself
    // (503, 4503), as on `cairn serve`, and the hub has logged why.
    if (local.holdsPlan()) runtime.handle = await hub.openPlan(planId).catch(() => null);
    this.attachAll(runtime);
    return runtime;
  }

  /** The plan id: from the Worker's header on the first request, from storage after that (an alarm has none). */
  private rememberPlanId(planHeader: string | null): string {
    const sql = this.ctx.storage.sql;
    sql.exec('CREATE TABLE IF NOT EXISTS cairn_object (key TEXT PRIMARY KEY, value TEXT NOT NULL)');
    const stored = sql
      .exec<{ value: string }>("SELECT value FROM cairn_object WHERE key = 'plan'")
      .toArray()[0]?.value;
    if (stored !== undefined) {
      if (planHeader !== null && planHeader !== stored) {
        throw new CairnError('internal', `This object holds "${stored}", not "${planHeader}".`);
      }
      return stored;
    }
    if (planHeader === null) {
      throw new CairnError(
        'internal',
        'A Cairn object was reached without a plan id (route through cairnWorker).',
      );
    }
    sql.exec("INSERT INTO cairn_object (key, value) VALUES ('plan', ?)", planHeader);
    return planHeader;
  }

  private async upgrade(runtime: Runtime, request: Request): Promise<Response> {
    const url = new URL(request.url);
    const offered = request.headers.get('sec-websocket-protocol');
    const decision = await runtime.hub.authorize(runtime.planId, tokenOfUpgrade(url, offered));
    const pair = new WebSocketPair();
    const client = pair[0];
    const server = pair[1];
    const protocol = chooseSubprotocol(offered?.split(',').map((p) => p.trim()) ?? []);
    const headers = protocol ? { 'sec-websocket-protocol': protocol } : undefined;
    if (!decision.ok) {
      // As on `cairn serve`: the upgrade completes, then the close code says why (4400, 4401, 4403).
      server.accept();
      server.close(decision.code, clip(decision.reason));
      return new Response(null, { status: 101, webSocket: client, headers } as UpgradeResponseInit);
    }
    this.ctx.acceptWebSocket(server);
    server.serializeAttachment({ grant: decision.grant } satisfies SocketAttachment);
    this.attach(runtime, server, decision.grant);
    return new Response(null, { status: 101, webSocket: client, headers } as UpgradeResponseInit);
  }

  /** The hub connection of `ws` (every open socket has one from the first event of this incarnation on). */
  private connectionOf(runtime: Runtime, ws: HibernatableWebSocket): HubConnection | undefined {
    if (!this.connections.has(ws)) this.attachAll(runtime);
    return this.connections.get(ws);
  }

  /**
   * Attaches every socket accepted before a hibernation again, from its attachment; the hub greets each (SyncStep1,
   * the room's presence), so clients resync what they missed. Done at the first event after a wake, whatever it
   * is (a message, a request, the alarm), so that what it writes reaches them.
   */
  private attachAll(runtime: Runtime): void {
    for (const socket of this.ctx.getWebSockets()) {
      if (this.connections.has(socket)) continue;
      const attachment = attachmentOf(socket);
      if (attachment) this.attach(runtime, socket, attachment.grant);
      else socket.close(CloseCode.Internal, 'Lost the state of this socket; reconnect.');
    }
  }

  private attach(runtime: Runtime, ws: HibernatableWebSocket, grant: Grant): void {
    // The token's expiry is checked by the alarm, not by a timer per connection that would keep the object awake.
    // A hibernatable socket is already what the hub sends to and closes.
    const conn = runtime.hub.connect(ws, { ...grant, expiresAt: null });
    this.connections.set(ws, conn);
  }

  /** After each event: keep-alives, pins a plan that was loaded, and keeps the sockets' token expiries due. */
  private async afterEvent(runtime: Runtime): Promise<void> {
    runtime.hub.sendKeepAlives();
    this.trackExpiries(runtime);
    if (!runtime.handle && runtime.hub.isLoaded(runtime.planId)) {
      runtime.handle = await runtime.hub.openPlan(runtime.planId).catch(() => null);
    }
  }
}

function attachmentOf(ws: HibernatableWebSocket): SocketAttachment | null {
  const value = ws.deserializeAttachment() as SocketAttachment | null;
  return value && typeof value === 'object' && value.grant ? value : null;
}

function clip(reason: string): string {
  let out = reason;
  while (new TextEncoder().encode(out).byteLength > 123) out = `${out.slice(0, -2)}…`;
  return out;
}
