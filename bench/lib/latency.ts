// The edit → seen loop the latency benchmarks share (sync latency, the cluster, the edge host): a sender and an
// observer, each a y-websocket client with a Plan, and a task the sender flips while the observer waits for it.
import { createPlan, type Plan } from '@cairn/core';
import { connectClient, timeStatusFlip, untilTasks } from './clients.js';
import { now } from './measure.js';
import { makeRoom, seedRooms, spawnClients } from './rooms.js';
import type { RunningServer, ServerKind } from './servers.js';

/** A sender's and an observer's Plan on one plan, the task the sender flips, and what measures under `key`. */
export interface LatencyPair<K extends string = string> {
  readonly key: K;
  readonly from: Plan;
  readonly to: Plan;
  readonly target: string;
  stop(): Promise<void>;
}

/**
 * A pair in a room of `clients` on `server`, which it owns (stopped with it): the sender and the observer here,
 * the other clients in a child process, so the server fans every edit out to `clients - 1` sockets. `kind`: the
 * wire the clients speak (`floor` clients start from the seeded state themselves). `connectS`: the seconds from
 * seeding until every client had synced.
 */
export async function crowdedPair<K extends string>(
  key: K,
  server: RunningServer,
  kind: ServerKind,
  roomName: string,
  clients: number,
): Promise<LatencyPair<K> & { readonly connectS: number }> {
  const room = makeRoom(roomName, clients);
  const t0 = now();
  await seedRooms(server, [room]);
  const crowd = await spawnClients(server, [room], (r) => r.clients.slice(2));
  await crowd.next('ready');
  const base = kind === 'floor' ? room.state : null;
  const sender = connectClient(kind, server.wsBase, room.room, base);
  const observer = connectClient(kind, server.wsBase, room.room, base);
  await Promise.all([sender.ready, observer.ready]);
  await Promise.all([untilTasks(sender.doc, clients), untilTasks(observer.doc, clients)]);
  const from = createPlan({ doc: sender.doc, actor: 'agent:sender' });
  const to = createPlan({ doc: observer.doc, actor: 'agent:observer' });
  return {
    key,
    from,
    to,
    target: room.clients[0]!.taskId,
    connectS: (now() - t0) / 1000,
    async stop() {
      from.destroy();
      to.destroy();
      sender.close();
      observer.close();
      await crowd.stop();
      await server.stop();
    },
  };
}

/**
 * A pair with a sender on `from` and an observer on `to` (the same server, or two of a cluster) in a room of its
 * own, the sender's first task as target. The servers stay up when it stops.
 */
export async function twoServerPair<K extends string>(
  key: K,
  from: RunningServer,
  to: RunningServer,
  room: string,
): Promise<LatencyPair<K>> {
  const sender = connectClient('cairn', from.wsBase, room, null);
  const observer = connectClient('cairn', to.wsBase, room, null);
  await Promise.all([sender.ready, observer.ready]);
  const a = createPlan({ doc: sender.doc, actor: 'agent:sender' });
  const b = createPlan({ doc: observer.doc, actor: 'agent:observer' });
  const target = a.add({ title: 'Flip me' }).id;
  await untilTasks(observer.doc, 1);
  return {
    key,
    from: a,
    to: b,
    target,
    async stop() {
      a.destroy();
      b.destroy();
      sender.close();
      observer.close();
    },
  };
}

const sleep = (msDelay: number) => new Promise((r) => setTimeout(r, msDelay));

/**
 * Flips each pair's target `warmup + edits` times, the pairs taking turns edit by edit in a rotating order (so
 * every pair meets the same moments of a shared machine), one edit at a time 5 to 15 ms apart, like an agent's.
 * After the warm-up, each edit → seen time in ms goes to `into[pair.key]`; `measuring` runs when it starts.
 */
export async function flipInTurns<K extends string>(
  pairs: readonly LatencyPair<K>[],
  options: {
    warmup: number;
    edits: number;
    random: () => number;
    into: Record<K, number[]>;
    measuring?: () => void;
  },
): Promise<void> {
  const { warmup, edits, random, into } = options;
  for (let i = 0; i < warmup + edits; i++) {
    if (i === warmup) options.measuring?.();
    for (let k = 0; k < pairs.length; k++) {
      const pair = pairs[(k + i) % pairs.length]!;
      const took = await timeStatusFlip(pair.from, pair.to, pair.target, pair.key);
      if (i >= warmup) into[pair.key].push(took);
      await sleep(5 + random() * 10);
    }
  }
}
