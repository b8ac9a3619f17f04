// The shape of a live connection to a Cairn server and the options that open one: what the WebSocket adapter
// implements and what extensions of it (claims) talk to, apart from the implementation so neither imports the other.
import type * as decoding from 'lib0/decoding';
import type { Awareness } from 'y-protocols/awareness';
import type { WebsocketProvider } from 'y-websocket';
import type * as Y from 'yjs';
import * as z from 'zod/mini';
import '../zod-messages.js';
import type { CairnError } from '../errors.js';
import type { Plan } from '../plan.js';

/** Who is here: kept in awareness (never in the doc) under the `presence` field of each client's state. */
export interface Presence {
  id: string;
  name: string;
  kind: 'agent' | 'human';
  /** The task this participant works on now. */
  activeTask?: string | null;
}

export const PresenceSchema = z.object({
  id: z.string().check(z.minLength(1), z.maxLength(200)),
  name: z.string().check(z.maxLength(200)),
  kind: z.enum(['agent', 'human']),
  activeTask: z.optional(z.nullable(z.string().check(z.maxLength(200)))),
});

/** `closed`: refused for good (a 44xx close code) or destroyed; nothing reconnects until `connect()`. */
export type ConnectionStatus = 'connecting' | 'connected' | 'disconnected' | 'closed';

/** The WebSocket constructor to use: the global one in browsers, `ws`'s in Node 20. */
export type WebSocketConstructor = new (url: string, protocols?: string | string[]) => WebSocket;

/**
 * Asked before each (re)connect for the server to use. `failed`: the URL of the socket that just closed (null on
 * the first connect), so a resolver can move away from an instance that went down.
 */
export type ServerUrlResolver = (context: {
  attempt: number;
  failed: string | null;
}) => string | Promise<string>;

export interface ConnectPlanOptions {
  /**
   * The server, e.g. `ws://127.0.0.1:1234` (http(s) URLs are turned into ws(s)). Several URLs (instances of one
   * cluster): the first is tried first and every reconnect moves to the next, round the list, so a client whose
   * instance dies continues on another and resends what that one did not acknowledge. Or a function asked before
   * each (re)connect.
   */
  url: string | readonly string[] | ServerUrlResolver;
  planId: string;
  /** A token, or a function asked before each (re)connect (so an expiring token can be refreshed). */
  token?: string | (() => string | Promise<string>);
  /** `protocol` (default): the subprotocol `cairn.token.<jwt>`, kept out of URLs and logs; `query`: `?token=`. */
  tokenIn?: 'protocol' | 'query';
  /** Required where there is no global WebSocket (Node 20): `WebSocketPolyfill: WebSocket` from `ws`. */
  WebSocketPolyfill?: unknown;
  /** Default: a new Awareness on `doc`. */
  awareness?: Awareness;
  presence?: Presence;
  /** Default true. */
  connect?: boolean;
  /** Cross-tab BroadcastChannel sync. Default: on in a browser window, off elsewhere. */
  disableBc?: boolean;
  /** Each reconnect waits a random delay up to this, so clients do not all return at once. Default 1000 ms. */
  reconnectJitterMs?: number;
  /** Cap of y-websocket's exponential backoff. Default 2500 ms. */
  maxBackoffMs?: number;
  /**
   * A Plan on `doc` whose claims the server decides (`attachClaims`): exclusive while connected, tentative
   * while not. Plans made later on the same doc can be attached with `attachClaims(plan, connection)`.
   */
  plan?: Plan;
}

export interface PlanConnectionEvents {
  status: (status: ConnectionStatus) => void;
  synced: (synced: boolean) => void;
  /** The server refused for good (4401, 4403, ...): reconnecting stopped. */
  closed: (event: { code: number; reason: string; error: CairnError }) => void;
  /** A refused write (read-only), a token or server URL that could not be had, a malformed server message. */
  error: (error: CairnError) => void;
  /** Other participants' presence changed. */
  presence: (peers: Map<number, Presence>) => void;
}

export interface AcknowledgedOptions {
  /**
   * Wait for every edit the doc holds, not only this client's: edits loaded from a local copy that an earlier
   * process wrote (under its own client id) and this connection sends the server. Default false.
   */
  allClients?: boolean;
}

export interface PlanConnection {
  readonly doc: Y.Doc;
  readonly planId: string;
  readonly awareness: Awareness;
  /** The underlying y-websocket provider. */
  readonly provider: WebsocketProvider;
  readonly status: ConnectionStatus;
  /** The server URL of the current (or last) socket; null before the first one opens. */
  readonly serverUrl: string | null;
  /** True once the server's state was received on the current connection. */
  readonly synced: boolean;
  /** Resolves once synced; rejects with CairnError on a permanent refusal, on destroy or after `timeoutMs`. */
  whenSynced(timeoutMs?: number): Promise<void>;
  /**
   * Resolves once the server has durably stored every edit this doc made (its own clientID) before the call, or
   * with `allClients` every edit the doc held then, whoever made it. Waits through disconnects; rejects with
   * CairnError `forbidden` (read-only), `storage` (the server's store failed), `limit` (`timeoutMs`, default
   * 30 s), `unauthorized`, or `invalid_transition` (destroyed).
   */
  whenAcknowledged(timeoutMs?: number, options?: AcknowledgedOptions): Promise<void>;
  /** Sets (or with null clears) this client's presence. Throws CairnError `invalid_argument` for a bad one. */
  setPresence(presence: Presence | null): void;
  /** Other clients' presence, by awareness client id. */
  peers(): Map<number, Presence>;
  on<E extends keyof PlanConnectionEvents>(event: E, listener: PlanConnectionEvents[E]): () => void;
  /**
   * Receives Cairn messages (type 100) of an extension's sub-type (3 and up, e.g. claims), the sub-type already
   * read. Returns an unsubscribe function.
   */
  onCairnMessage(subType: number, handler: (decoder: decoding.Decoder) => void): () => void;
  /**
   * Sends a raw message if the socket is open and synced (so it follows this client's sync step 2); false if not
   * (wait for the `synced` event and send again).
   */
  send(message: Uint8Array): boolean;
  connect(): void;
  disconnect(): void;
  /** Disconnects (telling peers this client left) and rejects pending waits. The doc is left alone. */
  destroy(): void;
}
