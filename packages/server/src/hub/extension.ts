// The one way to add a feature to the sync hub: an Extension of optional lifecycle hooks, each handed a narrow
// view of what it may touch. The store, metrics, claims, wake-ups and auto-close are extensions; so is a relay
// that shares plans between servers. Order and guarantees: docs/decisions/015-hub-extensions.md.
import type { TransactionOrigin } from '@cairn/core/protocol';
import type * as decoding from 'lib0/decoding';
import type { Awareness } from 'y-protocols/awareness';
import type * as Y from 'yjs';
import type { Grant, Role } from '../auth.js';
import type { Logger } from '../log.js';
import type { Counter, MetricsRegistry } from '../metrics.js';
import type { DueTimes } from './due-times.js';
import type { TaskChangeSubscription } from './task-changes.js';

/** A client connection as extensions see it (hub/connection.ts). */
export interface RoomConnection {
  readonly id: number;
  readonly grant: Grant;
  /** The connection's own actor (`user:<sub>`, or the sub when it already names one). */
  readonly actor: string;
  readonly canWrite: boolean;
  readonly isOpen: boolean;
  /** Awareness client ids this connection speaks for. */
  readonly awarenessClients: ReadonlySet<number>;
  send(data: Uint8Array): void;
}

/** A loaded plan as extensions see it. */
export interface PlanRoom {
  readonly planId: string;
  /** Write with a transaction origin naming the actor: stored and relayed like a client's edit (`local`). */
  readonly doc: Y.Doc;
  /**
   * The plan's presence. A relay may observe its `update` event and apply other servers' presence with
   * `applyAwarenessUpdate(awareness, update, origin)`: the room relays it to its clients like a client's.
   */
  readonly awareness: Awareness;
  readonly conns: ReadonlySet<RoomConnection>;
  /**
   * Applies updates that come from outside this hub (another server): relayed to every client and given to every
   * extension's `change` with origin `{ source: 'remote', via, stored }` (core's `remoteOrigin`). `stored`: they are durable already
   * (stored by the server they entered through), so this hub's store leaves them out. Several updates (a relay's
   * read of them) are applied in one transaction: each is relayed to the clients as it is integrated, and the
   * doc's observers and `change` run once, for all of them. Throws on a malformed update (once the others are
   * in), and CairnError `conflict` once the plan has unloaded (look the room up again with `host.room`).
   */
  applyRemote(updates: Uint8Array | readonly Uint8Array[], via: string, stored?: boolean): void;
}

/** A plan being loaded, before any client sees it. */
export interface LoadingRoom {
  readonly planId: string;
  /** The plan's document: read it (a store keeps a snapshot of its content), never write it. */
  readonly doc: Y.Doc;
  /** The doc's whole state so far (a store keeps this to compact later, while the plan stays loaded). */
  snapshot(): Uint8Array;
  /** Applies stored updates: not stored again, not relayed, not given to `change`. */
  apply(updates: readonly Uint8Array[]): void;
}

/** One update applied to a loaded plan, after it was relayed to the room's clients. */
export interface RoomChange {
  readonly room: PlanRoom;
  readonly update: Uint8Array;
  /**
   * Where it came from: a client's sync message (`connection`), server-side code through `openPlan` (`local` with
   * the actor, `undo`, or `unknown` for an origin naming none), or `remote` from `PlanRoom.applyRemote`.
   */
  readonly origin: TransactionOrigin<RoomConnection>;
}

/** A Cairn message (type 100) of a sub-type the extension routes, its sub-type already read. */
export interface RoomMessage {
  readonly room: PlanRoom;
  readonly connection: RoomConnection;
  readonly subType: number;
  readonly decoder: decoding.Decoder;
}

/** A request the authenticator has granted: a socket before its upgrade, or an HTTP request. */
export interface AuthRequest {
  readonly planId: string;
  readonly grant: Grant;
  readonly needs: Role;
}

/** A server-side user of a plan's doc (the HTTP API, a sweeper): edits are stored and relayed like a client's. */
export interface PlanHandle {
  readonly planId: string;
  /** Write with a transaction origin naming the actor (`user:x`, `wake`): the hub relays it to every client. */
  readonly doc: Y.Doc;
  /** Resolves once every edit made so far is durably stored. */
  flush(): Promise<void>;
  /**
   * Lets the plan unload once no one uses it. Idempotent. `unload`: a document used now and then (a plan's
   * traces) unloads as soon as no one else uses it (flushed first) instead of staying loaded for the idle period.
   */
  release(options?: { unload?: boolean }): void;
}

/** What the hub lends an extension (given to the factory passed to `SyncHub.use`). */
export interface ExtensionHost {
  /** True when the hub has no auth: every request is `admin` and names whom it acts for. */
  readonly open: boolean;
  readonly logger: Logger;
  /** Where an extension registers its own metrics. */
  readonly registry: MetricsRegistry;
  readonly metrics: { readonly errorsTotal: Counter };
  /** The plan's room if it is loaded and ready. */
  room(planId: string): PlanRoom | undefined;
  /** Loads a plan for a server-side read or write; it stays loaded until `release()`. */
  openPlan(planId: string): Promise<PlanHandle>;
  /** Resolves once every edit of a loaded plan so far is durably stored (every extension's `store`). */
  flush(planId: string): Promise<void>;
  /** The hub's one due-time index: an extension keeps its due times in a queue of its own there. */
  readonly dueTimes: DueTimes;
  /** Subscribes to the task changes (of the fields asked for) of every loaded plan; returns the unsubscribe. */
  onTaskChanges(subscription: TaskChangeSubscription): () => void;
}

/**
 * A feature of the hub. Every hook is optional; hooks of all extensions run in `priority` order, higher first
 * (default 100; the store runs at 1000, so it loads first and stores first).
 */
export interface Extension {
  /** For logs and errors. */
  readonly name: string;
  readonly priority?: number;
  /**
   * Cairn message sub-types (3 and up) this extension answers in `message`. Several extensions may route one
   * sub-type: the highest priority sees the message first and may answer it or pass it on.
   */
  readonly cairnMessages?: readonly number[];
  /** After the authenticator granted a request: throw a CairnError (e.g. `forbidden`) to refuse it. */
  authenticate?(request: AuthRequest): void | Promise<void>;
  /** Fills a plan being loaded (a store applies its updates). A rejection fails the load: clients get 4503. */
  load?(room: LoadingRoom): void | Promise<void>;
  /** The plan is loaded and about to take its first client: watch the doc here (observers die with it). */
  loaded?(room: PlanRoom): void;
  /** Every update applied to a loaded plan, in order, synchronously, once relayed to the room's clients. */
  change?(change: RoomChange): void;
  /**
   * A Cairn message of one of `cairnMessages`, in the socket's order. Return `'pass'` to hand it to the next
   * extension routing the sub-type (each reads it from the start); e.g. veto some claims, let the arbiter decide
   * the rest. Throw for bad input (closes with 4400).
   */
  message?(message: RoomMessage): 'pass' | undefined;
  /** Make every change of the plan so far durable (a write acknowledgement, a flush, an unload wait for it). */
  store?(room: { readonly planId: string }): Promise<void>;
  /** The plan is being unloaded (idle, or the hub closing), after `store`; its doc is destroyed afterwards. */
  unload?(room: PlanRoom): Promise<void> | void;
  /** The hub is closing: stop background jobs and finish their writes; plans are still loaded. */
  close?(): Promise<void> | void;
  /** Last: every plan is unloaded; release what the extension holds (the store closes here). */
  destroy?(): Promise<void> | void;
}
