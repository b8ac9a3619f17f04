// The client side of claims: a ClaimArbiter that asks the sync server (docs/PROTOCOL.md, "Claims") and, when the
// server cannot answer now, says the claim is tentative and settles it once connected. Installed on a Plan with
// `attachClaims(plan, connection)`. A tentative claim is never written into the doc by the client: only the
// server's decision is, so an offline claim cannot overwrite the server's winner when the replicas merge.
import type * as decoding from 'lib0/decoding';
import {
  type ClaimArbiter,
  type ClaimNextFilter,
  type ClaimResult,
  claimRule,
  isClaimCandidate,
} from '../claims.js';
import {
  ClaimMessageType,
  type ClaimReply,
  type ClaimRequest,
  decodeClaimReplyBody,
  encodeClaimRequest,
} from '../claims-protocol.js';
import { CairnError, ERROR_CODES, type ErrorCode } from '../errors.js';
import type { Plan } from '../plan.js';
import type { PlanConnection } from './connection.js';

export interface ClaimClientOptions {
  /**
   * How long a connected client waits for the server's answer before it returns a tentative result (whose
   * `settled` still resolves with the answer). Default 10 s.
   */
  timeoutMs?: number;
}

interface Pending {
  request: Omit<ClaimRequest, 'reqId'>;
  /** The request id on the current socket, or null while it waits to be (re)sent. */
  reqId: number | null;
  resolve(reply: ClaimReply): void;
  reject(error: CairnError): void;
}

/** Makes `plan`'s claims go through the server `connection` talks to. Returns a function that undoes it. */
export function attachClaims(
  plan: Plan,
  connection: PlanConnection,
  options: ClaimClientOptions = {},
): () => void {
  if (plan.doc !== connection.doc) {
    throw new CairnError('invalid_argument', 'The plan and the connection must share one Y.Doc.');
  }
  const client = new ClaimClient(plan, connection, options);
  plan.useArbiter(client);
  return () => {
    plan.useArbiter(null);
    client.destroy();
  };
}

class ClaimClient implements ClaimArbiter {
  private readonly waiting = new Set<Pending>();
  private readonly sent = new Map<number, Pending>();
  private nextReqId = 1;
  private readonly timeoutMs: number;
  private readonly offs: Array<() => void> = [];
  private destroyed = false;

  constructor(
    private readonly plan: Plan,
    private readonly connection: PlanConnection,
    options: ClaimClientOptions,
  ) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    const { provider } = connection;
    this.offs.push(connection.onCairnMessage(ClaimMessageType.Reply, (decoder) => this.onReply(decoder)));
    const onClose = () => {
      // Requests on the old socket will never be answered: send them again (same nonce) on the next one.
      for (const pending of this.sent.values()) {
        pending.reqId = null;
        this.waiting.add(pending);
      }
      this.sent.clear();
    };
    provider.on('connection-close', onClose);
    this.offs.push(() => provider.off('connection-close', onClose));
    this.offs.push(
      connection.on('synced', (synced) => {
        if (synced) this.sendWaiting();
      }),
    );
    this.offs.push(connection.on('closed', ({ error }) => this.rejectAll(error)));
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const off of this.offs) off();
    this.rejectAll(new CairnError('invalid_transition', 'The claim client was destroyed before the answer.'));
  }

  async claim(taskId: string, actor: string): Promise<ClaimResult> {
    // The rule on what this replica knows: a closed task is refused now; a held one is lost when offline.
    const decision = claimRule(this.plan.require(taskId), actor, { op: 'claim' });
    if (!this.online && decision.kind === 'lost') {
      return {
        outcome: 'lost',
        taskId,
        holder: decision.holder,
        arbitrated: false,
        message: `Task ${taskId} is claimed by ${decision.holder} (as this replica last saw it; not connected to the server).`,
      };
    }
    return this.ask({ op: 'claim', actor, taskId }, () =>
      tentative(taskId, actor, `Not connected: task ${taskId} is claimed for ${actor} tentatively`),
    );
  }

  async claimNext(actor: string, filter: ClaimNextFilter = {}): Promise<ClaimResult> {
    if (this.online) {
      return this.ask({ op: 'claim_next', actor, filter }, () =>
        tentative(null, actor, 'The server has not answered yet: claim_next is pending'),
      );
    }
    // Offline: pick locally, and ask the server for that very task once connected (the agent may start on it).
    const asked = new Set(
      [...this.waiting].filter((p) => p.request.op === 'claim').map((p) => p.request.taskId),
    );
    const next = this.plan
      .ready({ actor })
      .find(
        (t) => !asked.has(t.id) && isClaimCandidate(t, filter, (task) => this.plan.effectiveParent(task)),
      );
    if (!next) {
      return {
        outcome: 'none',
        taskId: null,
        holder: null,
        arbitrated: false,
        message: 'No ready, unclaimed task is left (as this replica knows; not connected to the server).',
      };
    }
    return this.claim(next.id, actor);
  }

  async release(taskId: string, actor: string): Promise<ClaimResult> {
    claimRule(this.plan.require(taskId), actor, { op: 'release' }); // refuses now what the server would
    return this.ask({ op: 'release', actor, taskId }, () => ({
      ...tentative(taskId, null, `Not connected: ${actor} releases task ${taskId} once connected`),
    }));
  }

  async handOff(taskId: string, from: string, to: string): Promise<ClaimResult> {
    claimRule(this.plan.require(taskId), from, { op: 'hand_off', to }); // refuses now what the server would
    return this.ask({ op: 'hand_off', actor: from, taskId, to }, () =>
      tentative(taskId, to, `Not connected: task ${taskId} goes to ${to} once connected`),
    );
  }

  private get online(): boolean {
    const ws = this.connection.provider.ws;
    return this.connection.synced && ws !== null && ws.readyState === ws.OPEN;
  }

  /**
   * Sends a request (now if connected, else once connected) and waits for the answer; when offline, or when the
   * answer takes longer than `timeoutMs`, resolves with `pending()`'s tentative result whose `settled` waits on.
   */
  private ask(
    request: Omit<ClaimRequest, 'reqId' | 'nonce'>,
    pending: () => ClaimResult,
  ): Promise<ClaimResult> {
    if (this.destroyed) {
      return Promise.reject(new CairnError('invalid_transition', 'The claim client was destroyed.'));
    }
    const answer = new Promise<ClaimReply>((resolve, reject) => {
      this.waiting.add({ request: { ...request, nonce: nonce() }, reqId: null, resolve, reject });
    });
    const settled = answer.then(toResult);
    settled.catch(() => undefined); // a tentative result's `settled` may be left unread
    const online = this.online;
    this.sendWaiting();
    const later = (): ClaimResult => ({ ...pending(), settled });
    if (!online) return Promise.resolve(later());
    return new Promise<ClaimResult>((resolve, reject) => {
      const timer = setTimeout(() => resolve(later()), this.timeoutMs);
      settled.then(
        (result) => {
          clearTimeout(timer);
          resolve(result);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  }

  // Sent only once synced: the server handles a socket's messages in order, so what this replica wrote before
  // (a task it just added) is there before the claim is decided.
  private sendWaiting(): void {
    for (const pending of [...this.waiting]) {
      const reqId = this.nextReqId++;
      if (!this.connection.send(encodeClaimRequest({ ...pending.request, reqId }))) return;
      pending.reqId = reqId;
      this.waiting.delete(pending);
      this.sent.set(reqId, pending);
    }
  }

  private onReply(decoder: decoding.Decoder): void {
    let reply: ClaimReply;
    try {
      reply = decodeClaimReplyBody(decoder);
    } catch {
      return; // a malformed or client-bound message: nothing waits on it
    }
    const pending = this.sent.get(reply.reqId);
    if (!pending) return;
    this.sent.delete(reply.reqId);
    pending.resolve(reply);
  }

  private rejectAll(error: CairnError): void {
    const all = [...this.waiting, ...this.sent.values()];
    this.waiting.clear();
    this.sent.clear();
    for (const pending of all) pending.reject(error);
  }
}

function toResult(reply: ClaimReply): ClaimResult {
  if (reply.outcome === 'error') {
    const code = (ERROR_CODES as readonly string[]).includes(reply.code)
      ? (reply.code as ErrorCode)
      : 'internal';
    throw new CairnError(code, reply.message, reply.code === 'conflict' ? { holder: reply.holder } : {});
  }
  return {
    outcome: reply.outcome,
    taskId: reply.taskId,
    holder: reply.holder,
    arbitrated: true,
    message: reply.message,
  };
}

function tentative(taskId: string | null, holder: string | null, message: string): ClaimResult {
  return {
    outcome: 'tentative',
    taskId,
    holder,
    arbitrated: false,
    message: `${message}; \`settled\` tells how the server decided.`,
  };
}

/** Unique per request across reconnects and processes (the server dedups on actor + nonce). */
function nonce(): string {
  const bytes = new Uint8Array(12);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
