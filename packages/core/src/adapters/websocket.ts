// @cairn/core/websocket: syncs a plan's Y.Doc with a Cairn server over y-websocket, with a token, reconnects
// spread by jitter, presence in awareness, and `whenAcknowledged()`: the server has durably stored my edits.
// Imports no Node module and no `ws`: in Node 20 the caller passes `WebSocketPolyfill`.
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import { Awareness } from 'y-protocols/awareness';
import * as syncProtocol from 'y-protocols/sync';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { CairnError, ERROR_CODES, type ErrorCode } from '../errors.js';
import { registerOrigin } from '../origins.js';
import {
  AUTH_PERMISSION_DENIED,
  CloseCode,
  decodeCairnBody,
  type decodeCairnMessage,
  encodeAckRequest,
  isAckMessageType,
  MessageType,
  SUBPROTOCOL,
  SYNC_PATH_PREFIX,
  TOKEN_SUBPROTOCOL_PREFIX,
} from '../protocol.js';
import { describeIssues } from '../validate.js';
import { attachClaims } from './claims-client.js';
import {
  type AcknowledgedOptions,
  type ConnectionStatus,
  type ConnectPlanOptions,
  type PlanConnection,
  type PlanConnectionEvents,
  type Presence,
  PresenceSchema,
  type ServerUrlResolver,
  type WebSocketConstructor,
} from './connection.js';

export { attachClaims, type ClaimClientOptions } from './claims-client.js';
export * from './connection.js';

const DEFAULT_TIMEOUT_MS = 30_000;
/** How often an ack that does not cover our edits yet triggers a resend of what the server lacks. */
const MAX_REPAIRS = 3;

interface AckWaiter {
  /** Per client id, the clock the server's stored state must reach. */
  target: Map<number, number>;
  resolve: () => void;
  reject: (error: CairnError) => void;
  /** The request that carries it on the current socket, or null if it must be (re)sent. */
  reqId: number | null;
  repairs: number;
}

/** Connects `doc` to the plan `planId` on a Cairn server. */
export function connectPlan(doc: Y.Doc, options: ConnectPlanOptions): PlanConnection {
  return new Connection(doc, options);
}

class Connection implements PlanConnection {
  readonly doc: Y.Doc;
  readonly planId: string;
  readonly awareness: Awareness;
  readonly provider: WebsocketProvider;
  private currentStatus: ConnectionStatus = 'disconnected';
  private currentUrl: string | null = null;
  private readonly listeners = new Map<keyof PlanConnectionEvents, Set<(...args: unknown[]) => void>>();
  private readonly waiters = new Set<AckWaiter>();
  private readonly syncWaiters = new Set<(error?: CairnError) => void>();
  private readonly extensions = new Map<number, (decoder: decoding.Decoder) => void>();
  private readonly requests = new Map<number, Set<AckWaiter>>();
  private nextReqId = 1;
  private destroyed = false;
  private readonly ownsAwareness: boolean;
  /** Undoes what was attached at construction (the plan's claims). */
  private readonly offs: Array<() => void> = [];

  constructor(doc: Y.Doc, options: ConnectPlanOptions) {
    this.doc = doc;
    this.planId = parsePlanId(options.planId);
    const WS = (options.WebSocketPolyfill ?? globalThis.WebSocket) as WebSocketConstructor | undefined;
    if (typeof WS !== 'function') {
      throw new CairnError(
        'invalid_argument',
        'This runtime has no global WebSocket (Node < 22): pass WebSocketPolyfill, e.g. `WebSocket` from the ws package.',
        { field: 'WebSocketPolyfill' },
      );
    }
    if (options.presence) parsePresence(options.presence);
    this.ownsAwareness = !options.awareness;
    this.awareness = options.awareness ?? new Awareness(doc);
    if (options.presence) this.awareness.setLocalStateField('presence', options.presence);

    const token = options.token;
    const servers = serverPicker(options.url);
    const socketClass = jitteredSocket(WS, {
      servers,
      onUrl: (url) => {
        this.currentUrl = url;
      },
      jitterMs: options.reconnectJitterMs ?? 1000,
      tokenIn: options.tokenIn ?? 'protocol',
      token: typeof token === 'function' ? token : () => token ?? null,
      onOpenError: (error) => this.emit('error', error),
    });
    this.provider = new WebsocketProvider(
      `${servers.base}${SYNC_PATH_PREFIX.slice(0, -1)}`,
      encodeURIComponent(this.planId),
      doc,
      {
        connect: false,
        awareness: this.awareness,
        WebSocketPolyfill: socketClass as unknown as typeof WebSocket,
        disableBc: options.disableBc ?? typeof window === 'undefined',
        maxBackoffTime: options.maxBackoffMs ?? 2500,
        shouldReconnect: (event) => {
          // A refreshed token may fix a 4401; a rate limit passes. Other 44xx codes are final.
          if (event.code === CloseCode.Unauthorized) return typeof token === 'function';
          if (event.code === CloseCode.RateLimited) return true;
          return !(event.code >= 4400 && event.code < 4500);
        },
      },
    );
    // y-websocket applies the server's updates with the provider as origin.
    registerOrigin(this.provider, { source: 'connection', connection: this.provider });
    this.provider.messageHandlers[MessageType.Cairn] = (_encoder, decoder) => this.receiveCairn(decoder);
    this.provider.messageHandlers[MessageType.Auth] = (_encoder, decoder) => this.onAuthMessage(decoder);
    this.provider.on('status', ({ status }) => {
      // The server dropped our presence when the last socket closed, keeping its clock; y-websocket resends it
      // with that same clock, which the server ignores until the next renewal (15 s). A new clock is heard now.
      const state = this.awareness.getLocalState();
      if (status === 'connected' && state !== null) this.awareness.setLocalState(state);
      this.setStatus(status);
    });
    this.provider.on('sync', (synced) => {
      this.emit('synced', synced);
      if (synced) this.sendAckRequests();
    });
    this.provider.on('connection-close', () => {
      // Requests on the old socket will never be answered: send them again on the next one.
      this.requests.clear();
      for (const waiter of this.waiters) waiter.reqId = null;
    });
    this.provider.on('closed', ({ code, reason }) => {
      const error = closeError(code, reason);
      this.setStatus('closed');
      this.emit('closed', { code, reason, error });
      for (const waiter of [...this.waiters]) waiter.reject(error);
    });
    this.awareness.on('change', this.onAwarenessChange);
    if (options.plan) this.offs.push(attachClaims(options.plan, this));
    if (options.connect ?? true) this.connect();
  }

  get status(): ConnectionStatus {
    return this.currentStatus;
  }

  get synced(): boolean {
    return this.provider.synced;
  }

  get serverUrl(): string | null {
    return this.currentUrl;
  }

  connect(): void {
    if (this.destroyed) throw new CairnError('invalid_transition', 'This connection was destroyed.');
    this.provider.connect();
  }

  disconnect(): void {
    this.provider.disconnect();
  }

  whenSynced(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<void> {
    if (this.provider.synced) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const done = (error?: CairnError) => {
        this.syncWaiters.delete(done);
        clearTimeout(timer);
        offSync();
        offClosed();
        if (error) reject(error);
        else resolve();
      };
      const timer = setTimeout(
        () =>
          done(
            new CairnError('limit', `Not synced with plan "${this.planId}" after ${timeoutMs} ms.`, {
              timeoutMs,
            }),
          ),
        timeoutMs,
      );
      const offSync = this.on('synced', (synced) => {
        if (synced) done();
      });
      const offClosed = this.on('closed', ({ error }) => done(error));
      this.syncWaiters.add(done);
      if (this.destroyed) done(destroyedError());
    });
  }

  whenAcknowledged(timeoutMs = DEFAULT_TIMEOUT_MS, options: AcknowledgedOptions = {}): Promise<void> {
    if (this.destroyed) return Promise.reject(destroyedError());
    const target = options.allClients
      ? Y.decodeStateVector(Y.encodeStateVector(this.doc))
      : new Map([[this.doc.clientID, Y.getState(this.doc.store, this.doc.clientID)]]);
    if ([...target.values()].every((clock) => clock === 0)) return Promise.resolve(); // nothing to store
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        settle();
        reject(
          new CairnError(
            'limit',
            `The server did not acknowledge the edits to plan "${this.planId}" within ${timeoutMs} ms ` +
              `(status: ${this.currentStatus}).`,
            { timeoutMs },
          ),
        );
      }, timeoutMs);
      const settle = () => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
      };
      const waiter: AckWaiter = {
        target,
        reqId: null,
        repairs: 0,
        resolve: () => {
          settle();
          resolve();
        },
        reject: (error) => {
          settle();
          reject(error);
        },
      };
      this.waiters.add(waiter);
      this.sendAckRequests();
    });
  }

  setPresence(presence: Presence | null): void {
    if (presence !== null) parsePresence(presence);
    this.awareness.setLocalStateField('presence', presence);
  }

  peers(): Map<number, Presence> {
    const peers = new Map<number, Presence>();
    for (const [clientId, state] of this.awareness.getStates()) {
      if (clientId === this.doc.clientID) continue;
      const parsed = PresenceSchema.safeParse((state as { presence?: unknown }).presence);
      if (parsed.success) peers.set(clientId, parsed.data);
    }
    return peers;
  }

  on<E extends keyof PlanConnectionEvents>(event: E, listener: PlanConnectionEvents[E]): () => void {
    let set = this.listeners.get(event);
    if (!set) {
      set = new Set();
      this.listeners.set(event, set);
    }
    const fn = listener as unknown as (...args: unknown[]) => void;
    set.add(fn);
    return () => set.delete(fn);
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const off of this.offs.splice(0)) off();
    this.awareness.off('change', this.onAwarenessChange);
    this.provider.destroy(); // disconnects, sending a "left" awareness update first
    if (this.ownsAwareness) this.awareness.destroy();
    this.setStatus('closed');
    for (const waiter of [...this.waiters]) waiter.reject(destroyedError());
    for (const done of [...this.syncWaiters]) done(destroyedError());
    this.listeners.clear();
  }

  private emit<E extends keyof PlanConnectionEvents>(
    event: E,
    ...args: Parameters<PlanConnectionEvents[E]>
  ): void {
    const set = this.listeners.get(event);
    if (!set || set.size === 0) {
      if (event === 'error')
        console.warn(`[cairn] plan "${this.planId}": ${(args[0] as CairnError).message}`);
      return;
    }
    for (const listener of [...set]) listener(...args);
  }

  private setStatus(status: ConnectionStatus): void {
    if (this.currentStatus === status || (this.currentStatus === 'closed' && status === 'disconnected'))
      return;
    this.currentStatus = status;
    this.emit('status', status);
  }

  // One request for every waiter not yet asked on this socket. Sent only once synced: the server processes a
  // socket's messages in order, and by then our sync step 2 (what we made offline) is ahead of the request.
  private sendAckRequests(): void {
    const ws = this.provider.ws;
    if (!this.provider.synced || !ws || ws.readyState !== ws.OPEN) return;
    const batch = new Set([...this.waiters].filter((w) => w.reqId === null));
    if (batch.size === 0) return;
    const reqId = this.nextReqId++;
    for (const waiter of batch) waiter.reqId = reqId;
    this.requests.set(reqId, batch);
    ws.send(encodeAckRequest(reqId));
  }

  onCairnMessage(subType: number, handler: (decoder: decoding.Decoder) => void): () => void {
    if (isAckMessageType(subType)) {
      throw new CairnError('invalid_argument', `Cairn message sub-types 0 to 2 are the acknowledgement's.`, {
        subType,
      });
    }
    this.extensions.set(subType, handler);
    return () => {
      if (this.extensions.get(subType) === handler) this.extensions.delete(subType);
    };
  }

  send(message: Uint8Array): boolean {
    const ws = this.provider.ws;
    if (!this.provider.synced || !ws || ws.readyState !== ws.OPEN) return false;
    ws.send(message);
    return true;
  }

  private receiveCairn(decoder: decoding.Decoder): void {
    let message: ReturnType<typeof decodeCairnMessage>;
    try {
      const subType = decoding.readVarUint(decoder);
      const extension = this.extensions.get(subType);
      if (extension) {
        extension(decoder);
        return;
      }
      message = decodeCairnBody(subType, decoder);
    } catch (error) {
      this.emit(
        'error',
        new CairnError('internal', `Malformed message from the server: ${(error as Error).message}`),
      );
      return;
    }
    const batch = this.requests.get(message.reqId);
    this.requests.delete(message.reqId);
    if (message.type === 'error') {
      const code = (ERROR_CODES as readonly string[]).includes(message.code)
        ? (message.code as ErrorCode)
        : 'internal';
      for (const waiter of batch ?? []) waiter.reject(new CairnError(code, message.message));
      return;
    }
    if (message.type !== 'ack') return;
    const stored = Y.decodeStateVector(message.stateVector);
    for (const waiter of [...this.waiters]) if (covers(stored, waiter.target)) waiter.resolve();
    // Still missing some of ours (they reached the server out of band, or were held back): send the server
    // what it lacks according to the state it just reported, then ask again.
    const left = [...(batch ?? [])].filter((w) => this.waiters.has(w) && w.repairs < MAX_REPAIRS);
    const ws = this.provider.ws;
    if (left.length === 0 || !ws || ws.readyState !== ws.OPEN) return;
    const encoder = encoding.createEncoder();
    encoding.writeVarUint(encoder, MessageType.Sync);
    syncProtocol.writeSyncStep2(encoder, this.doc, message.stateVector);
    ws.send(encoding.toUint8Array(encoder));
    for (const waiter of left) {
      waiter.repairs++;
      waiter.reqId = null;
    }
    this.sendAckRequests();
  }

  private onAuthMessage(decoder: decoding.Decoder): void {
    if (decoding.readVarUint(decoder) !== AUTH_PERMISSION_DENIED) return;
    const reason = decoding.readVarString(decoder);
    this.emit('error', new CairnError('forbidden', reason));
  }

  private readonly onAwarenessChange = ({ added, updated, removed }: AwarenessChange): void => {
    const others = [...added, ...updated, ...removed].some((id) => id !== this.doc.clientID);
    if (others) this.emit('presence', this.peers());
  };
}

interface AwarenessChange {
  added: number[];
  updated: number[];
  removed: number[];
}

function covers(stored: Map<number, number>, target: Map<number, number>): boolean {
  for (const [client, clock] of target) if ((stored.get(client) ?? 0) < clock) return false;
  return true;
}

function parsePlanId(planId: unknown): string {
  if (typeof planId !== 'string' || planId.length === 0) {
    throw new CairnError('invalid_argument', 'planId must be a non-empty string, e.g. "acme:conv:7".', {
      field: 'planId',
    });
  }
  return planId;
}

function parsePresence(presence: unknown): Presence {
  const parsed = PresenceSchema.safeParse(presence);
  if (!parsed.success) {
    throw new CairnError(
      'invalid_argument',
      'presence must be { id: string, name: string, kind: "agent" | "human", activeTask?: string | null }: ' +
        describeIssues(parsed.error, { root: 'presence' }).text,
      { field: 'presence' },
    );
  }
  return parsed.data;
}

function toWsUrl(url: string): string {
  return url.replace(/^http(s?):\/\//i, 'ws$1://').replace(/\/+$/, '');
}

function destroyedError(): CairnError {
  return new CairnError('invalid_transition', 'The connection was destroyed before the wait ended.');
}

/** The CairnError for a close code the server sent. */
export function closeError(code: number, reason: string): CairnError {
  const byCode: Record<number, ErrorCode> = {
    [CloseCode.Unauthorized]: 'unauthorized',
    [CloseCode.Forbidden]: 'forbidden',
    [CloseCode.BadMessage]: 'invalid_argument',
    [CloseCode.MessageTooLarge]: 'limit',
    [CloseCode.PlanTooLarge]: 'limit',
    [CloseCode.RateLimited]: 'limit',
  };
  return new CairnError(byCode[code] ?? 'internal', reason || `The server closed the connection (${code}).`, {
    closeCode: code,
  });
}

/** Which server each socket opens on: `base` is the URL the provider is built with, replaced at each open. */
interface ServerPicker {
  readonly base: string;
  /** The server for the next socket; `failed` is the previous socket's (null for the first). */
  next(failed: string | null): Promise<string>;
}

/** One URL, a list tried in turn (every reconnect moves on, so a dead instance is left at once), or a resolver. */
function serverPicker(url: ConnectPlanOptions['url']): ServerPicker {
  const invalid = () =>
    new CairnError(
      'invalid_argument',
      'url must be a server URL (e.g. "ws://127.0.0.1:1234"), a non-empty list of them, or a function returning one.',
      { field: 'url' },
    );
  if (typeof url === 'function') {
    const resolve: ServerUrlResolver = url;
    let attempt = 0;
    return {
      base: 'ws://resolved.invalid',
      next: async (failed) => {
        const picked = await resolve({ attempt: attempt++, failed });
        if (typeof picked !== 'string' || picked.length === 0) throw invalid();
        return toWsUrl(picked);
      },
    };
  }
  const list = typeof url === 'string' ? [url] : url;
  if (
    !Array.isArray(list) ||
    list.length === 0 ||
    list.some((u) => typeof u !== 'string' || u.length === 0)
  ) {
    throw invalid();
  }
  const urls = list.map(toWsUrl);
  let index = -1;
  return {
    base: urls[0]!,
    next: async (failed) => {
      index = failed === null && index < 0 ? 0 : (index + 1) % urls.length;
      return urls[index]!;
    },
  };
}

interface JitterOptions {
  servers: ServerPicker;
  /** The server a socket is opened on. */
  onUrl: (url: string) => void;
  jitterMs: number;
  tokenIn: 'protocol' | 'query';
  token: () => string | null | Promise<string | null>;
  onOpenError: (error: CairnError) => void;
}

/**
 * A WebSocket class for y-websocket that opens the real socket after a random delay on every reconnect (the
 * first connect is immediate) and adds the token. y-websocket's own backoff has no jitter: after a server
 * restart every client would return in the same millisecond.
 */
function jitteredSocket(WS: WebSocketConstructor, options: JitterOptions) {
  let attempts = 0;
  let previous: string | null = null;
  return class JitteredWebSocket {
    static readonly CONNECTING = 0;
    static readonly OPEN = 1;
    static readonly CLOSING = 2;
    static readonly CLOSED = 3;
    readonly CONNECTING = 0;
    readonly OPEN = 1;
    readonly CLOSING = 2;
    readonly CLOSED = 3;
    binaryType: BinaryType = 'arraybuffer';
    onopen: ((event: Event) => void) | null = null;
    onmessage: ((event: MessageEvent) => void) | null = null;
    onclose: ((event: CloseEvent) => void) | null = null;
    onerror: ((event: Event) => void) | null = null;
    private real: WebSocket | null = null;
    private cancelled = false;
    private timer: ReturnType<typeof setTimeout> | null = null;

    constructor(url: string) {
      const delay = attempts++ === 0 ? 0 : Math.random() * options.jitterMs;
      if (delay === 0) void this.open(url);
      else this.timer = setTimeout(() => void this.open(url), delay);
    }

    get readyState(): number {
      if (this.real) return this.real.readyState;
      return this.cancelled ? 3 : 0;
    }

    get bufferedAmount(): number {
      return this.real?.bufferedAmount ?? 0;
    }

    send(data: Uint8Array | ArrayBuffer): void {
      this.real?.send(data);
    }

    close(code?: number, reason?: string): void {
      this.cancelled = true;
      if (this.timer) clearTimeout(this.timer);
      this.real?.close(code, reason);
    }

    private async open(url: string): Promise<void> {
      this.timer = null;
      let server: string;
      let token: string | null;
      try {
        server = await options.servers.next(previous);
      } catch (error) {
        this.failOpen(
          error instanceof CairnError
            ? error
            : new CairnError('invalid_argument', `Could not pick a server: ${(error as Error).message}`, {
                field: 'url',
              }),
        );
        return;
      }
      try {
        token = await options.token();
      } catch (error) {
        this.failOpen(
          new CairnError(
            'unauthorized',
            `Could not get a token: ${(error as Error).message}`,
            {},
            { cause: error },
          ),
        );
        return;
      }
      if (this.cancelled) return;
      previous = server;
      options.onUrl(server);
      let target = server + url.slice(options.servers.base.length);
      const protocols: string[] = [];
      if (token && options.tokenIn === 'query') {
        target += `${url.includes('?') ? '&' : '?'}token=${encodeURIComponent(token)}`;
      } else if (token) {
        protocols.push(SUBPROTOCOL, TOKEN_SUBPROTOCOL_PREFIX + token);
      }
      const real = protocols.length > 0 ? new WS(target, protocols) : new WS(target);
      real.binaryType = this.binaryType;
      real.onopen = (event) => this.onopen?.(event);
      real.onmessage = (event) => this.onmessage?.(event);
      real.onclose = (event) => this.onclose?.(event);
      real.onerror = (event) => this.onerror?.(event);
      this.real = real;
    }

    /** Reported, then closed as a lost connection: y-websocket retries with its backoff. */
    private failOpen(error: CairnError): void {
      options.onOpenError(error);
      if (this.cancelled) return;
      this.cancelled = true;
      this.onclose?.({ code: 1006, reason: error.message.slice(0, 120), wasClean: false } as CloseEvent);
    }
  };
}
