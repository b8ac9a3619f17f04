// What one connection and one plan may cost the server, with the defaults. Every limit that trips closes that
// connection only, with a named close code (docs/PROTOCOL.md).
import { CairnError } from '@cairn/core';

export interface Limits {
  /** Largest frame accepted, in bytes. Default 8 MiB (a fresh client's first sync can carry a whole plan). */
  maxMessageBytes: number;
  /** Largest plan, in bytes of its encoded state. Default 64 MiB. */
  maxDocBytes: number;
  /** Sustained messages per second per connection. Default 200. */
  messagesPerSecond: number;
  /** Messages a connection may send in a burst above the sustained rate. Default 2000. */
  messageBurst: number;
  /** Sustained bytes per second per connection. Default 4 MiB. */
  bytesPerSecond: number;
  /** Bytes in a burst. Default 32 MiB (at least `maxMessageBytes`). */
  byteBurst: number;
  /** Messages a connection may send before its plan has loaded. Default 256. */
  maxQueuedMessages: number;
  /** Bytes queued before the plan has loaded. Default 16 MiB. */
  maxQueuedBytes: number;
  /** Acknowledgement requests awaiting the store per connection. Default 64. */
  maxPendingAcks: number;
  /** Awareness client ids one connection may speak for. Default 8. */
  maxAwarenessClients: number;
  /** Entries in one awareness message; a larger one is refused unread and closes the connection (4400). Default 64. */
  maxAwarenessEntries: number;
  /** Bytes of one client's awareness state (its JSON); a larger state is dropped. Default 16 KiB. */
  maxAwarenessStateBytes: number;
  /** Bytes of every awareness state of one plan together; states that would exceed it are dropped. Default 1 MiB. */
  maxPresenceBytes: number;
  /** Bytes queued for a client that does not read; above it the connection is closed (4503). Default 64 MiB. */
  maxBufferedBytes: number;
}

export const DEFAULT_LIMITS: Limits = {
  maxMessageBytes: 8 * 1024 * 1024,
  maxDocBytes: 64 * 1024 * 1024,
  messagesPerSecond: 200,
  messageBurst: 2000,
  bytesPerSecond: 4 * 1024 * 1024,
  byteBurst: 32 * 1024 * 1024,
  maxQueuedMessages: 256,
  maxQueuedBytes: 16 * 1024 * 1024,
  maxPendingAcks: 64,
  maxAwarenessClients: 8,
  maxAwarenessEntries: 64,
  maxAwarenessStateBytes: 16 * 1024,
  maxPresenceBytes: 1024 * 1024,
  maxBufferedBytes: 64 * 1024 * 1024,
};

export function resolveLimits(overrides: Partial<Limits> = {}): Limits {
  const limits = { ...DEFAULT_LIMITS, ...overrides };
  limits.byteBurst = Math.max(limits.byteBurst, limits.maxMessageBytes);
  return limits;
}

/** A token bucket: `take(n)` is false once more than `burst` was taken faster than `rate` per second refills. */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = burst;
    this.last = now();
  }

  take(n = 1): boolean {
    this.refill();
    if (this.tokens < n) return false;
    this.tokens -= n;
    return true;
  }

  /** Milliseconds until `n` could be taken (0: now; Infinity: never, `n` is above the burst). */
  waitMs(n = 1): number {
    if (n > this.burst) return Number.POSITIVE_INFINITY;
    this.refill();
    return this.tokens >= n ? 0 : ((n - this.tokens) / this.rate) * 1000;
  }

  /** Whether the bucket is full again (an idle caller: its bucket can be forgotten). */
  get full(): boolean {
    this.refill();
    return this.tokens >= this.burst;
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.rate);
    this.last = t;
  }
}

/**
 * The refusal of a write that would grow a plan past `maxDocBytes`: one error, whichever path the write came by
 * (a client's update: 4414; an HTTP write: 413).
 */
export function planTooLarge(maxDocBytes: number): CairnError {
  return new CairnError(
    'limit',
    `The plan would exceed ${maxDocBytes} bytes (the server's maxDocBytes); nothing was written.`,
    { maxDocBytes, status: 413 },
  );
}
