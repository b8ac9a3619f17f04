// When to compact a stored log, and how long to wait after a compaction failed: decided here for every store.

/**
 * When to replace a log by one record holding everything: once the records after the first number at least
 * `max(records, firstBytes / 256)`, or take more bytes than the first (and at least `minBytes`). So a log stays
 * under about twice its snapshot plus `minBytes`, a cold load applies a tail that costs a fraction of decoding
 * the snapshot, and a large plan is not rewritten whole every `records` edits (measured: applying a small update
 * costs about 9 us, decoding 1 KiB of snapshot about 0.24 ms).
 */
export interface CompactionPolicy {
  /** Fewest records after the first that trigger a compaction (more for a large plan). */
  records?: number;
  /** Keeps a tiny plan from compacting every few edits. Default 16 KiB. */
  minBytes?: number;
}

/** What the policy measures of a log. */
export interface LogSize {
  records: number;
  bytes: number;
  /** Bytes of the first record: the snapshot, once the log was compacted. */
  firstBytes: number;
}

/** The record threshold grows with the snapshot: see CompactionPolicy. */
export function compactAfterRecords(records: number, stateBytes: number): number {
  return Math.max(records, Math.floor(stateBytes / 256));
}

/** True when `size` has passed `policy` (see CompactionPolicy). */
export function policyWantsCompaction(policy: Required<CompactionPolicy>, size: LogSize): boolean {
  const tailRecords = size.records - 1;
  const tailBytes = size.bytes - size.firstBytes;
  return (
    tailRecords >= compactAfterRecords(policy.records, size.firstBytes) ||
    tailBytes >= Math.max(policy.minBytes, size.firstBytes)
  );
}

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5_000;

/**
 * After a failed compaction the next one the policy asks for waits, doubling from 100 ms to 5 s, so a full disk
 * is not hit with a whole-state rewrite on every edit. An explicit flush or compact does not wait.
 */
export class Backoff {
  private delay = 0;
  private until = 0;

  /** True while a compaction the policy asks for should wait. */
  get waiting(): boolean {
    return Date.now() < this.until;
  }

  failed(): void {
    this.delay = Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, this.delay * 2));
    this.until = Date.now() + this.delay;
  }

  succeeded(): void {
    this.delay = 0;
    this.until = 0;
  }
}
