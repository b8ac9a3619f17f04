// The wake index shared by a cluster: one Redis sorted set of `plan\ntask` scored by wake time, kept current by
// every instance that has the plan loaded and read by every instance's sweeper, so a due wake-up fires on a live
// instance even when the instance that saw it set is gone and nobody else loaded the plan.
import type { SharedWakeIndex, WakeEntry } from '../extensions/wake.js';
import type { RedisClient } from './redis-connection.js';

export const WAKE_INDEX_KEY = 'cairn:wake-index';

const member = (planId: string, taskId: string) => `${planId}\n${taskId}`;

export class RedisWakeIndex implements SharedWakeIndex {
  constructor(private readonly redis: RedisClient) {}

  async set(planId: string, taskId: string, at: number | null): Promise<void> {
    if (at === null) await this.redis.zRem(WAKE_INDEX_KEY, member(planId, taskId));
    else await this.redis.zAdd(WAKE_INDEX_KEY, { score: at, value: member(planId, taskId) });
  }

  async due(now: number): Promise<{ due: WakeEntry[]; next: number | null }> {
    const due: WakeEntry[] = [];
    for (const { value, score } of await this.redis.zRangeByScoreWithScores(WAKE_INDEX_KEY, '-inf', now)) {
      const cut = value.indexOf('\n');
      if (cut > 0) due.push({ planId: value.slice(0, cut), taskId: value.slice(cut + 1), at: score });
    }
    const later = await this.redis.zRangeByScoreWithScores(WAKE_INDEX_KEY, `(${now}`, '+inf', {
      LIMIT: { offset: 0, count: 1 },
    });
    return { due, next: later[0]?.score ?? null };
  }
}
