// Rooms for the sync benchmarks: a plan per room with one task per client (made with the Plan API, so the
// documents are real plans), seeded into the server, and child processes that hold the clients.
import { type ChildProcess, fork } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPlan } from '@cairn/core';
import * as Y from 'yjs';
import { SOURCE_NODE_ARGS } from '../../test/source-cli.js';
import type { ClientConfig, FromChild, ToChild } from './client-process.js';
import { connectClient, untilTasks } from './clients.js';
import type { RunningServer } from './servers.js';

export interface Room {
  room: string;
  state: Uint8Array;
  clients: Array<{ name: string; taskId: string }>;
}

export function makeRoom(room: string, clients: number): Room {
  const plan = createPlan({ actor: 'agent:setup' });
  const names = Array.from({ length: clients }, (_, i) => `${room}-c${i}`);
  const tasks = plan.addMany(names.map((name) => ({ title: `Work of ${name}`, context: { seq: 0 } })));
  const state = Y.encodeStateAsUpdate(plan.doc);
  plan.destroy();
  return { room, state, clients: names.map((name, i) => ({ name, taskId: tasks[i]!.id })) };
}

/**
 * Puts each room's plan on the server (a y-websocket client writes it and waits until it is synced back). Returns
 * what releases the seeders: Hocuspocus without a database forgets a document when its last client leaves, so
 * there the seeders stay connected until the run ends.
 */
export async function seedRooms(server: RunningServer, rooms: Room[]): Promise<() => void> {
  const kept: Array<{ close(): void }> = [];
  if (server.kind === 'floor') return () => undefined; // the floor has no state: clients start from the room's state
  for (const r of rooms) {
    const seeder = connectClient(server.kind, server.wsBase, r.room, null);
    await seeder.ready;
    Y.applyUpdate(seeder.doc, r.state);
    // A second client that sees the tasks proves the server holds them.
    const probe = connectClient(server.kind, server.wsBase, r.room, null);
    await probe.ready;
    await untilTasks(probe.doc, r.clients.length);
    probe.close();
    if (server.kind === 'hocuspocus') kept.push(seeder);
    else seeder.close();
  }
  return () => {
    for (const seeder of kept) seeder.close();
  };
}

const here = dirname(fileURLToPath(import.meta.url));

export interface ClientProcess {
  child: ChildProcess;
  send(message: ToChild): void;
  next<T extends FromChild['type']>(type: T, timeoutMs?: number): Promise<Extract<FromChild, { type: T }>>;
  stop(): Promise<void>;
}

/** A child process holding, for each room, the given clients (all of the room's by default). */
export async function spawnClients(
  server: RunningServer,
  rooms: Room[],
  pick: (room: Room) => Room['clients'] = (r) => r.clients,
): Promise<ClientProcess> {
  const child = fork(join(here, 'client-process.ts'), [], {
    execArgv: SOURCE_NODE_ARGS,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiting: Array<{ type: string; resolve: (m: FromChild) => void }> = [];
  child.on('message', (m: FromChild) => {
    const at = waiting.findIndex((w) => w.type === m.type);
    if (at >= 0) waiting.splice(at, 1)[0]!.resolve(m);
  });
  const proc: ClientProcess = {
    child,
    send: (message) => child.send(message),
    next(type, timeoutMs = 120_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`client process: no "${type}" in ${timeoutMs} ms`)),
          timeoutMs,
        );
        waiting.push({
          type,
          resolve: (m) => {
            clearTimeout(timer);
            resolve(m as never);
          },
        });
      });
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ type: 'exit' } satisfies ToChild);
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
  const config: ClientConfig = {
    kind: server.kind,
    wsBase: server.wsBase,
    rooms: rooms.map((r) => ({ room: r.room, clients: pick(r), tasks: r.clients.length })),
    ...(server.kind === 'floor'
      ? { bases: Object.fromEntries(rooms.map((r) => [r.room, Buffer.from(r.state).toString('base64')])) }
      : {}),
  };
  proc.send({ type: 'config', config });
  return proc;
}
