// The transport-agnostic sync hub: rooms keyed by plan id, auth decisions, loading before the first sync,
// unloading idle plans, and the extensions that do the rest (the store first). A host (node-host.ts, a Worker,
// a test) feeds it sockets.
import { CairnError } from '@cairn/core';
import { ownerOfDerivedDoc } from '@cairn/core/learning';
import { toCairnError } from '@cairn/core/protocol';
import type * as decoding from 'lib0/decoding';
import { type Authenticator, createAuthenticator, type Grant, type Role } from '../auth.js';
import { describeError, type Logger, silentLogger } from '../log.js';
import { MetricsRegistry } from '../metrics.js';
import type { PlanStore } from '../store/store.js';
import { CloseCode, encodeKeepAlive } from '../wire.js';
import { Connection, type HubConnection, type HubSocket } from './connection.js';
import { DueTimes, type Scheduler, timerScheduler } from './due-times.js';
import type { Extension, ExtensionHost, PlanHandle, PlanRoom, RoomConnection } from './extension.js';
import { Extensions } from './extensions.js';
import { type Limits, planTooLarge, resolveLimits } from './limits.js';
import { handleMessage, type MessageContext } from './messages.js';
import { createHubMetrics, type HubMetrics, updateMetrics } from './metrics.js';
import { Room } from './room.js';
import { StoreExtension } from './store-extension.js';
import { TaskChanges } from './task-changes.js';

export interface HubOptions {
  store: PlanStore;
  /** Who may open which plan. Default: open (every request is `admin`); the Node host allows that on loopback only. */
  auth?: Authenticator;
  limits?: Partial<Limits>;
  /** How long a plan nobody uses stays loaded before it is flushed and unloaded. Default 30 s. */
  idleUnloadMs?: number;
  /**
   * At most this many plans loaded at once: loading one more flushes and unloads the least recently used plan
   * nobody uses (no client connected, no server-side job holding it), without waiting for it to be idle for
   * `idleUnloadMs`. Plans in use are never unloaded, so the count can pass the cap while they all are. Default:
   * no cap.
   */
  maxLoadedPlans?: number;
  /**
   * A client that received nothing for this long gets an empty awareness message, so y-websocket's "no message
   * in 30 s" watchdog does not drop a client that is alone in its plan. Default 15 s; 0 turns it off.
   */
  keepAliveMs?: number;
  /**
   * `false`: no interval; the host calls `sendKeepAlives()` when it runs anyway (a Durable Object after each
   * event, where a timer would keep it from hibernating). Default true.
   */
  keepAliveTimer?: boolean;
  /** Default: silent. */
  logger?: Logger;
  /** Where the hub registers its metrics; a new registry by default. */
  registry?: MetricsRegistry;
  /**
   * The clock and the one alarm of the extensions' due-time index (wake-ups, leases, auto-close, learning).
   * Default: a timer (`timerScheduler()`); a Durable Object passes its storage alarm.
   */
  scheduler?: Scheduler;
}

/** The outcome of `authorize`: a grant, or the close code and reason to refuse the socket with. */
export type AuthDecision =
  | { ok: true; grant: Grant }
  | { ok: false; code: number; reason: string; error: CairnError };

/**
 * Handles a Cairn message of a routed sub-type (`handleCairnMessages`), its sub-type already read. Reply with
 * `conn.send`; throw for bad input (the connection is closed with 4400).
 */
export type CairnMessageHandler = (
  room: PlanRoom,
  conn: RoomConnection,
  subType: number,
  decoder: decoding.Decoder,
) => void;

const MAX_PLAN_ID_LENGTH = 256;

export class SyncHub {
  readonly limits: Limits;
  readonly registry: MetricsRegistry;
  readonly metrics: HubMetrics;
  readonly auth: Authenticator;
  readonly store: PlanStore;
  /** Every due time of the extensions, and the one alarm for the earliest: a host's alarm calls `runDue()`. */
  readonly dueTimes: DueTimes;
  private readonly taskChanges = new TaskChanges();
  private readonly logger: Logger;
  private readonly idleUnloadMs: number;
  private readonly maxLoadedPlans: number;
  /** Loaded plans, least recently used first (a use moves a plan to the end). */
  private readonly rooms = new Map<string, Room>();
  /** Rooms being unloaded to make room under `maxLoadedPlans` (not counted again). */
  private readonly evicting = new Set<Room>();
  /** Plans whose store is being released; a new room of the same plan loads after it. */
  private readonly releasing = new Map<string, Promise<void>>();
  private readonly connections = new Set<Connection>();
  private readonly extensions: Extensions;
  /** What extensions may use of the hub. */
  private readonly host: ExtensionHost;
  private readonly messageContext: MessageContext;
  private readonly keepAlive: ReturnType<typeof setInterval> | null;
  private readonly keepAliveMs: number;
  private closing: Promise<void> | null = null;
  /** Set once the extensions have closed: no plan opens after it. */
  private stopped = false;

  constructor(options: HubOptions) {
    this.store = options.store;
    this.auth = options.auth ?? createAuthenticator();
    this.limits = resolveLimits(options.limits);
    this.logger = options.logger ?? silentLogger;
    this.idleUnloadMs = options.idleUnloadMs ?? 30_000;
    this.maxLoadedPlans = options.maxLoadedPlans ?? Number.POSITIVE_INFINITY;
    if (!(this.maxLoadedPlans >= 1))
      throw new CairnError('invalid_argument', 'maxLoadedPlans must be 1 or more.');
    if (!(this.idleUnloadMs >= 0))
      throw new CairnError('invalid_argument', 'idleUnloadMs must be 0 or more.');
    this.registry = options.registry ?? new MetricsRegistry();
    this.metrics = createHubMetrics(this.registry, {
      connections: () => this.connections.size,
      rooms: () => this.rooms.size,
    });
    this.extensions = new Extensions(this.logger, this.metrics);
    this.dueTimes = new DueTimes(options.scheduler ?? timerScheduler());
    this.host = {
      open: this.auth.open,
      logger: this.logger,
      registry: this.registry,
      metrics: this.metrics,
      room: (planId) => this.loadedRoom(planId),
      openPlan: (planId) => this.openPlan(planId),
      flush: (planId) => this.flush(planId),
      dueTimes: this.dueTimes,
      onTaskChanges: (subscription) => this.taskChanges.subscribe(subscription),
    };
    this.messageContext = {
      limits: this.limits,
      metrics: this.metrics,
      logger: this.logger,
      flush: (planId) => this.flush(planId),
      cairnHandler: (subType) => this.extensions.forMessage(subType),
    };
    this.use(() => new StoreExtension(this.store, this.metrics, this.logger));
    this.use(() => updateMetrics(this.metrics));
    this.use(() => ({
      name: 'task changes',
      priority: 2000,
      loaded: (room: PlanRoom) => this.taskChanges.watch(room.planId, room.doc),
    }));
    const keepAliveMs = options.keepAliveMs ?? 15_000;
    this.keepAliveMs = keepAliveMs;
    this.keepAlive =
      keepAliveMs > 0 && options.keepAliveTimer !== false
        ? setInterval(() => this.sendKeepAlives(), keepAliveMs / 3)
        : null;
    this.keepAlive?.unref?.();
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  get roomCount(): number {
    return this.rooms.size;
  }

  get isClosing(): boolean {
    return this.closing !== null;
  }

  /** Whether a plan is loaded in memory now. */
  isLoaded(planId: string): boolean {
    return this.rooms.get(planId)?.state === 'ready';
  }

  /** The plan's room if it is loaded and ready (for extensions: its doc, awareness and connections). */
  loadedRoom(planId: string): PlanRoom | undefined {
    const room = this.rooms.get(planId);
    return room?.state === 'ready' ? room : undefined;
  }

  /**
   * Throws CairnError `limit` (naming `maxDocBytes`) when a server-side write of about `bytes` (an HTTP request's
   * body) would grow a loaded plan past the limit a client's update meets, so every path has the same bound.
   */
  assertFits(planId: string, bytes: number): void {
    const room = this.rooms.get(planId);
    if (room?.state === 'ready' && !room.fits(bytes)) {
      this.metrics.refusedUpdatesTotal.inc({ reason: 'plan_too_large' });
      throw planTooLarge(this.limits.maxDocBytes);
    }
  }

  /** Resolves once every edit of a loaded plan so far is durably stored (every extension's `store`). */
  flush(planId: string): Promise<void> {
    return this.extensions.store(planId);
  }

  /**
   * Adds an extension, made by `create` from what the hub lends it; returns it. Its hooks run for every plan
   * loaded from now on, and its `loaded` at once for the plans loaded already. Throws CairnError
   * `invalid_argument` when it routes a reserved Cairn sub-type (0 to 2).
   */
  use<E extends Extension>(create: (host: ExtensionHost) => E): E {
    const extension = create(this.host);
    this.extensions.add(extension);
    for (const room of this.rooms.values()) {
      if (room.state === 'ready') this.extensions.loaded(room, extension);
    }
    return extension;
  }

  /**
   * Routes Cairn messages (type 100) of these sub-types to `handler`. Sub-types 0 to 2 are the acknowledgement's;
   * an unrouted sub-type closes the connection with 4400. (An extension with `cairnMessages` does the same.)
   */
  handleCairnMessages(subTypes: readonly number[], handler: CairnMessageHandler): void {
    this.use(() => ({
      name: `Cairn messages ${subTypes.join(', ')}`,
      cairnMessages: subTypes,
      message: ({ room, connection, subType, decoder }) => void handler(room, connection, subType, decoder),
    }));
  }

  /** Throws CairnError `invalid_argument` for an id no plan can have. */
  validatePlanId(planId: string): void {
    // A trace or skills document may pass the limit by its suffix: the plan (or scope) it belongs to may not.
    const owner = ownerOfDerivedDoc(planId) ?? planId;
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
    if (planId.length === 0 || owner.length > MAX_PLAN_ID_LENGTH || /[\u0000-\u001f\u007f]/.test(planId)) {
      throw new CairnError(
        'invalid_argument',
        `A plan id is 1 to ${MAX_PLAN_ID_LENGTH} characters without control characters, e.g. "acme:conv:7".`,
        { field: 'planId' },
      );
    }
    this.store.validatePlanId?.(planId);
  }

  /**
   * The grant of a request on `planId` with `token`: the id checked, the token authorized, then every
   * extension's `authenticate`. Throws CairnError `invalid_argument`, `unauthorized` or `forbidden`.
   */
  async grant(planId: string, token: string | null | undefined, needs: Role = 'read'): Promise<Grant> {
    this.validatePlanId(planId);
    const grant = await this.auth.authorize(token, planId, needs);
    await this.extensions.authenticate({ planId, grant, needs });
    return grant;
  }

  /**
   * Decides whether a socket for `planId` with `token` may be accepted. Call it before completing the upgrade;
   * refuse with `code` / `reason` (4400 bad plan id, 4401 unauthorized, 4403 forbidden, 4500 internal).
   */
  async authorize(
    planId: string,
    token: string | null | undefined,
    needs: Role = 'read',
  ): Promise<AuthDecision> {
    let decision: AuthDecision;
    try {
      decision = { ok: true, grant: await this.grant(planId, token, needs) };
    } catch (caught) {
      const error = toCairnError(caught);
      const code =
        error.code === 'unauthorized'
          ? CloseCode.Unauthorized
          : error.code === 'forbidden'
            ? CloseCode.Forbidden
            : error.code === 'invalid_argument'
              ? CloseCode.BadMessage
              : CloseCode.Internal;
      if (code === CloseCode.Internal) this.logger.error('authorization failed', { error: error.message });
      decision = { ok: false, code, reason: error.message, error };
    }
    if (!decision.ok) this.metrics.refusedTotal.inc({ reason: decision.error.code });
    return decision;
  }

  /** Attaches an accepted socket to its plan's room. Messages it sends before the plan has loaded wait, in order. */
  connect(socket: HubSocket, grant: Grant): HubConnection {
    const room = this.closing ? null : this.room(grant.planId);
    const conn = new Connection(socket, grant, {
      limits: this.limits,
      metrics: this.metrics,
      logger: this.logger,
      handle: (c, data) => room && handleMessage(this.messageContext, room, c, data),
      ended: (c) => this.ended(room, c),
    });
    if (!room) {
      conn.close(CloseCode.GoingAway, 'Server shutting down.');
      return conn;
    }
    this.connections.add(conn);
    this.metrics.connectionsTotal.inc();
    room.add(conn);
    return conn;
  }

  /** Loads a plan for server-side use; it stays loaded until `release()`. Rejects with CairnError `storage`. */
  async openPlan(planId: string): Promise<PlanHandle> {
    if (this.stopped) throw new CairnError('storage', 'The server is shutting down.');
    this.validatePlanId(planId);
    const room = this.room(planId);
    const unhold = room.hold();
    try {
      await room.loaded;
    } catch (error) {
      unhold();
      throw toStorageError(error, planId);
    }
    return {
      planId,
      doc: room.doc,
      flush: () => this.flush(planId),
      release: (options) => {
        unhold();
        if (options?.unload) this.unloadIfUnused(room);
        else this.maybeIdle(room);
      },
    };
  }

  /**
   * Closes the extensions (their background jobs finish their writes), then every connection (1001), flushes and
   * releases every plan, and destroys the extensions (the store closes last).
   */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    if (this.keepAlive) clearInterval(this.keepAlive);
    await this.extensions.close();
    this.dueTimes.close();
    this.stopped = true;
    const rooms = [...this.rooms.values()];
    for (const room of rooms) {
      room.cancelIdle();
      for (const conn of [...room.conns]) conn.close(CloseCode.GoingAway, 'Server shutting down.');
    }
    const results = await Promise.allSettled(
      rooms.map(async (room) => {
        try {
          await room.loaded;
        } catch {
          return; // never loaded: nothing to flush
        }
        try {
          await this.extensions.unload(room);
        } finally {
          this.rooms.delete(room.planId);
          room.destroy();
        }
      }),
    );
    await Promise.allSettled([...this.releasing.values()]);
    let failure: unknown = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')?.reason;
    try {
      await this.extensions.destroy();
    } catch (error) {
      failure ??= error;
    }
    if (failure) {
      this.logger.error('shutdown could not flush everything', { error: describeError(failure) });
      throw toStorageError(failure, null);
    }
  }

  private room(planId: string): Room {
    const existing = this.rooms.get(planId);
    if (existing) {
      existing.cancelIdle();
      this.rooms.delete(planId); // most recently used last
      this.rooms.set(planId, existing);
      return existing;
    }
    const room = new Room(
      planId,
      { limits: this.limits, metrics: this.metrics, extensions: this.extensions },
      this.releasing.get(planId),
    );
    this.rooms.set(planId, room);
    room.loaded.then(
      () => this.maybeIdle(room),
      (error: unknown) => {
        this.logger.error('could not load a plan', { plan: planId, error: describeError(error) });
        if (this.rooms.get(planId) === room) this.rooms.delete(planId);
        room.fail(error);
        room.destroy();
      },
    );
    this.evictOverCap(room);
    return room;
  }

  /** Over the cap: unloads the least recently used plans nobody uses, as many as the cap is passed by. */
  private evictOverCap(keep: Room | null): void {
    let over = this.rooms.size - this.evicting.size - this.maxLoadedPlans;
    if (over <= 0 || this.closing) return;
    for (const room of this.rooms.values()) {
      if (over <= 0) break;
      if (room === keep || this.evicting.has(room) || !room.idle || room.state !== 'ready') continue;
      over--;
      this.evicting.add(room);
      room.cancelIdle();
      this.metrics.plansEvictedTotal.inc();
      void this.unload(room).finally(() => this.evicting.delete(room));
    }
  }

  private ended(room: Room | null, conn: Connection): void {
    this.connections.delete(conn);
    if (!room) return;
    room.remove(conn);
    this.maybeIdle(room);
  }

  private maybeIdle(room: Room): void {
    if (this.closing) return;
    room.whenIdle(this.idleUnloadMs, () => void this.unload(room));
    // Over the cap because every plan was in use when the last one loaded: the one now unused may go.
    this.evictOverCap(null);
  }

  /** A plan released with `unload`: it goes now if nobody else uses it, else it waits to be idle like any other. */
  private unloadIfUnused(room: Room): void {
    if (this.closing) return;
    if (!room.idle || room.state !== 'ready') {
      this.maybeIdle(room);
      return;
    }
    room.cancelIdle();
    void this.unload(room);
  }

  // Flushed while still in the map (a client may join meanwhile and keep it), then removed and released.
  private async unload(room: Room): Promise<void> {
    const current = () =>
      room.idle && room.state === 'ready' && this.rooms.get(room.planId) === room && !this.closing;
    if (!current()) return;
    try {
      await this.flush(room.planId);
    } catch (error) {
      this.logger.error('could not flush an idle plan; it stays loaded', {
        plan: room.planId,
        error: describeError(error),
      });
      this.maybeIdle(room); // retried after another idle period
      return;
    }
    if (!current()) return;
    this.rooms.delete(room.planId);
    const planId = room.planId;
    const released: Promise<void> = this.extensions
      .unload(room)
      .catch((error: unknown) => {
        this.logger.error('could not release a plan', { plan: planId, error: describeError(error) });
      })
      .finally(() => {
        room.destroy();
        if (this.releasing.get(planId) === released) this.releasing.delete(planId);
      });
    this.releasing.set(planId, released);
  }

  /** Sends the empty awareness message to every connection that received nothing for `keepAliveMs`. */
  sendKeepAlives(): void {
    const keepAliveMs = this.keepAliveMs;
    if (!(keepAliveMs > 0)) return;
    const now = Date.now();
    const message = encodeKeepAlive();
    for (const conn of this.connections) {
      if (conn.started && now - conn.lastSentAt >= keepAliveMs) conn.send(message);
    }
  }
}

function toStorageError(error: unknown, planId: string | null): CairnError {
  const cause = toCairnError(error);
  if (cause.code === 'storage' || cause.code === 'locked') return cause;
  return new CairnError('storage', cause.message, planId ? { planId } : {}, { cause: error });
}
