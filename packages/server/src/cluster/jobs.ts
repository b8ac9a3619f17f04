// Background jobs of a cluster run once: a server takes a job by setting its key in Redis only if nobody has
// (SET NX with an expiry). The key outlives the job, so a server that saw the same due wake-up or the same ended
// turn a moment later skips it; if the taker died, the key expires and another server takes the job.
import type { RunOnce } from '../auto-close.js';
import type { RedisClient } from './redis-relay.js';

export function redisOnce(redis: RedisClient, owner: string): RunOnce {
  return async (key, ttlMs) => {
    const set = await redis.set(`cairn:job:${key}`, owner, {
      condition: 'NX',
      expiration: { type: 'PX', value: ttlMs },
    });
    return set === 'OK';
  };
}
