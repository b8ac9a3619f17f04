// The cluster's live feed against a real redis-server: each plan's stream entries reach the relay in stream order,
// each once, whether they were pushed before the room was loaded, pushed twice, added without a push, or pushed
// while the subscriber was away.
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LiveFeed } from '../src/cluster/live-feed.js';
import type { RedisClient } from '../src/cluster/redis-connection.js';
import { ADD_ENTRY, liveChannel, type StreamEntry, streamKey } from '../src/cluster/stream-entries.js';
import { onCleanup } from './helpers.js';
import { type Service, startRedis } from './services.js';

let redis: Service;
beforeAll(async () => {
  redis = await startRedis();
}, 30_000);
afterAll(() => redis?.destroy());

async function feedOn(plan: string) {
  const client: RedisClient = createClient({ url: redis.url });
  client.on('error', () => undefined);
  await client.connect();
  const subscriber = client.duplicate();
  subscriber.on('error', () => undefined);
  onCleanup(() => {
    subscriber.destroy();
    client.destroy();
  });
  const delivered: string[] = [];
  const failures: string[] = [];
  const feed = new LiveFeed({
    client,
    subscriber,
    connected: subscriber.connect(),
    deliver: (planId, entries) => {
      expect(planId).toBe(plan);
      delivered.push(...entries.map(([, fields]) => fields[3]!));
    },
    failed: (op) => failures.push(op),
  });
  /** Adds an entry as an instance does (to the stream, and pushed); its update field is `value`. */
  const add = async (value: string) =>
    (await client.sendCommand([
      'EVAL',
      ADD_ENTRY,
      '1',
      streamKey(plan),
      liveChannel(plan),
      '0',
      'i',
      'writer',
      'u',
      value,
    ])) as string;
  /** Adds an entry to the stream only: its push is lost. */
  const addSilently = async (value: string) =>
    (await client.sendCommand(['XADD', streamKey(plan), '*', 'i', 'writer', 'u', value])) as string;
  return { client, subscriber, feed, delivered, failures, add, addSilently };
}

/** Lets pushes already sent arrive (a round trip on another connection of the same Redis). */
async function settle(client: RedisClient): Promise<void> {
  await client.ping();
  await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('LiveFeed', () => {
  it('returns the stream at open, holds what is pushed until start, then hands each entry over once, in order', async () => {
    const { client, feed, delivered, failures, add } = await feedOn('feed:order');
    await add('a');
    await add('b');
    const opened = await feed.open('feed:order');
    expect(opened.map(([, fields]) => fields[3])).toEqual(['a', 'b']);
    await add('c');
    await add('d');
    await settle(client);
    expect(delivered).toEqual([]); // the room is not loaded yet
    feed.start('feed:order');
    expect(delivered).toEqual(['c', 'd']);
    for (const value of ['e', 'f', 'g']) await add(value);
    await vi.waitFor(() => expect(delivered).toEqual(['c', 'd', 'e', 'f', 'g']));
    expect(failures).toEqual([]);
  });

  it('reads the stream for an entry whose push it never got, and skips a message it already handed over', async () => {
    const { client, feed, delivered, add, addSilently } = await feedOn('feed:gap');
    await feed.open('feed:gap');
    feed.start('feed:gap');
    await add('a');
    await addSilently('lost');
    await add('b');
    await vi.waitFor(() => expect(delivered).toEqual(['a', 'lost', 'b']));
    // The same message again (Redis never sends one twice, but a reader must not apply one twice either).
    const [last] = (await client.sendCommand([
      'XREVRANGE',
      streamKey('feed:gap'),
      '+',
      '-',
      'COUNT',
      '2',
    ])) as [StreamEntry, StreamEntry];
    await client.publish(liveChannel('feed:gap'), `0-0 ${last[0]} ${last[1].join(' ')}`);
    await add('c');
    await vi.waitFor(() => expect(delivered).toEqual(['a', 'lost', 'b', 'c']));
  });

  it('after its subscriber comes back, reads what was added while it was away, with no push after it', async () => {
    const { client, subscriber, feed, delivered, add, addSilently } = await feedOn('feed:away');
    await feed.open('feed:away');
    feed.start('feed:away');
    await add('before');
    await vi.waitFor(() => expect(delivered).toEqual(['before']));
    await client.sendCommand(['CLIENT', 'KILL', 'TYPE', 'pubsub']);
    await addSilently('while away');
    await vi.waitFor(() => expect(subscriber.isReady).toBe(true));
    await settle(client);
    expect(delivered).toEqual(['before']);
    await feed.resume();
    expect(delivered).toEqual(['before', 'while away']);
    // Subscribed again: pushes arrive as before.
    await add('after');
    await vi.waitFor(() => expect(delivered).toEqual(['before', 'while away', 'after']));
  });

  it('a plan whose first read failed is read whole at start, once Redis answers', async () => {
    const { client, feed, delivered, failures, add } = await feedOn('feed:broken');
    await client.set(streamKey('feed:broken'), 'not a stream');
    await expect(feed.open('feed:broken')).rejects.toThrow(/WRONGTYPE/);
    await client.del(streamKey('feed:broken'));
    await add('x'); // pushed while the plan is not started: held, and read again from the stream's start
    await settle(client);
    feed.start('feed:broken');
    await vi.waitFor(() => expect(delivered).toEqual(['x']));
    await add('y');
    await vi.waitFor(() => expect(delivered).toEqual(['x', 'y']));
    expect(failures).toEqual([]);
  });

  it('hands nothing over after close', async () => {
    const { client, feed, delivered, add } = await feedOn('feed:closed');
    await feed.open('feed:closed');
    feed.start('feed:closed');
    await add('open');
    await vi.waitFor(() => expect(delivered).toEqual(['open']));
    await feed.close('feed:closed');
    await add('closed');
    await settle(client);
    expect(delivered).toEqual(['open']);
  });
});
