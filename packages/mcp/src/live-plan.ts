// A plan an MCP server (or any Node process) works on: synced through a Cairn server, with claims arbitrated
// there and presence in awareness, or on local disk through @cairn/core/fs. One shape for both.
import {
  CairnError,
  createPlan,
  type Plan,
  type Presence as RenderPresence,
  scopeOf,
  skillsDocId,
  traceDocId,
} from '@cairn/core';
import { openFilePersistence } from '@cairn/core/fs';
import { attachClaims, connectPlan, type PlanConnection, type Presence } from '@cairn/core/websocket';
import { WebSocket } from 'ws';
import * as Y from 'yjs';

export interface LivePlanOptions {
  planId: string;
  /** Who the plan's writes are attributed to, e.g. `agent:claude`. */
  actor: string;
  /** A Cairn server (`ws://` or `http://`); exclusive with `dataDir`. */
  server?: string;
  token?: string;
  /** A directory of plan logs (the plan is locked while open); exclusive with `server`. */
  dataDir?: string;
  /** Shown to others in presence. Default: the actor. */
  name?: string;
  /** How long to wait for the first sync. Default 15 s. */
  syncTimeoutMs?: number;
}

export interface LivePlan {
  readonly planId: string;
  readonly plan: Plan;
  /** The sync connection, when synced through a server. */
  readonly connection: PlanConnection | null;
  /** The plan's trace document (`<planId>#traces`), synced or stored beside the plan: tool calls go there. */
  readonly traces: Y.Doc;
  /**
   * The learned skills of the plan's scope (`<scope>#skills`, read-only), when synced through a server; null on
   * disk, where another process may be learning into the same scope.
   */
  readonly skills: Y.Doc | null;
  /** Who else is here and on what, for the renderer. Empty on disk. */
  presence(): RenderPresence[];
  /** Says which task this participant is on (null: none), in presence. */
  setActiveTask(taskId: string | null): void;
  /** Calls `listener` when who is here or what they work on changes. */
  onPresence(listener: () => void): () => void;
  /** Waits until every edit is stored (by the server, or on disk), then disconnects. */
  close(): Promise<void>;
}

export async function openLivePlan(options: LivePlanOptions): Promise<LivePlan> {
  if (!options.planId) throw new CairnError('invalid_argument', 'A plan id is required, e.g. "acme:conv:7".');
  if (options.server && options.dataDir) {
    throw new CairnError('invalid_argument', 'Give either a server or a data directory, not both.');
  }
  if (!options.server && !options.dataDir) {
    throw new CairnError(
      'invalid_argument',
      'Give a server (--server URL) or a data directory (--data DIR).',
    );
  }
  const doc = new Y.Doc();
  const plan = createPlan({ doc, actor: options.actor });
  return options.server ? connected(doc, plan, options, options.server) : onDisk(doc, plan, options);
}

async function connected(doc: Y.Doc, plan: Plan, options: LivePlanOptions, url: string): Promise<LivePlan> {
  const presence: Presence = { id: options.actor, name: options.name ?? options.actor, kind: 'agent' };
  const connection = connectPlan(doc, {
    url,
    planId: options.planId,
    ...(options.token ? { token: options.token } : {}),
    WebSocketPolyfill: WebSocket,
    presence,
  });
  const detach = attachClaims(plan, connection);
  // The trace syncs in a room of its own; calls recorded before it has synced are merged in when it does.
  const traces = new Y.Doc();
  const traceConnection = connectPlan(traces, {
    url,
    planId: traceDocId(options.planId),
    ...(options.token ? { token: options.token } : {}),
    WebSocketPolyfill: WebSocket,
  });
  const skills = new Y.Doc();
  const skillsConnection = connectPlan(skills, {
    url,
    planId: skillsDocId(scopeOf(options.planId)),
    ...(options.token ? { token: options.token } : {}),
    WebSocketPolyfill: WebSocket,
  });
  try {
    await connection.whenSynced(options.syncTimeoutMs ?? 15_000);
  } catch (error) {
    detach();
    connection.destroy();
    traceConnection.destroy();
    skillsConnection.destroy();
    plan.destroy();
    throw error;
  }
  const listeners = new Set<() => void>();
  const offPresence = connection.on('presence', () => {
    for (const listener of listeners) listener();
  });
  return {
    planId: options.planId,
    plan,
    connection,
    traces,
    skills,
    presence: () =>
      [...connection.peers().values()].map((p) => ({ actor: p.id, taskId: p.activeTask ?? null })),
    setActiveTask(taskId) {
      connection.setPresence({ ...presence, activeTask: taskId });
    },
    onPresence(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      offPresence();
      try {
        await Promise.all([
          connection.whenAcknowledged(),
          // A trace the server refuses (a read-only token) must not keep the plan's edits from closing.
          traceConnection.whenAcknowledged().catch(() => undefined),
        ]);
      } finally {
        detach();
        connection.destroy();
        traceConnection.destroy();
        skillsConnection.destroy();
        plan.destroy();
      }
    },
  };
}

async function onDisk(doc: Y.Doc, plan: Plan, options: LivePlanOptions): Promise<LivePlan> {
  const open = openFilePersistence(options.dataDir!);
  const stored = open(options.planId, doc);
  const traces = new Y.Doc();
  const storedTraces = open(traceDocId(options.planId), traces);
  try {
    await Promise.all([stored.whenLoaded, storedTraces.whenLoaded]);
  } catch (error) {
    await Promise.allSettled([stored.close(), storedTraces.close()]);
    plan.destroy();
    throw error;
  }
  return {
    planId: options.planId,
    plan,
    connection: null,
    traces,
    skills: null,
    presence: () => [],
    setActiveTask() {},
    onPresence: () => () => undefined,
    async close() {
      try {
        await Promise.all([stored.close(), storedTraces.close()]);
      } finally {
        plan.destroy();
      }
    },
  };
}
