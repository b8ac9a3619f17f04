// A child process holding many sync clients, driven over IPC by the latency and fan-out benchmarks, so the
// clients' CPU is not the measuring process's. Messages: config → ready; start → (runs) → done; check → digest.
// Latencies come with the digest, not with done: deliveries of the other processes' last edits arrive after this
// one's load ended, and the measuring process asks for digests until every replica holds every last edit.
// A start may ask for a warm-up first: the same load, its latencies reported apart (`warmup`), so a figure can be
// the steady state of servers that have just started (their code not yet optimised, their connections not open).
import * as Y from 'yjs';
import { connectClient, observeEdits, type SyncClient, stampedEdit, untilTasks, wallMs } from './clients.js';
import type { ServerKind } from './servers.js';

export interface ClientConfig {
  kind: ServerKind;
  wsBase: string;
  /** Rooms and, in each, the clients this process holds; each writes its own task (already in the room). */
  rooms: Array<{ room: string; clients: Array<{ name: string; taskId: string }>; tasks: number }>;
  /** For the floor: each room's starting state (base64), which every client applies before connecting. */
  bases?: Record<string, string>;
}

export type ToChild =
  | { type: 'config'; config: ClientConfig }
  | {
      type: 'start';
      durationMs: number;
      ratePerClient: number;
      warmupMs?: number;
      /** Wall-clock time the measured part starts at, the same for every process (default: warmupMs from now). */
      measuredFrom?: number;
    }
  | { type: 'check' }
  | { type: 'exit' };

export type FromChild =
  | { type: 'ready'; connectMs: number }
  | {
      type: 'done';
      sent: Record<string, number>;
      /** Edits sent after the warm-up. */
      measuredEdits: number;
    }
  | {
      type: 'digest';
      views: Array<{ room: string; client: string; seqs: Record<string, number> }>;
      /** Float64 milliseconds (base64) of the edits sent after the warm-up, and of those sent during it. */
      latencies: string;
      warmup: string;
      /** Updates received of edits sent after the warm-up. */
      received: number;
    };

interface Held {
  room: string;
  name: string;
  taskId: string;
  client: SyncClient;
}

// Every y-websocket provider adds a process 'exit' listener; a hundred of them are expected here.
process.setMaxListeners(0);

let held: Held[] = [];
const latencies: number[] = [];
const warmup: number[] = [];
/** Edits sent before this wall-clock time are the warm-up's. */
let measuredFrom = 0;
let received = 0;

const send = (message: FromChild) => process.send!(message);

async function configure(config: ClientConfig): Promise<void> {
  const t0 = performance.now();
  const synced: Promise<void>[] = [];
  for (const { room, clients, tasks } of config.rooms) {
    const base = config.bases?.[room] ? Buffer.from(config.bases[room]!, 'base64') : null;
    for (const { name, taskId } of clients) {
      const client = connectClient(config.kind, config.wsBase, room, base);
      observeEdits(client.doc, (_id, sentAt) => {
        if (sentAt < measuredFrom) return void warmup.push(wallMs() - sentAt);
        received++;
        latencies.push(wallMs() - sentAt);
      });
      held.push({ room, name, taskId, client });
      synced.push(client.ready.then(() => untilTasks(client.doc, tasks)));
      // Connect in small steps, as clients of a real deployment arrive, not all in one tick.
      if (held.length % 20 === 0) await Promise.all(held.slice(-20).map((h) => h.client.ready));
    }
  }
  // Each writer's task must be in every replica before the run (the parent seeded the room's state).
  await Promise.all(synced);
  send({ type: 'ready', connectMs: performance.now() - t0 });
}

async function start(durationMs: number, rate: number, warmupMs: number, from?: number): Promise<void> {
  latencies.length = 0;
  warmup.length = 0;
  received = 0;
  measuredFrom = from ?? wallMs() + warmupMs;
  let measuredEdits = 0;
  const sent: Record<string, number> = {};
  const writers = rate > 0 ? held : [];
  const end = performance.now() + warmupMs + durationMs;
  const interval = 1000 / rate;
  // Each writer edits every `interval` ms, starting at a random phase so the load is spread evenly.
  await Promise.all(
    writers.map(
      (h) =>
        new Promise<void>((resolve) => {
          let seq = 0;
          const phase = performance.now() + Math.random() * interval;
          // A fixed schedule: a client that falls behind (a busy machine) catches up rather than slowing down.
          const tick = () => {
            if (performance.now() >= end) return resolve();
            if (stampedEdit(h.client.doc, h.taskId, `agent:${h.name}`, ++seq) >= measuredFrom)
              measuredEdits++;
            sent[h.taskId] = seq;
            setTimeout(tick, Math.max(0, phase + seq * interval - performance.now()));
          };
          setTimeout(tick, phase - performance.now());
        }),
    ),
  );
  if (writers.length === 0) await new Promise((r) => setTimeout(r, warmupMs + durationMs));
  send({ type: 'done', sent, measuredEdits });
}

const base64 = (values: number[]) => Buffer.from(new Float64Array(values).buffer).toString('base64');

function digest(): void {
  send({
    type: 'digest',
    views: held.map((h) => {
      const seqs: Record<string, number> = {};
      for (const [id, task] of h.client.doc.getMap<Y.Map<unknown>>('tasks')) {
        const ctx = task.get('context');
        seqs[id] = ctx instanceof Y.Map ? ((ctx.get('seq') as number | undefined) ?? 0) : 0;
      }
      return { room: h.room, client: h.name, seqs };
    }),
    latencies: base64(latencies),
    warmup: base64(warmup),
    received,
  });
}

process.on('message', (message: ToChild) => {
  if (message.type === 'config') void configure(message.config);
  else if (message.type === 'start')
    void start(message.durationMs, message.ratePerClient, message.warmupMs ?? 0, message.measuredFrom);
  else if (message.type === 'check') digest();
  else if (message.type === 'exit') {
    for (const h of held) h.client.close();
    held = [];
    setTimeout(() => process.exit(0), 50);
  }
});
process.on('disconnect', () => process.exit(0));
