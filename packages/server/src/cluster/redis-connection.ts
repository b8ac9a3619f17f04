// The connection an instance keeps to Redis: probed first, so a Redis that is down is named at start-up, then
// retried quickly for as long as it is away.
import { CairnError } from '@cairn/core';
import { createClient } from 'redis';
import { describeError } from '../log.js';
import { redactUrl } from './urls.js';

export type RedisClient = ReturnType<typeof createClient>;

/**
 * Redis is retried every 100 ms or so however long it has been away: acknowledgements fail until it is back, so
 * the first retry after its return decides how long they keep failing (a delay doubling to 2 s left them failing
 * about a second). A refused connection on a private network costs next to nothing; the jitter keeps instances
 * (and each one's three connections) from arriving together.
 */
function reconnectDelay(retries: number): number {
  return Math.min(25 * 2 ** retries, 100) + Math.floor(Math.random() * 25);
}

/** Connects to Redis (rejecting with CairnError `storage` naming the URL when it is down) and makes the relay. */
export async function connectRedis(url: string): Promise<RedisClient> {
  const client = createClient({
    url,
    // A command sent while the connection is down fails at once instead of waiting: writes fail loudly.
    disableOfflineQueue: true,
    socket: { connectTimeout: 5000, reconnectStrategy: reconnectDelay },
  });
  let lastError: unknown = null;
  client.on('error', (error) => {
    lastError = error;
  });
  const probe = createClient({ url, socket: { connectTimeout: 5000, reconnectStrategy: false } });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    await probe.ping();
  } catch (error) {
    throw new CairnError(
      'storage',
      `Could not reach Redis at ${redactUrl(url)}: ${describeError(error ?? lastError)}`,
      {},
      { cause: error },
    );
  } finally {
    await probe.close().catch(() => undefined);
  }
  await client.connect();
  return client;
}
