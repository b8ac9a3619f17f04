// Memory per open plan on a sync server: `plans` copies of one plan opened on a fresh server process, each
// written by a y-websocket client that stays connected (so both servers keep it loaded), and the server's RSS
// growth divided by the number of plans. The same for Cairn's server and the reference.
import * as Y from 'yjs';
import { connectClient, type SyncClient, untilTasks } from './clients.js';
import { type RunningServer, type ServerKind, startServer } from './servers.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The lowest of a few RSS readings: what stays once the garbage of the last step is collected. */
async function settledRss(server: RunningServer, readings: number): Promise<number> {
  let low = Number.POSITIVE_INFINITY;
  for (let i = 0; i < readings; i++) {
    await sleep(300);
    low = Math.min(low, server.rss());
  }
  return low;
}

/** Bytes of server RSS per open plan holding `state` (a plan of `tasks` tasks). */
export async function memoryPerPlan(
  kind: ServerKind,
  state: Uint8Array,
  tasks: number,
  plans: number,
  readings = 10,
): Promise<number> {
  const server = await startServer(kind);
  const writers: SyncClient[] = [];
  try {
    const base = await settledRss(server, readings);
    for (let i = 0; i < plans; i++) {
      const writer = connectClient(kind, server.wsBase, `memory${i}`, null);
      await writer.ready;
      Y.applyUpdate(writer.doc, state);
      writers.push(writer);
      // A second client that sees every task proves the server holds the plan.
      const probe = connectClient(kind, server.wsBase, `memory${i}`, null);
      await probe.ready;
      await untilTasks(probe.doc, tasks);
      probe.close();
    }
    return ((await settledRss(server, readings)) - base) / plans;
  } finally {
    for (const writer of writers) writer.close();
    await server.stop();
  }
}
