// Claims decided across instances: each instance applies the claim rule on its copy of the plan, and a claim it
// would grant is then reserved in Redis by a compare-and-set script with a fencing token, so of agents racing on
// different instances exactly one wins even before the instances' copies agree. A reservation lives as long as
// its lease: the instance where the holder is present keeps extending it; once it expired, one instance frees
// the task (docs/decisions/023).
import { CairnError } from '@cairn/core';
import type { ClaimReservations, Reservation } from '../claims.js';
import { describeError } from '../log.js';
import type { RedisClient } from './redis-relay.js';

const claimKey = (planId: string, taskId: string) => `cairn:plan:${planId}:claim:${taskId}`;
/** Hash of the plan's leases (task id to holder), granted by any server; outlives a reservation's expiry. */
const leasesKey = (planId: string) => `cairn:plan:${planId}:leases`;
const FENCE_KEY = 'cairn:claim-fence';

// KEYS: claim, fence, leases. ARGV: actor, ttl ms, task id. Grants when nobody holds the task or the actor already
// does (a renewal keeps its token); returns {1, token} or {0, holder}.
const RESERVE = `
local holder = redis.call('HGET', KEYS[1], 'holder')
if holder and holder ~= ARGV[1] then return {0, holder} end
local token = redis.call('HGET', KEYS[1], 'token')
if not holder then
  token = redis.call('INCR', KEYS[2])
  redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'token', token)
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[3], ARGV[1])
return {1, tonumber(token)}
`;

// KEYS: claim, fence, leases. ARGV: actor, new holder ('' to release), ttl ms, task id. Only the holder (or
// nobody, after an expiry) may move a reservation; a new holder gets a new token, so a stale holder's later
// write is refused.
const MOVE = `
local holder = redis.call('HGET', KEYS[1], 'holder')
if holder and holder ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
  redis.call('HDEL', KEYS[3], ARGV[4])
  return 1
end
local token = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'holder', ARGV[2], 'token', token)
redis.call('HSET', KEYS[3], ARGV[4], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`;

// KEYS: claim. ARGV: actor, ttl ms. Extends the holder's reservation; 0 when it is not (or no longer) theirs.
const EXTEND = `
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

// KEYS: claim, lapse marker, leases. ARGV: marker ttl ms, task id, holder. A lease lapses once: only while no
// reservation is alive, and only for the first instance to set the marker (which drops it from the leases).
const LAPSE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[1]) then
  if redis.call('HGET', KEYS[3], ARGV[2]) == ARGV[3] then redis.call('HDEL', KEYS[3], ARGV[2]) end
  return 1
end
return 0
`;

export class RedisClaimReservations implements ClaimReservations {
  constructor(
    private readonly redis: RedisClient,
    /** How long a reservation lives without being extended (the lease). */
    private readonly ttlMs: number,
  ) {}

  /** Runs a script; a Redis that is away is a `storage` error (the claim is refused, nothing written). */
  private async run(script: string, keys: string[], args: string[]): Promise<unknown> {
    try {
      return await this.redis.eval(script, { keys, arguments: args });
    } catch (error) {
      throw new CairnError(
        'storage',
        `Claims are decided in Redis, which failed: ${describeError(error)}`,
        {},
        { cause: error },
      );
    }
  }

  async reserve(planId: string, taskId: string, actor: string): Promise<Reservation> {
    const [won, value] = (await this.run(
      RESERVE,
      [claimKey(planId, taskId), FENCE_KEY, leasesKey(planId)],
      [actor, String(this.ttlMs), taskId],
    )) as [number, number | string];
    return won === 1 ? { holder: actor, token: Number(value) } : { holder: String(value), token: null };
  }

  async move(planId: string, taskId: string, from: string, to: string | null): Promise<boolean> {
    const moved = await this.run(
      MOVE,
      [claimKey(planId, taskId), FENCE_KEY, leasesKey(planId)],
      [from, to ?? '', String(this.ttlMs), taskId],
    );
    return moved === 1;
  }

  async extend(planId: string, taskId: string, holder: string): Promise<boolean> {
    const extended = await this.run(EXTEND, [claimKey(planId, taskId)], [holder, String(this.ttlMs)]);
    return extended === 1;
  }

  async mayLapse(planId: string, taskId: string, holder: string): Promise<boolean> {
    // The marker outlives the servers' sweeps of this lapse; by the time it expires the freed task has reached
    // them, and a lease that is not in the plan any more is not lapsed again.
    const lapsed = await this.run(
      LAPSE,
      [claimKey(planId, taskId), `${claimKey(planId, taskId)}:lapsed:${holder}`, leasesKey(planId)],
      [String(this.ttlMs), taskId, holder],
    );
    return lapsed === 1;
  }

  async leases(planId: string): Promise<Map<string, string>> {
    return new Map(Object.entries(await this.redis.hGetAll(leasesKey(planId))));
  }
}
