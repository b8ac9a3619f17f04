// One open plan in this tab: the Y.Doc stored in IndexedDB (so it works offline and survives a reload), synced
// with the server over WebSocket, the person's Plan and Chat on it, awareness for presence, and the sync state
// a person sees (offline, syncing, all changes saved on the server: the last one from whenAcknowledged).
import { type CairnError, type Chat, createChat, createPlan, type Plan } from '@cairn/core';
import { type IndexedDBPersistence, openIndexedDBPersistence } from '@cairn/core/indexeddb';
import { scopeOf, skillsDocId, traceDocId } from '@cairn/core/learning';
import { connectPlan, type PlanConnection, type Presence } from '@cairn/core/websocket';
import { Awareness } from 'y-protocols/awareness';
import * as Y from 'yjs';
import { type Identity, userActor } from './identity.js';

export type SyncState = 'connecting' | 'offline' | 'syncing' | 'saved' | 'refused';

export interface SyncView {
  state: SyncState;
  /** A sentence for people: what the state means for their edits. */
  detail: string;
}

export interface SessionOptions {
  planId: string;
  identity: Identity;
  /** The server's origin; default the page's own. */
  serverUrl?: string;
  token?: string;
}

export class Session {
  readonly planId: string;
  readonly identity: Identity;
  /** The token for a server that requires one (also sent to the server's model proxy). */
  readonly token: string | null;
  readonly doc = new Y.Doc();
  readonly awareness: Awareness;
  readonly plan: Plan;
  readonly chat: Chat;
  readonly persistence: IndexedDBPersistence;
  /**
   * The plan's trace of tool calls: a document of its own, synced beside the plan and stored in a database of its
   * own in this browser, so calls made offline survive a reload and reach the server on the next connection. It is
   * bounded (500 calls), and a failure to store it never touches the plan's own storage.
   */
  readonly traces = new Y.Doc();
  /** Opened with the first call made here (or at load, when one is stored): a plan only read costs no database. */
  private tracesPersistence: IndexedDBPersistence | null = null;
  /** The learned skills of the plan's scope (read-only: the server writes them). */
  readonly skills = new Y.Doc();
  readonly scope: string;
  connection: PlanConnection | null = null;
  /** A storage or sync problem to show, if any. */
  problem: string | null = null;

  private view: SyncView = { state: 'connecting', detail: 'Connecting to the server…' };
  private readonly listeners = new Set<(view: SyncView) => void>();
  /** Our own edits (this doc's clientID clock) the server has confirmed storing. */
  private acknowledged = 0;
  private ackInFlight = false;
  private lastAttempt = '';
  /** Counts connections, so a new one retries an acknowledgement that failed on the last. */
  private connections = 0;
  private wasOffline = false;

  constructor(options: SessionOptions) {
    this.planId = options.planId;
    this.identity = options.identity;
    this.token = options.token ?? null;
    // Persistence first, before anything can write, so no update escapes IndexedDB.
    this.persistence = openIndexedDBPersistence()(`cairn-demo:${options.planId}`, this.doc);
    this.persistence.onError((error: CairnError) =>
      this.fail(`This browser could not store the plan: ${error.message}`),
    );
    this.traces.on('update', (_update: Uint8Array, _origin: unknown, _doc: Y.Doc, tr: Y.Transaction) => {
      if (tr.local) this.storeTraces();
    });
    this.scope = scopeOf(options.planId);
    this.awareness = new Awareness(this.doc);
    this.plan = createPlan({ doc: this.doc, actor: userActor(options.identity) });
    this.chat = createChat(this.doc, { actor: userActor(options.identity) });
    this.doc.on('update', () => {
      if (this.ownClock() > this.acknowledged) this.refresh();
    });
  }

  /** Loads the stored plan, then connects. A server that cannot be reached leaves the plan working offline. */
  async open(options: SessionOptions): Promise<void> {
    try {
      await this.persistence.whenLoaded;
    } catch (error) {
      this.fail(`The copy of this plan in this browser could not be read: ${(error as Error).message}`);
    }
    // The trace's stored calls are merged before it syncs; one that cannot be read is only a lost history.
    if (await this.tracesStored()) await this.storeTraces().whenLoaded.catch(() => undefined);
    const presence: Presence = { id: userActor(this.identity), name: this.identity.name, kind: 'human' };
    const connection = connectPlan(this.doc, {
      url: options.serverUrl ?? location.origin,
      planId: this.planId,
      awareness: this.awareness,
      presence,
      ...(options.token ? { token: options.token } : {}),
    });
    this.connection = connection;
    for (const [doc, planId] of [
      [this.traces, traceDocId(this.planId)],
      [this.skills, skillsDocId(this.scope)],
    ] as const) {
      connectPlan(doc, {
        url: options.serverUrl ?? location.origin,
        planId,
        ...(options.token ? { token: options.token } : {}),
      });
    }
    connection.on('status', (status) => {
      if (status === 'connected') this.connections++;
      this.refresh();
    });
    connection.on('synced', () => this.refresh());
    // A socket that never opened emits no "disconnected" (y-websocket only retries): a failed attempt is offline.
    connection.provider.on('connection-close', () => {
      this.wasOffline = true;
      this.refresh();
    });
    connection.on('closed', ({ error }) => this.fail(`The server refused this plan: ${error.message}`));
    connection.on('error', (error) => this.fail(error.message));
    this.refresh();
  }

  get sync(): SyncView {
    return this.view;
  }

  onSync(listener: (view: SyncView) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Sets a field of this tab's awareness state (the person's presence, the agent's, what is being edited). */
  setAwareness(field: string, value: unknown): void {
    this.awareness.setLocalStateField(field, value);
  }

  /** Waits until IndexedDB holds every edit so far (before a reload, say). */
  async flush(): Promise<void> {
    await Promise.all([this.persistence.flush(), this.tracesPersistence?.flush()]);
  }

  private get tracesDatabase(): string {
    return `cairn-demo:${traceDocId(this.planId)}`;
  }

  private storeTraces(): IndexedDBPersistence {
    if (!this.tracesPersistence) {
      // Opened on a document that may already hold calls: it stores them all first.
      this.tracesPersistence = openIndexedDBPersistence()(this.tracesDatabase, this.traces);
      this.tracesPersistence.onError((error: CairnError) =>
        this.fail(`This browser could not store the agent's tool calls: ${error.message}`),
      );
    }
    return this.tracesPersistence;
  }

  /** Whether this browser holds a stored trace for the plan (asked without creating its database). */
  private async tracesStored(): Promise<boolean> {
    try {
      const databases = await indexedDB.databases();
      return databases.some((d) => d.name === this.tracesDatabase);
    } catch {
      return false;
    }
  }

  private ownClock(): number {
    return Y.getState(this.doc.store, this.doc.clientID);
  }

  private fail(message: string): void {
    this.problem = message;
    this.refresh();
  }

  private refresh(): void {
    const conn = this.connection;
    const status = conn?.status ?? 'connecting';
    if (status === 'connected') this.wasOffline = false;
    if (status === 'disconnected') this.wasOffline = true;
    const pending = this.ownClock() > this.acknowledged;
    let next: SyncView;
    if (status === 'closed') {
      next = {
        state: 'refused',
        detail: 'Not syncing: the server refused this plan. Edits stay in this browser.',
      };
    } else if (status !== 'connected') {
      // Reconnect attempts flip between connecting and disconnected: once a connection failed, say offline.
      next = this.wasOffline
        ? {
            state: 'offline',
            detail: pending
              ? 'Offline: your edits are kept in this browser and sent when the server is back.'
              : 'Offline: you can keep working; edits are kept in this browser.',
          }
        : { state: 'connecting', detail: 'Connecting to the server…' };
    } else if (!conn?.synced || pending) {
      next = { state: 'syncing', detail: 'Syncing with the server…' };
      if (conn?.synced) this.requestAck();
    } else {
      next = { state: 'saved', detail: 'All changes saved on the server.' };
    }
    if (this.problem) next = { ...next, detail: `${next.detail} ${this.problem}` };
    if (next.state !== this.view.state || next.detail !== this.view.detail) {
      this.view = next;
      for (const listener of this.listeners) listener(next);
    }
  }

  /**
   * Asks the server to confirm it stored our edits so far. One request at a time; after a failure the next
   * attempt waits for a new edit or a new connection, so a refusal cannot turn into a loop.
   */
  private requestAck(): void {
    const conn = this.connection;
    const target = this.ownClock();
    const attempt = `${target}:${this.connections}`;
    if (!conn || this.ackInFlight || this.lastAttempt === attempt) return;
    this.ackInFlight = true;
    this.lastAttempt = attempt;
    conn
      .whenAcknowledged(20_000)
      .then(
        () => {
          this.acknowledged = Math.max(this.acknowledged, target);
        },
        () => undefined, // offline, slow or refused: the state says so
      )
      .finally(() => {
        this.ackInFlight = false;
        this.refresh();
      });
  }
}

export async function openSession(options: SessionOptions): Promise<Session> {
  const session = new Session(options);
  await session.open(options);
  return session;
}
