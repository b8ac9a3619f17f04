// Claims decided across instances: each instance applies the claim rule on its copy of the plan, and a claim it
// would grant is then reserved in Redis by a compare-and-set script with a fencing token, so of agents racing on
// different instances exactly one wins even before the instances' copies agree. A reservation lives as long as
// its lease: the instance where the holder is present keeps extending it; once it expired, one instance frees
// the task (docs/decisions/023).
import { CairnError } from '@cairn/core';
import type { ClaimReservations, ExpiredLease, Reservation } from '../extensions/claims.js';
import { describeError } from '../log.js';
import type { RedisClient } from './redis-connection.js';

const PLAN_PREFIX = 'cairn:plan:';
const claimKey = (planId: string, taskId: string) => `${PLAN_PREFIX}${planId}:claim:${taskId}`;
/** Hash of the plan's leases (task id to holder), granted by any server; outlives a reservation's expiry. */
const leasesKey = (planId: string) => `${PLAN_PREFIX}${planId}:leases`;
const FENCE_KEY = 'cairn:claim-fence';
/**
 * Sorted set of every lease in the cluster (`<plan>\n<task>`) scored by when its reservation runs out (Redis's
 * clock), so any instance finds the lapsed ones without loading, or even knowing, their plans.
 */
export const LEASE_DEADLINES_KEY = 'cairn:lease-deadlines';
const leaseMember = (planId: string, taskId: string) => `${planId}\n${taskId}`;

/** Lua: Redis's clock in ms (one clock for every instance). */
const NOW_MS = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

// KEYS: claim, fence, leases, deadlines. ARGV: actor, ttl ms, task id, deadline member, '1' to keep a lease.
// Grants when nobody holds the task or the actor already does (a renewal keeps its token); returns {1, token} or
// {0, holder}. Without a lease the reservation only decides the race: it is not watched and never lapses.
const RESERVE = `
${NOW_MS}
local holder = redis.call('HGET', KEYS[1], 'holder')
if holder and holder ~= ARGV[1] then return {0, holder} end
local token = redis.call('HGET', KEYS[1], 'token')
if not holder then
  token = redis.call('INCR', KEYS[2])
  redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'token', token)
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if ARGV[5] == '1' then
  redis.call('HSET', KEYS[3], ARGV[3], ARGV[1])
  redis.call('ZADD', KEYS[4], now + tonumber(ARGV[2]), ARGV[4])
end
return {1, tonumber(token)}
`;

// KEYS: claim, fence, leases, deadlines. ARGV: actor, new holder ('' to release), ttl ms, task id, deadline
// member, '1' to keep a lease for the new holder. Only the holder (or nobody, after an expiry) may move a
// reservation; a new holder gets a new token, so a stale holder's later write is refused.
const MOVE = `
${NOW_MS}
local holder = redis.call('HGET', KEYS[1], 'holder')
if holder and holder ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
  redis.call('HDEL', KEYS[3], ARGV[4])
  redis.call('ZREM', KEYS[4], ARGV[5])
  return 1
end
local token = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'holder', ARGV[2], 'token', token)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if ARGV[6] == '1' then
  redis.call('HSET', KEYS[3], ARGV[4], ARGV[2])
  redis.call('ZADD', KEYS[4], now + tonumber(ARGV[3]), ARGV[5])
else
  redis.call('HDEL', KEYS[3], ARGV[4])
  redis.call('ZREM', KEYS[4], ARGV[5])
end
return 1
`;

// KEYS: claim, deadlines. ARGV: actor, ttl ms, deadline member. Extends the holder's reservation; 0 when it is not
// (or no longer) theirs.
const EXTEND = `
${NOW_MS}
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[3])
return 1
`;

// KEYS: claim, lapse marker, leases, deadlines. ARGV: marker ttl ms, task id, holder, deadline member. A lease
// lapses once: only while no reservation is alive, and only for the first instance to set the marker (which drops
// it from the leases and the deadlines).
const LAPSE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[1]) then
  if redis.call('HGET', KEYS[3], ARGV[2]) == ARGV[3] then
    redis.call('HDEL', KEYS[3], ARGV[2])
    redis.call('ZREM', KEYS[4], ARGV[4])
  end
  return 1
end
return 0
`;

// KEYS: deadlines. ARGV: claim key prefix, most entries. The leases whose reservation ran out, as a flat list of
// plan, task, holder. The claim and leases keys are derived from each entry (one Redis, not Redis Cluster):
// an entry whose reservation is alive after all gets its deadline back, one with no lease left is dropped.
const EXPIRED = `
${NOW_MS}
local out = {}
for _, entry in ipairs(redis.call('ZRANGE', KEYS[1], '-inf', now, 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[2]))) do
  local cut = string.find(entry, '\\n', 1, true)
  local plan = string.sub(entry, 1, cut - 1)
  local task = string.sub(entry, cut + 1)
  local base = ARGV[1] .. plan
  local ttl = redis.call('PTTL', base .. ':claim:' .. task)
  local holder = redis.call('HGET', base .. ':leases', task)
  if ttl > 0 then
    redis.call('ZADD', KEYS[1], now + ttl, entry)
  elseif not holder then
    redis.call('ZREM', KEYS[1], entry)
  else
    table.insert(out, plan)
    table.insert(out, task)
    table.insert(out, holder)
  end
end
return out
`;
/** At most this many lapsed leases are taken per sweep (the rest on the next). */
const EXPIRED_BATCH = 100;

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

  async reserve(planId: string, taskId: string, actor: string, lease: boolean): Promise<Reservation> {
    const [won, value] = (await this.run(
      RESERVE,
      [claimKey(planId, taskId), FENCE_KEY, leasesKey(planId), LEASE_DEADLINES_KEY],
      [actor, String(this.ttlMs), taskId, leaseMember(planId, taskId), lease ? '1' : '0'],
    )) as [number, number | string];
    return won === 1 ? { holder: actor, token: Number(value) } : { holder: String(value), token: null };
  }

  async move(
    planId: string,
    taskId: string,
    from: string,
    to: string | null,
    lease: boolean,
  ): Promise<boolean> {
    const moved = await this.run(
      MOVE,
      [claimKey(planId, taskId), FENCE_KEY, leasesKey(planId), LEASE_DEADLINES_KEY],
      [from, to ?? '', String(this.ttlMs), taskId, leaseMember(planId, taskId), lease ? '1' : '0'],
    );
    return moved === 1;
  }

  async extend(planId: string, taskId: string, holder: string): Promise<boolean> {
    const extended = await this.run(
      EXTEND,
      [claimKey(planId, taskId), LEASE_DEADLINES_KEY],
      [holder, String(this.ttlMs), leaseMember(planId, taskId)],
    );
    return extended === 1;
  }

  async mayLapse(planId: string, taskId: string, holder: string): Promise<boolean> {
    // The marker outlives the servers' sweeps of this lapse; by the time it expires the freed task has reached
    // them, and a lease that is not in the plan any more is not lapsed again.
    const lapsed = await this.run(
      LAPSE,
      [
        claimKey(planId, taskId),
        `${claimKey(planId, taskId)}:lapsed:${holder}`,
        leasesKey(planId),
        LEASE_DEADLINES_KEY,
      ],
      [String(this.ttlMs), taskId, holder, leaseMember(planId, taskId)],
    );
    return lapsed === 1;
  }

  async expired(): Promise<ExpiredLease[]> {
    const flat = (await this.run(
      EXPIRED,
      [LEASE_DEADLINES_KEY],
      [PLAN_PREFIX, String(EXPIRED_BATCH)],
    )) as string[];
    const out: ExpiredLease[] = [];
    for (let i = 0; i + 2 < flat.length; i += 3) {
      out.push({ planId: flat[i]!, taskId: flat[i + 1]!, holder: flat[i + 2]! });
    }
    return out;
  }

  async leases(planId: string): Promise<Map<string, string>> {
    return new Map(Object.entries(await this.redis.hGetAll(leasesKey(planId))));
  }
}
