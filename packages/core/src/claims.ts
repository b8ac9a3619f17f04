// Claims: who works on a task. A CRDT alone cannot make a claim exclusive (two replicas that set `assignee`
// concurrently both believe they won until they sync, and Yjs then picks by clientID), so a Plan can be given
// an arbiter (the sync server) that decides in arrival order. Without one, claims are decided locally.

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
