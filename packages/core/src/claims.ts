// Claims: who works on a task. A CRDT alone cannot make a claim exclusive (two replicas that set `assignee`
// concurrently both believe they won until they sync, and Yjs then picks by clientID), so a Plan can be given
// an arbiter (the sync server) that decides in arrival order. Without one, the local arbiter decides.
// The rule itself is one pure function, `claimRule`, which the local arbiter, the sync client (on what its
// replica knows) and the server (on the authoritative doc) all apply.
import { CairnError } from './errors.js';
import { isOpenStatus, type Status, type TaskSnapshot } from './schema.js';

/** How a claim request ended. */
export type ClaimOutcome =
  /** The caller holds the task now. */
  | 'won'
  /** Someone else holds it: see `holder`. */
  | 'lost'
  /** No arbiter could be reached: recorded locally, `settled` tells how it ends once connected. */
  | 'tentative'
  /** claimNext found no ready task. */
  | 'none';

export interface ClaimResult {
  outcome: ClaimOutcome;
  taskId: string | null;
  /** Who holds the task after the request (null when nobody does). */
  holder: string | null;
  /** True when an arbiter decided, so every replica will end with this holder. */
  arbitrated: boolean;
  /** A sentence for whoever asked (often an LLM). */
  message: string;
  /** For a tentative claim: resolves to the arbiter's decision once it can be reached. */
  settled?: Promise<ClaimResult>;
}

export interface ClaimNextFilter {
  /** Only steps of this task (null: only top-level tasks). */
  parent?: string | null;
}

/** Decides claims for a plan; the sync client implements it by asking the server. */
export interface ClaimArbiter {
  claim(taskId: string, actor: string): Promise<ClaimResult>;
  claimNext(actor: string, filter?: ClaimNextFilter): Promise<ClaimResult>;
  release(taskId: string, actor: string): Promise<ClaimResult>;
  handOff(taskId: string, from: string, to: string): Promise<ClaimResult>;
}

/** What an actor asks of one task. */
export type ClaimOperation = { op: 'claim' } | { op: 'release' } | { op: 'hand_off'; to: string };

/** What the rule decided: `lost` changes nothing; `grant` sets the holder and, when given, the status. */
export type ClaimDecision =
  | { kind: 'lost'; holder: string; message: string }
  | { kind: 'grant'; holder: string | null; status: Status | null; message: string };

/**
 * The claim rule. A task nobody holds, or that `actor` already holds, goes to `actor` (pending becomes
 * in_progress); closed tasks cannot be claimed. Only the holder releases (in_progress becomes pending again);
 * the holder, or anyone when nobody holds it, hands off. A refusal throws a CairnError naming what is valid.
 */
export function claimRule(task: TaskSnapshot, actor: string, operation: ClaimOperation): ClaimDecision {
  const id = task.id;
  switch (operation.op) {
    case 'claim':
      if (!isOpenStatus(task.status)) {
        throw new CairnError(
          'invalid_transition',
          `Task ${id} is ${task.status}; only open tasks can be claimed.`,
          { status: task.status },
        );
      }
      if (task.assignee !== null && task.assignee !== actor) {
        return {
          kind: 'lost',
          holder: task.assignee,
          message: `Task ${id} is already claimed by ${task.assignee}.`,
        };
      }
      return {
        kind: 'grant',
        holder: actor,
        status: task.status === 'pending' ? 'in_progress' : null,
        message: `${actor} now holds task ${id}.`,
      };
    case 'release':
      if (task.assignee !== actor) throw notHolder(task, actor, 'release');
      return {
        kind: 'grant',
        holder: null,
        status: task.status === 'in_progress' ? 'pending' : null,
        message: `${actor} released task ${id}.`,
      };
    case 'hand_off':
      if (task.assignee !== null && task.assignee !== actor) throw notHolder(task, actor, 'hand off');
      return {
        kind: 'grant',
        holder: operation.to,
        status: null,
        message: `${actor} handed task ${id} to ${operation.to}.`,
      };
  }
}

/** Whether claim_next may hand `task` (already ready for the actor) out: nobody holds it, and it is in scope. */
export function isClaimCandidate(
  task: TaskSnapshot,
  filter: ClaimNextFilter,
  effectiveParent: (task: TaskSnapshot) => string | null,
): boolean {
  return task.assignee === null && (filter.parent === undefined || effectiveParent(task) === filter.parent);
}

function notHolder(task: TaskSnapshot, actor: string, what: string): CairnError {
  return new CairnError(
    'conflict',
    task.assignee === null
      ? `Task ${task.id} is not claimed by anyone, so there is nothing to ${what}.`
      : `Task ${task.id} is held by ${task.assignee}, not ${actor}; only the holder can ${what} it.`,
    { holder: task.assignee },
  );
}

/** What the local arbiter needs of a plan: its tasks, what is ready, and one attributed write. */
export interface LocalArbiterHost {
  require(id: string): TaskSnapshot;
  /** Ready tasks for `actor`, in plan order. */
  ready(actor: string): TaskSnapshot[];
  effectiveParent(task: TaskSnapshot): string | null;
  /** Writes the holder (and status, when given) of a task, attributed to `by`, in one transaction. */
  assign(id: string, by: string, holder: string | null, status: Status | null): void;
}

/** A request as the server receives it: one operation on one task, or claim_next. */
export type ClaimRequestOperation =
  | { op: 'claim' | 'release'; taskId: string }
  | { op: 'hand_off'; taskId: string; to: string }
  | { op: 'claim_next'; filter?: ClaimNextFilter };

/**
 * Applies the claim rule on the document it is given and writes the outcome: the arbiter of a Plan without a
 * sync server, and the server's arbiter on the authoritative doc (there `arbitrated` is true).
 */
export class LocalArbiter implements ClaimArbiter {
  constructor(private readonly host: LocalArbiterHost) {}

  /** Decides one request now, synchronously. */
  decide(actor: string, request: ClaimRequestOperation, arbitrated = false): ClaimResult {
    if (request.op === 'claim_next') {
      const filter = request.filter ?? {};
      const next = this.host
        .ready(actor)
        .find((t) => isClaimCandidate(t, filter, (task) => this.host.effectiveParent(task)));
      if (!next) {
        return {
          outcome: 'none',
          taskId: null,
          holder: null,
          arbitrated,
          message: 'No ready, unclaimed task is left.',
        };
      }
      return this.decide(actor, { op: 'claim', taskId: next.id }, arbitrated);
    }
    const { taskId } = request;
    const decision = claimRule(this.host.require(taskId), actor, request);
    if (decision.kind === 'lost') {
      return { outcome: 'lost', taskId, holder: decision.holder, arbitrated, message: decision.message };
    }
    this.host.assign(taskId, actor, decision.holder, decision.status);
    return { outcome: 'won', taskId, holder: decision.holder, arbitrated, message: decision.message };
  }

  async claim(taskId: string, actor: string): Promise<ClaimResult> {
    return this.decide(actor, { op: 'claim', taskId });
  }

  async claimNext(actor: string, filter: ClaimNextFilter = {}): Promise<ClaimResult> {
    return this.decide(actor, { op: 'claim_next', filter });
  }

  async release(taskId: string, actor: string): Promise<ClaimResult> {
    return this.decide(actor, { op: 'release', taskId });
  }

  async handOff(taskId: string, from: string, to: string): Promise<ClaimResult> {
    return this.decide(from, { op: 'hand_off', taskId, to });
  }
}
