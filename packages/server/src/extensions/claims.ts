// The claim arbiter on the server, a hub extension: decides claim messages on the plan's authoritative doc in
// arrival order (so K racing agents get exactly one winner, and every replica receives that write by normal sync),
// and keeps leases: a claim lapses when its holder has been gone from the plan's awareness, or has not renewed it,
// for too long.

import { CairnError, createPlan, isOpenStatus, type Plan } from '@cairn/core';
import {
  CLAIM_REQUEST_TYPES,
  type ClaimArbiter,
  type ClaimReply,
  type ClaimRequest,
  type ClaimResult,
  decodeClaimRequestBody,
  encodeClaimReply,
  isPrincipalActor,
  LocalArbiter,
  localArbiterOf,
  toCairnError,
} from '@cairn/core/protocol';
import type * as Y from 'yjs';
import { actorsOfSubject, mayActAs, statedActors } from '../actors.js';
import type { DueQueue, DueTimes } from '../hub/due-times.js';
import type { Extension, RoomMessage } from '../hub/extension.js';
import { describeError, type Logger } from '../log.js';

export { actorsOfSubject, mayActAs } from '../actors.js';

export interface ClaimOptions {
  /**
   * A claim lapses once its holder has been absent from the plan's awareness (no connection in the plan speaks
   * for it) this long. Default 60 s; 0 turns it off.
   */
  absentMs?: number;
  /** A claim lapses when its holder has not renewed it (claimed the task again) for this long. Default 0: off. */
  renewMs?: number;
  /** How often leases are checked. Default: a quarter of the shorter lease time, from 50 ms to 5 s. */
  sweepMs?: number;
  /** Clock in ms. Default `Date.now`. */
  now?: () => number;
  /**
   * Where claims are decided when several servers share plans (a cluster): a claim the rule grants on this
   * server's copy is granted only once reserved there, and a lease lapses only once its reservation expired.
   */
  reservations?: ClaimReservations;
}

/** A claim reserved (with its fencing token), or refused because `holder` holds the task (token null). */
export interface Reservation {
  holder: string;
  token: number | null;
}

/**
 * Claims shared by the servers of a cluster, decided atomically (cluster/redis-claims.ts). `lease`: the holder's
 * claim is watched (and lapses once the reservation expired); without it the reservation only decides the race.
 */
export interface ClaimReservations {
  /** Makes `actor` the holder unless another holds the task. */
  reserve(planId: string, taskId: string, actor: string, lease: boolean): Promise<Reservation>;
  /** Moves the holder's reservation to `to`, or drops it (null). False when `from` does not hold it. */
  move(planId: string, taskId: string, from: string, to: string | null, lease: boolean): Promise<boolean>;
  /** Extends the holder's reservation by a lease; false when it is not theirs any more. */
  extend(planId: string, taskId: string, holder: string): Promise<boolean>;
  /** True for exactly one server, and only once the reservation expired: that server frees the task. */
  mayLapse(planId: string, taskId: string, holder: string): Promise<boolean>;
  /** Every lease of the plan granted by any server (task id to holder), so a lease outlives its server. */
  leases(planId: string): Promise<Map<string, string>>;
  /** Leases of any plan whose reservation ran out: each server frees those `mayLapse` gives it, loaded or not. */
  expired(): Promise<ExpiredLease[]>;
}

/** A lease whose reservation ran out (its holder was absent from every server for a lease). */
export interface ExpiredLease {
  planId: string;
  taskId: string;
  holder: string;
}

/** The parts of a loaded room the arbiter reads (hub/room.ts). */
export interface ClaimRoom {
  readonly planId: string;
  readonly doc: Y.Doc;
  readonly awareness: { getStates(): Map<number, Record<string, unknown>> };
  readonly conns: Iterable<ClaimConnection>;
}

/** The parts of a connection the arbiter reads (hub/connection.ts). */
export interface ClaimConnection {
  readonly grant: { sub: string };
  /** The connection's own actor (`user:<sub>`, or the sub when it already names one). */
  readonly actor: string;
  readonly canWrite: boolean;
  readonly isOpen: boolean;
  readonly awarenessClients: ReadonlySet<number>;
  send(data: Uint8Array): void;
}

/** What the hub gives the arbiter (its ExtensionHost). */
export interface ClaimHost {
  /** True when the server has no auth: a request's actor is then taken as given. */
  readonly open: boolean;
  /** The plan's room if it is loaded and ready. */
  room(planId: string): ClaimRoom | undefined;
  /** Loads a plan for a server-side write (a lease lapsing while nobody is connected). */
  openPlan(planId: string): Promise<{ doc: Y.Doc; flush(): Promise<void>; release(): void }>;
  /** Resolves once every edit of the plan so far is durably stored. */
  flush(planId: string): Promise<void>;
  logger: Logger;
  /** Where the lease checks are scheduled (the hub's due-time index). */
  readonly dueTimes: DueTimes;
}

/** One claim the arbiter granted and watches. */
export interface Lease {
  taskId: string;
  holder: string;
  /** When it was granted or last renewed (ms). */
  renewedAt: number;
  /** Since when the holder has been absent from the plan's awareness (ms), or null while present. */
  absentSince: number | null;
}

/** Claim requests one connection may have awaiting the store. */
const MAX_PENDING = 64;
/** How long a decided request is remembered for a resend with the same nonce (after a reconnect). */
const NONCE_TTL_MS = 10 * 60_000;
/** How long a claim survives its holder's absence by default (`absentMs`; `cairn serve --lease-ms`). */
export const DEFAULT_ABSENT_MS = 60_000;
const MAX_NONCES = 10_000;
/** The one key of the arbiter's queue in the due-time index: its next lease check. */
const CHECK = 'check';

type Decision = Omit<ClaimReply, 'reqId'>;

/** One claim operation as the arbiter decides it, whoever asked (a connection's request, or `arbiterFor`). */
type ClaimAsk = Pick<ClaimRequest, 'op' | 'taskId' | 'filter' | 'to'>;

/** The plan an in-process claim is decided on: its loaded (authoritative) doc. */
export interface ClaimPlan {
  readonly planId: string;
  readonly doc: Y.Doc;
}

interface PlanClaims {
  leases: Map<string, { holder: string; renewedAt: number }>;
  absentSince: Map<string, number>;
  /** Decisions by actor + nonce, so a resent request is answered, not applied again. */
  decided: Map<string, { at: number; decision: Promise<Decision> }>;
}

export class ClaimArbiterService implements Extension {
  readonly name = 'claims';
  readonly cairnMessages = CLAIM_REQUEST_TYPES;
  readonly absentMs: number;
  readonly renewMs: number;
  private readonly now: () => number;
  private readonly plans = new Map<string, PlanClaims>();
  /** One Plan per authoritative doc; its own writes (a lapsed lease) are attributed to `lease`. */
  private readonly views = new WeakMap<Y.Doc, Plan>();
  /** Actors each connection claimed for: in open mode they are what its awareness stands for. */
  private readonly speaksFor = new WeakMap<ClaimConnection, Set<string>>();
  private readonly pending = new WeakMap<ClaimConnection, number>();
  /** The next lease check, while there is anything to check; null when leases never lapse. */
  private readonly checks: DueQueue | null;
  private readonly sweepMs: number;
  private sweeping: Promise<void> | null = null;
  private swept = 0;
  private closed = false;
  private readonly reservations: ClaimReservations | null;

  constructor(
    private readonly host: ClaimHost,
    options: ClaimOptions = {},
  ) {
    this.reservations = options.reservations ?? null;
    this.absentMs = nonNegative(options.absentMs ?? DEFAULT_ABSENT_MS, 'absentMs');
    this.renewMs = nonNegative(options.renewMs ?? 0, 'renewMs');
    this.now = options.now ?? Date.now;
    const shortest = Math.min(...[this.absentMs, this.renewMs].filter((ms) => ms > 0));
    this.sweepMs = options.sweepMs ?? Math.min(5_000, Math.max(50, Math.floor(shortest / 4)));
    this.checks = Number.isFinite(shortest) ? host.dueTimes.queue('claims', () => this.timedSweep()) : null;
    // In a cluster a lease granted elsewhere may lapse here, so the checks never stop; alone, only while there are
    // plans with leases (or remembered requests) to look at.
    if (this.reservations) this.scheduleCheck();
  }

  /** How many lease checks have finished since the start (tests count them). */
  get sweeps(): number {
    return this.swept;
  }

  /**
   * Decides one request from `conn` on `room`'s doc, now (so requests are decided in arrival order), and
   * replies once the write is durably stored.
   */
  handle(room: ClaimRoom, conn: ClaimConnection, request: ClaimRequest): void {
    const reply = (decision: Decision) => conn.send(encodeClaimReply({ reqId: request.reqId, ...decision }));
    const pending = this.pending.get(conn) ?? 0;
    if (pending >= MAX_PENDING) {
      reply(refusal(new CairnError('limit', `More than ${MAX_PENDING} claim requests pending.`)));
      return;
    }
    this.pending.set(conn, pending + 1);
    void this.decide(room, conn, request)
      .then(reply)
      .finally(() => this.pending.set(conn, (this.pending.get(conn) ?? 1) - 1));
  }

  /**
   * The arbiter for claims made on the server itself (the HTTP tool API): `plan.useArbiter(arbiterFor(...))` sends
   * them down the path a connection's claims take, so in a cluster they are reserved in Redis like every other
   * claim and exactly one agent wins whichever instance each asked. Writes go to `room.doc`, attributed to the
   * claimer; the caller flushes them. Such a claim is not leased: its holder has no presence to watch.
   */
  arbiterFor(room: ClaimPlan): ClaimArbiter {
    const decide = (actor: string, ask: ClaimAsk) =>
      this.settle(room, this.claimsOf(room.planId), actor, ask, false);
    return {
      claim: (taskId, actor) => decide(actor, { op: 'claim', taskId }),
      claimNext: (actor, filter = {}) => decide(actor, { op: 'claim_next', filter }),
      release: (taskId, actor) => decide(actor, { op: 'release', taskId }),
      handOff: (taskId, from, to) => decide(from, { op: 'hand_off', taskId, to }),
    };
  }

  /** Claim messages of the plan's clients (sub-types 3 to 6). */
  message({ room, connection, subType, decoder }: RoomMessage): undefined {
    this.handle(room, connection, decodeClaimRequestBody(subType, decoder));
  }

  /** The leases of a plan now (for tests and the HTTP API). */
  leases(planId: string): Lease[] {
    const claims = this.plans.get(planId);
    if (!claims) return [];
    return [...claims.leases].map(([taskId, { holder, renewedAt }]) => ({
      taskId,
      holder,
      renewedAt,
      absentSince: claims.absentSince.get(holder) ?? null,
    }));
  }

  /** Checks every lease once: frees the tasks of holders gone too long. Runs on a timer; callable by tests. */
  sweep(): Promise<void> {
    this.sweeping ??= this.sweepOnce().finally(() => {
      this.sweeping = null;
      this.swept++;
    });
    return this.sweeping;
  }

  close(): void {
    this.closed = true;
    if (this.checks) this.host.dueTimes.remove(this.checks);
  }

  /** In a cluster every loaded plan is swept: it may hold leases another server granted. */
  loaded(room: { planId: string }): void {
    if (this.reservations) this.claimsOf(room.planId);
  }

  private decide(room: ClaimRoom, conn: ClaimConnection, request: ClaimRequest): Promise<Decision> {
    let actor: string;
    try {
      actor = this.actorOf(conn, request.actor);
    } catch (error) {
      return Promise.resolve(refusal(error));
    }
    const claims = this.claimsOf(room.planId);
    const key = request.nonce ? `${actor}\n${request.nonce}` : null;
    const seen = key ? claims.decided.get(key) : undefined;
    if (seen) return seen.decision;

    const speaks = this.speaksFor.get(conn) ?? new Set<string>();
    this.speaksFor.set(conn, speaks.add(actor));
    const decision = this.settle(room, claims, actor, request, true).then(
      (result) =>
        this.host.flush(room.planId).then(
          (): Decision => ({
            outcome: result.outcome === 'tentative' ? 'won' : result.outcome,
            taskId: result.taskId,
            holder: result.holder,
            message: result.message,
            code: '',
          }),
          (error: unknown) =>
            refusal(
              new CairnError(
                'storage',
                `${result.message} But the server could not store it: ${describeError(error)}`,
              ),
            ),
        ),
      refusal,
    );
    if (key) this.remember(claims, key, decision);
    return decision;
  }

  /**
   * The one place every claim is decided, from a connection or from the server itself: on the plan's doc, and in
   * a cluster through the shared reservations. `lease`: the granted claim is watched (a connection's holder).
   */
  private settle(
    room: ClaimPlan,
    claims: PlanClaims,
    actor: string,
    ask: ClaimAsk,
    lease: boolean,
  ): Promise<ClaimResult> {
    try {
      return this.reservations
        ? this.applyReserved(room, claims, actor, ask, this.reservations, lease)
        : Promise.resolve(this.apply(room.doc, claims, actor, ask, lease));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * The claim rule on this server's copy first (a claim it refuses is refused), then the reservation shared by
   * the cluster decides; only a reserved claim is written. Releases and hand-offs move the reservation along.
   */
  private async applyReserved(
    room: ClaimPlan,
    claims: PlanClaims,
    actor: string,
    request: ClaimAsk,
    reservations: ClaimReservations,
    lease: boolean,
  ): Promise<ClaimResult> {
    const { planId } = room;
    if (request.op === 'claim' || request.op === 'claim_next') {
      // claim_next moves on to the next ready task when another server's agent reserved the one it picked.
      const reservedElsewhere = new Set<string>();
      for (;;) {
        const preview = previewArbiter(this.viewOf(room.doc), reservedElsewhere).decide(
          actor,
          request.op === 'claim'
            ? { op: 'claim', taskId: request.taskId ?? '' }
            : { op: 'claim_next', filter: request.filter ?? {} },
          true,
        );
        if (preview.outcome !== 'won' || !preview.taskId) return preview;
        const taskId = preview.taskId;
        const reservation = await reservations.reserve(planId, taskId, actor, lease);
        if (reservation.token !== null) {
          const result = this.apply(room.doc, claims, actor, { ...request, op: 'claim', taskId }, lease);
          if (result.outcome !== 'won') await reservations.move(planId, taskId, actor, null, false);
          return result;
        }
        if (request.op === 'claim') {
          return {
            outcome: 'lost',
            taskId,
            holder: reservation.holder,
            arbitrated: true,
            message: `Task ${taskId} is already claimed by ${reservation.holder}.`,
          };
        }
        reservedElsewhere.add(taskId);
      }
    }
    const result = this.apply(room.doc, claims, actor, request, lease);
    if (result.outcome === 'won' && request.taskId) {
      await reservations.move(
        planId,
        request.taskId,
        actor,
        request.op === 'hand_off' ? (request.to ?? null) : null,
        lease,
      );
    }
    return result;
  }

  /**
   * Applies the claim rule on the authoritative doc, attributed to the claimer. `lease`: the new holder's claim is
   * watched; otherwise a claim only renews a lease its holder already has.
   */
  private apply(
    doc: Y.Doc,
    claims: PlanClaims,
    actor: string,
    request: ClaimAsk,
    lease: boolean,
  ): ClaimResult {
    const arbiter = localArbiterOf(this.viewOf(doc));
    const taskId = request.taskId ?? '';
    switch (request.op) {
      case 'claim':
      case 'claim_next': {
        const result = arbiter.decide(
          actor,
          request.op === 'claim'
            ? { op: 'claim', taskId }
            : { op: 'claim_next', filter: request.filter ?? {} },
          true,
        );
        if (result.outcome === 'won' && result.taskId) {
          if (lease || claims.leases.get(result.taskId)?.holder === actor) {
            claims.leases.set(result.taskId, { holder: actor, renewedAt: this.now() });
          }
        }
        return result;
      }
      case 'release': {
        const result = arbiter.decide(actor, { op: 'release', taskId }, true);
        claims.leases.delete(taskId);
        return result;
      }
      case 'hand_off': {
        const to = principalActor(request.to, 'to', 'Hand off to');
        const result = arbiter.decide(actor, { op: 'hand_off', taskId, to }, true);
        if (lease) claims.leases.set(taskId, { holder: to, renewedAt: this.now() });
        else claims.leases.delete(taskId);
        return result;
      }
    }
  }

  /**
   * Who a request speaks for. Without auth, whoever it names; with auth, only actors of the token's subject
   * (`agent:<sub>`, `user:<sub>`, or an agent it runs, `agent:<sub>/<name>`): a client cannot claim for another.
   */
  private actorOf(conn: ClaimConnection, requested: string): string {
    if (!conn.canWrite) {
      throw new CairnError(
        'forbidden',
        'This connection is read-only: it cannot claim, release or hand off.',
      );
    }
    if (requested === '') return conn.actor;
    principalActor(requested, 'actor', 'A claim is made by');
    if (this.host.open || mayActAs(conn.grant.sub, requested)) return requested;
    const own = actorsOfSubject(conn.grant.sub);
    throw new CairnError(
      'forbidden',
      `This token's subject is "${conn.grant.sub}": it claims as ${own.join(' or ')} (or ${own[0]}/<name>), not ${requested}.`,
      { valid: own },
    );
  }

  private async sweepOnce(): Promise<void> {
    const now = this.now();
    if (this.reservations) await this.lapseExpired(this.reservations, now);
    for (const [planId, claims] of [...this.plans]) {
      if (this.closed) return;
      const room = this.host.room(planId);
      if (this.reservations && room) await this.adoptShared(planId, claims, now, this.reservations);
      if (room) this.dropStale(room.doc, claims);
      const present = room ? this.presentActors(room) : new Set<string>();
      const holders = new Set([...claims.leases.values()].map((l) => l.holder));
      for (const actor of [...claims.absentSince.keys()])
        if (!holders.has(actor)) claims.absentSince.delete(actor);
      for (const holder of holders) {
        if (present.has(holder)) claims.absentSince.delete(holder);
        else if (!claims.absentSince.has(holder)) claims.absentSince.set(holder, now);
      }
      const lapsed = [...claims.leases].filter(([, lease]) => {
        const gone = claims.absentSince.get(lease.holder);
        return (
          (this.absentMs > 0 && gone !== undefined && now - gone >= this.absentMs) ||
          (this.renewMs > 0 && now - lease.renewedAt >= this.renewMs)
        );
      });
      this.forget(claims, now);
      if (this.reservations) {
        await this.extendPresent(planId, claims, present, this.reservations);
        const expired = [];
        for (const entry of lapsed) {
          if (await this.reservations.mayLapse(planId, entry[0], entry[1].holder).catch(() => false)) {
            expired.push(entry);
          }
        }
        lapsed.splice(0, lapsed.length, ...expired);
      }
      if (lapsed.length > 0) await this.lapse(planId, room, claims, lapsed);
      const keep = this.reservations !== null && room !== undefined;
      if (!keep && claims.leases.size === 0 && claims.decided.size === 0) this.plans.delete(planId);
    }
  }

  /**
   * Frees the leases of every plan whose reservation ran out, whether or not this server has the plan loaded:
   * the server that granted one may be gone and nobody else may hold its plan. `mayLapse` picks one server.
   */
  private async lapseExpired(reservations: ClaimReservations, now: number): Promise<void> {
    let expired: ExpiredLease[];
    try {
      expired = await reservations.expired();
    } catch (error) {
      this.host.logger.error('could not read the expired leases', { error: describeError(error) });
      return;
    }
    for (const { planId, taskId, holder } of expired) {
      if (this.closed) return;
      if (!(await reservations.mayLapse(planId, taskId, holder).catch(() => false))) continue;
      const claims = this.claimsOf(planId);
      const lease = { holder, renewedAt: now };
      claims.leases.set(taskId, lease);
      await this.lapse(planId, this.host.room(planId), claims, [[taskId, lease]]);
    }
  }

  /** Watches the leases other servers granted too, so one whose server died still lapses (here, or elsewhere). */
  private async adoptShared(
    planId: string,
    claims: PlanClaims,
    now: number,
    reservations: ClaimReservations,
  ): Promise<void> {
    try {
      for (const [taskId, holder] of await reservations.leases(planId)) {
        if (claims.leases.get(taskId)?.holder !== holder)
          claims.leases.set(taskId, { holder, renewedAt: now });
      }
    } catch (error) {
      this.host.logger.error('could not read the shared leases', {
        plan: planId,
        error: describeError(error),
      });
    }
  }

  /** Keeps the reservations of holders present here alive: their leases do not lapse on any server. */
  private async extendPresent(
    planId: string,
    claims: PlanClaims,
    present: Set<string>,
    reservations: ClaimReservations,
  ): Promise<void> {
    for (const [taskId, lease] of claims.leases) {
      if (!present.has(lease.holder)) continue;
      await reservations.extend(planId, taskId, lease.holder).catch((error: unknown) => {
        this.host.logger.error('could not extend a claim', {
          plan: planId,
          task: taskId,
          error: describeError(error),
        });
      });
    }
  }

  /** Frees the tasks of lapsed leases, attributed to `lease`, on the loaded doc or after loading the plan. */
  private async lapse(
    planId: string,
    room: ClaimRoom | undefined,
    claims: PlanClaims,
    lapsed: Array<[string, { holder: string; renewedAt: number }]>,
  ): Promise<void> {
    let handle: Awaited<ReturnType<ClaimHost['openPlan']>> | null = null;
    try {
      let doc = room?.doc;
      if (!doc) {
        handle = await this.host.openPlan(planId);
        doc = handle.doc;
      }
      const plan = this.viewOf(doc);
      for (const [taskId, lease] of lapsed) {
        if (claims.leases.get(taskId) !== lease) continue; // renewed or handed on meanwhile
        claims.leases.delete(taskId);
        const task = plan.get(taskId);
        if (!task || !isOpenStatus(task.status) || task.assignee !== lease.holder) continue;
        plan.update(taskId, {
          assignee: null,
          ...(task.status === 'in_progress' ? { status: 'pending' } : {}),
        });
        this.host.logger.info('claim lapsed', { plan: planId, task: taskId, holder: lease.holder });
      }
      await (handle ? handle.flush() : this.host.flush(planId));
    } catch (error) {
      this.host.logger.error('could not free lapsed claims', { plan: planId, error: describeError(error) });
    } finally {
      handle?.release();
    }
  }

  /** Leases whose task was closed, removed or reassigned by a plain edit are no longer watched. */
  private dropStale(doc: Y.Doc, claims: PlanClaims): void {
    const plan = this.viewOf(doc);
    for (const [taskId, lease] of [...claims.leases]) {
      const task = plan.get(taskId);
      if (!task || !isOpenStatus(task.status) || task.assignee !== lease.holder) claims.leases.delete(taskId);
    }
  }

  /**
   * Actors some open connection of the room speaks for while it has a presence in awareness: those it claimed
   * for and those its awareness states name; with auth, only those its token's subject may act as.
   */
  private presentActors(room: ClaimRoom): Set<string> {
    const states = room.awareness.getStates();
    const present = new Set<string>();
    for (const conn of room.conns) {
      if (!conn.isOpen) continue;
      const live = [...conn.awarenessClients].map((id) => states.get(id)).filter((s) => s != null);
      if (live.length === 0) continue;
      const named = [conn.actor, ...(this.speaksFor.get(conn) ?? []), ...live.flatMap(statedActors)];
      for (const actor of named) {
        if (this.host.open || mayActAs(conn.grant.sub, actor)) present.add(actor);
      }
    }
    return present;
  }

  private remember(claims: PlanClaims, key: string, decision: Promise<Decision>): void {
    claims.decided.set(key, { at: this.now(), decision });
    if (claims.decided.size > MAX_NONCES) {
      const oldest = claims.decided.keys().next().value;
      if (oldest !== undefined) claims.decided.delete(oldest);
    }
  }

  private forget(claims: PlanClaims, now: number): void {
    for (const [key, { at }] of claims.decided) {
      if (now - at < NONCE_TTL_MS) break; // in insertion order, so the rest are younger
      claims.decided.delete(key);
    }
  }

  private claimsOf(planId: string): PlanClaims {
    let claims = this.plans.get(planId);
    if (!claims) {
      claims = { leases: new Map(), absentSince: new Map(), decided: new Map() };
      this.plans.set(planId, claims);
      this.scheduleCheck();
    }
    return claims;
  }

  /** The check the index runs: every `sweepMs` while there is anything to check. */
  private async timedSweep(): Promise<void> {
    this.checks?.set(CHECK, null);
    this.scheduleCheck();
    await this.sweep();
    if (this.plans.size === 0 && !this.reservations) this.checks?.set(CHECK, null);
  }

  private scheduleCheck(): void {
    if (!this.checks || this.closed || this.checks.has(CHECK)) return;
    this.checks.set(CHECK, this.host.dueTimes.now() + this.sweepMs);
  }

  private viewOf(doc: Y.Doc): Plan {
    let plan = this.views.get(doc);
    if (!plan) {
      plan = createPlan({ doc, actor: 'lease' });
      this.views.set(doc, plan);
      doc.once('destroy', () => plan?.destroy());
    }
    return plan;
  }
}

/** `value` when it is an actor a principal may be; otherwise a refusal that says what is. */
function principalActor(value: string | undefined, field: string, what: string): string {
  if (value === undefined || !isPrincipalActor(value)) {
    throw new CairnError(
      'invalid_argument',
      `${what} "agent:<name>" or "user:<name>", not ${JSON.stringify(value)}.`,
      { field },
    );
  }
  return value;
}

/** The claim rule on a plan without writing: what a claim would get, leaving out tasks `exclude` names. */
function previewArbiter(plan: Plan, exclude: ReadonlySet<string>): LocalArbiter {
  return new LocalArbiter({
    require: (id) => plan.require(id),
    ready: (actor) => plan.ready({ actor }).filter((task) => !exclude.has(task.id)),
    effectiveParent: (task) => plan.effectiveParent(task),
    assign: () => undefined,
  });
}

function refusal(error: unknown): Decision {
  const e = toCairnError(error);
  return { outcome: 'error', taskId: null, holder: null, message: e.message, code: e.code };
}

function nonNegative(ms: number, name: string): number {
  if (!Number.isFinite(ms) || ms < 0) {
    throw new CairnError('invalid_argument', `${name} must be a number of milliseconds >= 0, not ${ms}.`, {
      field: name,
    });
  }
  return ms;
}
