// The learning queue's index shared by a cluster: one Redis sorted set of plans scored by when their soonest
// queued distillation is due, kept by every server that queues or runs jobs and read by every server's sweep; a
// job is run by the server that takes its lock (cluster/jobs.ts), so it runs once even when its server died.
import type { RunOnce } from '../extensions/auto-close.js';
import type { SharedLearningQueue } from '../extensions/learning/shared-queue.js';
import type { RedisClient } from './redis-connection.js';

export const LEARNING_INDEX_KEY = 'cairn:learning-due';

export class RedisLearningQueue implements SharedLearningQueue {
  constructor(
    private readonly redis: RedisClient,
    private readonly once: RunOnce,
  ) {}

  async mark(planId: string, at: number | null): Promise<void> {
    if (at === null) await this.redis.zRem(LEARNING_INDEX_KEY, planId);
    else await this.redis.zAdd(LEARNING_INDEX_KEY, { score: at, value: planId });
  }

  async due(now: number): Promise<{ due: Array<{ planId: string; at: number }>; next: number | null }> {
    const due = (await this.redis.zRangeByScoreWithScores(LEARNING_INDEX_KEY, '-inf', now)).map(
      ({ value, score }) => ({ planId: value, at: score }),
    );
    const later = await this.redis.zRangeByScoreWithScores(LEARNING_INDEX_KEY, `(${now}`, '+inf', {
      LIMIT: { offset: 0, count: 1 },
    });
    return { due, next: later[0]?.score ?? null };
  }

  take(key: string, ttlMs: number): Promise<boolean> {
    return this.once(key, ttlMs);
  }
}
