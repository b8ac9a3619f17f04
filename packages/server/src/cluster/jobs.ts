// Background jobs of a cluster run once: a server takes a job by setting its key in Redis only if nobody has
// (SET NX with an expiry). The key outlives the job, so a server that saw the same due wake-up or the same ended
// turn a moment later skips it; if the taker died, the key expires and another server takes the job. A job that
// must not run twice even later (a judged turn) is marked done, which keeps its key for a while longer.
import type { JobLock } from '../extensions/auto-close.js';
import type { RedisClient } from './redis-connection.js';

const DONE = 'done';
const jobKey = (key: string) => `cairn:job:${key}`;

// KEYS: job. -1: done; 0: free; otherwise ms until the taker's lock lapses.
const LAPSES_IN = `
local holder = redis.call('GET', KEYS[1])
if holder == '${DONE}' then return -1 end
if not holder then return 0 end
return math.max(redis.call('PTTL', KEYS[1]), 0)
`;

export function redisOnce(redis: RedisClient, owner: string): JobLock {
  const take = async (key: string, ttlMs: number): Promise<boolean> => {
    const set = await redis.set(jobKey(key), owner, {
      condition: 'NX',
      expiration: { type: 'PX', value: ttlMs },
    });
    return set === 'OK';
  };
  return Object.assign(take, {
    async done(key: string, keepMs: number): Promise<void> {
      await redis.set(jobKey(key), DONE, { expiration: { type: 'PX', value: keepMs } });
    },
    async lapsesIn(key: string): Promise<number | null> {
      const ms = Number(await redis.eval(LAPSES_IN, { keys: [jobKey(key)] }));
      return ms < 0 ? null : ms;
    },
  });
}
