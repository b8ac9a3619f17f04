// @cairn/server/cluster: several `cairn serve` instances sharing plans through Redis, stored in PostgreSQL
// (docs/decisions/023). Node-only; loaded only when a cluster is configured, so the embedded default needs neither.
import { randomUUID } from 'node:crypto';
import { CairnError } from '@cairn/core';
import { isPlanDocId } from '@cairn/core/learning';
import { type ClaimOptions, DEFAULT_ABSENT_MS } from '../extensions/claims.js';
import type { LearningOptions } from '../extensions/learning/learner.js';
import type { CairnServerOptions } from '../node-host.js';
import { redisOnce } from './jobs.js';
import { RedisLearningQueue } from './learning-queue.js';
import { PostgresStore, type PostgresStoreOptions } from './postgres-store.js';
import { RedisClaimReservations } from './redis-claims.js';
import { connectRedis, type RedisClient } from './redis-connection.js';
import { RedisRelay, type RedisRelayOptions } from './redis-relay.js';
import { redactUrl } from './urls.js';
import { RedisWakeIndex } from './wake-index.js';

export { COMPACTION_LOCK } from './compaction-worker.js';
export { LEARNING_INDEX_KEY, RedisLearningQueue } from './learning-queue.js';
export type { PostgresStoreOptions } from './postgres-store.js';
export { POSTGRES_SCHEMA_VERSION, PostgresStore } from './postgres-store.js';
export { RedisClaimReservations } from './redis-claims.js';
export type { RedisClient } from './redis-connection.js';
export { connectRedis } from './redis-connection.js';
export type { RedisRelayOptions } from './redis-relay.js';
export { REDIS_VIA, RedisRelay } from './redis-relay.js';
export { RedisWakeIndex, WAKE_INDEX_KEY } from './wake-index.js';

export interface ClusterOptions {
  redisUrl: string;
  postgresUrl: string;
  postgres?: PostgresStoreOptions;
  relay?: Pick<RedisRelayOptions, 'retentionMs' | 'confirmMs'>;
  /** Claim leases (as `createCairnServer`'s `claims`); a reservation in Redis lives `absentMs` (default 60 s). */
  claims?: Omit<ClaimOptions, 'reservations'>;
}

/** What `createCairnServer` needs to run as one instance of a cluster. */
export interface Cluster {
  readonly store: PostgresStore;
  readonly redis: RedisClient;
  /** Spread into `createCairnServer`: the store, the relay extension and the `/healthz` checks. */
  readonly serverOptions: Required<
    Pick<CairnServerOptions, 'store' | 'extensions' | 'services' | 'claims' | 'wake' | 'autoClose'>
  > & { learning: Required<Pick<LearningOptions, 'shared'>> };
  /** The relay, once the server made it. */
  relay(): RedisRelay | null;
}

/** Redis key naming the PostgreSQL database the instances on this Redis share. */
export const STORE_MARKER_KEY = 'cairn:store-id';

/**
 * Connects to both services (rejecting with CairnError `storage` naming the URL that is down) and checks that
 * they belong together: a Redis already serving instances of another database is refused.
 */
export async function connectCluster(options: ClusterOptions): Promise<Cluster> {
  const store = await PostgresStore.connect(options.postgresUrl, { ...options.postgres, mode: 'cluster' });
  let redis: RedisClient;
  try {
    redis = await connectRedis(options.redisUrl);
  } catch (error) {
    await store.close().catch(() => undefined);
    throw error;
  }
  try {
    await claimRedisForStore(redis, store, options.redisUrl);
  } catch (error) {
    redis.destroy();
    await store.close().catch(() => undefined);
    throw error;
  }
  let relay: RedisRelay | null = null;
  const once = redisOnce(redis, randomUUID());
  return {
    store,
    redis,
    relay: () => relay,
    serverOptions: {
      store,
      // Traces and skills are documents too; only plans have wake-ups.
      wake: {
        listPlans: async () => (await store.listPlans()).filter(isPlanDocId),
        once,
        shared: new RedisWakeIndex(redis),
      },
      autoClose: { once },
      learning: { shared: new RedisLearningQueue(redis, once) },
      claims: {
        ...options.claims,
        reservations: new RedisClaimReservations(redis, options.claims?.absentMs || DEFAULT_ABSENT_MS),
      },
      extensions: [
        (host) => {
          relay = new RedisRelay(host, redis, {
            url: options.redisUrl,
            readStored: (planId) => store.readStored(planId),
            stored: (planId) => store.committed(planId),
            append: (planId, update) => store.append(planId, update),
            ...options.relay,
          });
          return relay;
        },
        // The relay's first look at each change, before the store's (RedisRelay.sharing).
        () => relay!.sharing,
      ],
      services: [
        { name: 'redis', check: () => pingRedis(redis, options.redisUrl) },
        { name: 'postgres', check: () => store.ping() },
      ],
    },
  };
}

async function pingRedis(redis: RedisClient, url: string): Promise<void> {
  try {
    await redis.ping();
  } catch (error) {
    throw new CairnError('storage', `Redis at ${redactUrl(url)} is unreachable: ${(error as Error).message}`);
  }
}

async function claimRedisForStore(redis: RedisClient, store: PostgresStore, url: string): Promise<void> {
  await redis.set(STORE_MARKER_KEY, store.storeId, { condition: 'NX' });
  const owner = await redis.get(STORE_MARKER_KEY);
  if (owner !== store.storeId) {
    throw new CairnError(
      'invalid_argument',
      `Redis at ${redactUrl(url)} already serves Cairn instances of another PostgreSQL database (store ${owner}); ` +
        `this one is store ${store.storeId}. Give each cluster its own Redis (or database number).`,
    );
  }
}
