// Acknowledgements resume as soon as Redis is back: three instances lose redis-server for long enough that a
// doubling reconnect delay would have grown to seconds, and each acknowledges again within a few hundred ms of
// Redis accepting connections.
import { describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import { startInstance, useClusterServices } from './cluster-helpers.js';
import { cairnClient } from './helpers.js';

const services = useClusterServices();

/** Writes key after key and asks for each acknowledgement; `acked` holds when each one came. */
function writer(url: string, planId: string, name: string) {
  const doc = new Y.Doc();
  const conn = cairnClient(url, planId, doc);
  const state = { acked: [] as number[], failures: 0, stop: false };
  const done = (async () => {
    await conn.whenSynced(30_000);
    for (let n = 0; !state.stop; n++) {
      doc.getMap('tasks').set(`${name}-${n}`, n);
      try {
        await conn.whenAcknowledged(5_000);
        state.acked.push(Date.now());
      } catch {
        state.failures++;
        // Redis is away: the answer is an immediate error; ask at a modest pace instead of spinning.
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  })();
  return Object.assign(state, { done });
}

describe('Redis coming back', () => {
  it('acknowledgements resume on every instance within 400 ms of redis-server accepting connections', async () => {
    const instances = await Promise.all([0, 1, 2].map(() => startInstance(services)));
    const writers = instances.map((instance, i) => writer(instance.url, 'acme:redis-return', `w${i}`));
    await vi.waitFor(() => expect(writers.every((w) => w.acked.length >= 5)).toBe(true), { timeout: 30_000 });

    await services.redis.stop('kill');
    const failuresAt = writers.map((w) => w.failures);
    await vi.waitFor(() => expect(writers.every((w, i) => w.failures > failuresAt[i]!)).toBe(true), {
      timeout: 30_000,
    });
    // Down for 4 s: a reconnect delay that doubles (50 ms, 100 ms, ... capped at 2 s) would be at its cap.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    await services.redis.start();
    const back = Date.now();
    await vi.waitFor(() => expect(writers.every((w) => w.acked.some((at) => at >= back))).toBe(true), {
      timeout: 30_000,
    });
    const resumedAfter = writers.map((w) => w.acked.find((at) => at >= back)! - back);
    expect(Math.max(...resumedAfter), `resumed after ${resumedAfter.join(', ')} ms`).toBeLessThan(400);
    for (const w of writers) w.stop = true;
    await Promise.all(writers.map((w) => w.done));
  }, 120_000);
});
