// A plan an MCP server (or any Node process) works on: synced through a Cairn server, with claims arbitrated
// there, presence in awareness and edits kept in a local outbox until the server has stored them, or on local
// disk through @cairn/core/fs. One shape for both.
import { CairnError, createPlan, type Plan } from '@cairn/core';
import { openFilePersistence } from '@cairn/core/fs';
import { scopeOf, skillsDocId, traceDocId } from '@cairn/core/learning';
import { CloseCode, type Presence as RenderPresence } from '@cairn/core/protocol';
import { attachClaims, connectPlan, type PlanConnection, type Presence } from '@cairn/core/websocket';
import { WebSocket } from 'ws';
import * as Y from 'yjs';
import { openOutbox, outboxDir } from './outbox.js';

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
  /**
   * With a server: a directory where edits are kept until the server has stored them (see `outbox.ts`), so an
   * edit made while the server is away outlives this process; the next open of the plan sends them first.
   * Default: none (an edit the server never acknowledged is lost with the process).
   */
  outbox?: string;
  /** Told of the connection's changes (lost, back, edits an earlier run left), one line each. */
  onNotice?: (message: string) => void;
}

/**
 * Whether the edits of a tool call are on the server: `pending` says why not and what happens to them;
 * `refused`, that the server will never take them (the plan would pass its size limit), so they were undone here.
 */
export type WriteStatus =
  | { synced: true }
  | { synced: false; pending: string }
  | { synced: false; refused: CairnError };

export interface CloseOptions {
  /** How long to wait for the server to acknowledge outstanding edits. Default 10 s. */
  waitMs?: number;
  /** Stops the wait early (a second signal): what is not acknowledged stays in the outbox. */
  interrupted?: Promise<unknown>;
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
  /**
   * After a tool call that changed the plan: whether the server has stored the edits, waiting at most `waitMs`
   * (default 3 s) while connected. Null on disk, where every edit is stored as it is made. When the server
   * refuses them for good (4414: the plan would pass its size limit), `undo` takes them back here, the
   * connection is opened again, and the status says `refused`: the plan is as it was before the call.
   */
  confirmWrites(waitMs?: number, undo?: () => void): Promise<WriteStatus | null>;
  /**
   * Waits (bounded) until every edit is stored by the server, or on disk, then disconnects. With an outbox, what
   * the server has not acknowledged stays there (told through `onNotice`); without one, that rejects.
   */
  close(options?: CloseOptions): Promise<void>;
}

const WRITE_ACK_MS = 3_000;
const CLOSE_WAIT_MS = 10_000;

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
  const notice = options.onNotice ?? (() => undefined);
  // Loaded before the connection opens: its sync step then carries what the server lacks of it.
  const outbox = options.outbox
    ? await openOutbox(outboxDir(options.outbox, url), options.planId, doc)
    : null;
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
  const destroy = () => {
    detach();
    connection.destroy();
    traceConnection.destroy();
    skillsConnection.destroy();
    plan.destroy();
  };
  try {
    await connection.whenSynced(options.syncTimeoutMs ?? 15_000);
  } catch (error) {
    destroy();
    // Nothing was written yet: the copy is kept only if an earlier run left edits in it.
    await outbox?.close(!outbox.carried);
    throw error;
  }
  const kept = outbox ? `kept in ${outbox.path}` : 'kept in memory only, lost if this process ends';
  if (outbox?.carried) {
    notice(`sending the server the edits an earlier run left in ${outbox.path}`);
    connection.whenAcknowledged(CLOSE_WAIT_MS * 3, { allClients: true }).then(
      () => notice('the server stored the edits an earlier run left'),
      (error: Error) =>
        notice(`the edits an earlier run left are not stored yet (${error.message}); ${kept}`),
    );
  }
  // A lost server is said once, and its return once: reconnect attempts flap between connecting and disconnected.
  let lost = false;
  const offStatus = connection.on('status', (status) => {
    if (lost || (status !== 'disconnected' && status !== 'closed')) return;
    lost = true;
    notice(`lost the server at ${url} (${status}); edits are ${kept} until it is back`);
  });
  const offSynced = connection.on('synced', (synced) => {
    if (!synced || !lost) return;
    lost = false;
    notice(`back in sync with the server at ${url}`);
  });
  const offError = connection.on('error', (error) => notice(error.message));
  const listeners = new Set<() => void>();
  const offPresence = connection.on('presence', () => {
    for (const listener of listeners) listener();
  });
  /**
   * The server closed the connection rather than take the call's edits (4414), and would again on every
   * reconnect: undone here, the plan is what the server holds, and the connection opens again for what follows.
   */
  const takeBack = async (undo: () => void, refusal: CairnError): Promise<CairnError> => {
    undo();
    lost = false;
    connection.connect();
    try {
      await connection.whenSynced(options.syncTimeoutMs ?? 15_000);
      await connection.whenAcknowledged(WRITE_ACK_MS);
    } catch (error) {
      notice(`after the refused edit was undone, the server is not back yet (${(error as Error).message})`);
    }
    return refusal;
  };
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
    async confirmWrites(waitMs = WRITE_ACK_MS, undo) {
      let why: string;
      if (!connection.synced) {
        why = `the server at ${url} is unreachable (${connection.status})`;
      } else {
        try {
          await connection.whenAcknowledged(waitMs);
          return { synced: true };
        } catch (error) {
          if (undo && isRefusedForGood(error)) return { synced: false, refused: await takeBack(undo, error) };
          why = (error as Error).message;
        }
      }
      await outbox?.flush(); // durable before the model is told the edit is kept
      return {
        synced: false,
        pending: outbox
          ? `Not on the server yet: ${why}. The edit is kept on this machine and sent when the server is back ` +
            '(or by the next cairn mcp for this plan); others do not see it until then.'
          : `Not on the server yet: ${why}. It is sent when the server is back, if this process still runs then.`,
      };
    },
    async close({ waitMs = CLOSE_WAIT_MS, interrupted } = {}) {
      offPresence();
      offStatus();
      offSynced();
      offError();
      const acknowledged = Promise.all([
        connection.whenAcknowledged(waitMs, { allClients: true }),
        // A trace the server refuses (a read-only token) must not keep the plan's edits from closing.
        traceConnection.whenAcknowledged(waitMs).catch(() => undefined),
      ]);
      // Said at once while the server is away; while connected, only if the answer is slow to come.
      const waiting = setTimeout(
        () => notice(`waiting up to ${waitMs / 1000} s for the server at ${url} to store this plan's edits`),
        connection.synced ? 1000 : 0,
      );
      let left: Error | null = null;
      try {
        await Promise.race([
          acknowledged,
          (interrupted ?? new Promise(() => undefined)).then(() => {
            throw new Error('interrupted by a signal');
          }),
        ]);
      } catch (error) {
        left = error as Error;
        acknowledged.catch(() => undefined);
      } finally {
        clearTimeout(waiting);
        destroy();
      }
      if (!outbox) {
        if (left) throw left;
        return;
      }
      await outbox.close(left === null);
      if (left) {
        notice(
          `left pending: edits the server has not acknowledged (${left.message}), kept in ${outbox.path}; ` +
            `the next cairn mcp for plan "${options.planId}" on ${url} sends them first`,
        );
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
    confirmWrites: async () => null,
    async close() {
      try {
        await Promise.all([stored.close(), storedTraces.close()]);
      } finally {
        plan.destroy();
      }
    },
  };
}

/** A close the server sends instead of storing an update, that reconnecting with the same edits meets again. */
function isRefusedForGood(error: unknown): error is CairnError {
  return error instanceof CairnError && error.details?.['closeCode'] === CloseCode.PlanTooLarge;
}
