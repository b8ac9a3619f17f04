// The learning queue's side in a cluster: the plans with queued jobs, shared by every server, and a lock per job,
// so a job queued on a server that died runs on another, and runs once. Failures are logged, never thrown: without
// the shared index a server still runs what it queued itself.
import { describeError, type Logger } from '../../log.js';

/** The plans with queued jobs, shared by the servers of a cluster, and a lock that lets one of them run a job. */
export interface SharedLearningQueue {
  /** Records when a plan's soonest job is due (null: it has none left). */
  mark(planId: string, at: number | null): Promise<void>;
  /** The plans with a job due by `now`, and when the next later one is due. */
  due(now: number): Promise<{ due: Array<{ planId: string; at: number }>; next: number | null }>;
  /** True for the one server that takes `key`, until `ttlMs` has passed. */
  take(key: string, ttlMs: number): Promise<boolean>;
}

/** The learner's handle on a shared queue, or on none (one server: every job is its own). */
export class SharedQueue {
  /** The soonest due time in the shared index after the last read, so the timer wakes for it too. */
  next: number | null = null;

  constructor(
    private readonly shared: SharedLearningQueue | null,
    private readonly logger: Logger,
  ) {}

  get enabled(): boolean {
    return this.shared !== null;
  }

  /** True without a shared queue; in a cluster, true for the one server that took `key`. */
  async take(key: string, ttlMs: number): Promise<boolean> {
    if (!this.shared) return true;
    try {
      return await this.shared.take(key, ttlMs);
    } catch (error) {
      // Not taken: the job stays queued, and a later sweep (here or elsewhere) tries again.
      this.logger.error('could not take a learning job', { key, error: describeError(error) });
      return false;
    }
  }

  mark(planId: string, at: number | null): void {
    this.shared?.mark(planId, at).catch((error: unknown) => {
      this.logger.error('could not write the shared learning index', {
        plan: planId,
        error: describeError(error),
      });
    });
  }

  /** The shared index's due plans (none without one, or when it cannot be read: the local ones still run). */
  async due(now: number): Promise<Array<{ planId: string; at: number }>> {
    if (!this.shared) return [];
    try {
      const { due, next } = await this.shared.due(now);
      this.next = next;
      return due;
    } catch (error) {
      this.logger.error('could not read the shared learning index', { error: describeError(error) });
      return [];
    }
  }
}
