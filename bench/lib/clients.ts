// Sync clients for the latency and fan-out benchmarks. Against a y-websocket server: a stock y-websocket 3.1
// WebsocketProvider (the same client for Cairn's server and the reference one, so only the server differs).
// Against the bare-ws floor, which speaks no sync protocol: the same Update messages y-websocket would send,
// sent and applied by hand, on docs that start from the same state.
import type { Plan } from '@cairn/core';
import { HocuspocusProvider, HocuspocusProviderWebsocket } from '@hocuspocus/provider';
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import { WebSocket } from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { now } from './measure.js';
import type { ServerKind } from './servers.js';

export interface SyncClient {
  doc: Y.Doc;
  /** Resolves once the client is connected and holds the room's state. */
  ready: Promise<void>;
  close(): void;
}

const REMOTE = Symbol('remote');

/** [messageSync, messageYjsUpdate, update]: y-protocols' Update message. */
function updateMessage(update: Uint8Array): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, 0);
  encoding.writeVarUint(encoder, 2);
  encoding.writeVarUint8Array(encoder, update);
  return encoding.toUint8Array(encoder);
}

export function connectClient(
  kind: ServerKind,
  wsBase: string,
  room: string,
  base: Uint8Array | null,
): SyncClient {
  const doc = new Y.Doc();
  if (kind === 'hocuspocus') {
    // Hocuspocus names the document in every message: its own provider, on the same Y.Doc.
    const socket = new HocuspocusProviderWebsocket({ url: wsBase, WebSocketPolyfill: WebSocket });
    const provider = new HocuspocusProvider({ websocketProvider: socket, name: room, document: doc });
    provider.attach();
    const ready = new Promise<void>((resolve) => {
      if (provider.synced) resolve();
      else provider.on('synced', () => resolve());
    });
    return {
      doc,
      ready,
      close: () => {
        provider.destroy();
        socket.destroy();
        doc.destroy();
      },
    };
  }
  if (kind !== 'floor') {
    const provider = new WebsocketProvider(wsBase, room, doc, {
      WebSocketPolyfill: WebSocket as never,
      disableBc: true,
    });
    const ready = new Promise<void>((resolve) => {
      if (provider.synced) resolve();
      else provider.once('sync', (synced: boolean) => synced && resolve());
    });
    return {
      doc,
      ready,
      close: () => {
        provider.destroy();
        doc.destroy();
      },
    };
  }
  if (base) Y.applyUpdate(doc, base, REMOTE);
  const ws = new WebSocket(`${wsBase}/${room}`);
  ws.binaryType = 'nodebuffer';
  doc.on('update', (update: Uint8Array, origin: unknown) => {
    if (origin !== REMOTE && ws.readyState === ws.OPEN) ws.send(updateMessage(update));
  });
  ws.on('message', (data: Buffer) => {
    const decoder = decoding.createDecoder(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    if (decoding.readVarUint(decoder) !== 0 || decoding.readVarUint(decoder) !== 2) return;
    Y.applyUpdate(doc, decoding.readVarUint8Array(decoder), REMOTE);
  });
  const ready = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return {
    doc,
    ready,
    close: () => {
      ws.close();
      doc.destroy();
    },
  };
}

/** Wall-clock milliseconds with sub-millisecond precision, comparable across processes on one machine. */
export function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * A plan-shaped edit made the way Plan.update makes one (status, updatedBy, updatedAt and a context key, one
 * transaction with the actor as origin), on the task map of `taskId`. `updatedAt` carries the send time.
 */
/** Returns the time it stamped (what a replica's observer reads as the edit's sending time). */
export function stampedEdit(doc: Y.Doc, taskId: string, actor: string, seq: number): number {
  const task = doc.getMap<Y.Map<unknown>>('tasks').get(taskId)!;
  const at = wallMs();
  doc.transact(() => {
    task.set('status', seq % 2 ? 'in_progress' : 'pending');
    task.set('updatedBy', actor);
    task.set('updatedAt', at);
    (task.get('context') as Y.Map<unknown>).set('seq', seq);
  }, actor);
  return at;
}

/** Calls `seen(taskId, updatedAt, seq)` for every remote change to a task. */
export function observeEdits(doc: Y.Doc, seen: (taskId: string, sentAt: number, seq: number) => void): void {
  const tasks = doc.getMap<Y.Map<unknown>>('tasks');
  tasks.observeDeep((events, txn) => {
    if (txn.local) return;
    const ids = new Set<string>();
    for (const e of events) if (e.path.length >= 1) ids.add(String(e.path[0]));
    for (const id of ids) {
      const task = tasks.get(id);
      if (!task) continue;
      const ctx = task.get('context') as Y.Map<unknown> | undefined;
      seen(id, task.get('updatedAt') as number, (ctx?.get('seq') as number) ?? -1);
    }
  });
}

/** Resolves once `doc` holds at least `n` tasks (the room's state has arrived). */
export function untilTasks(doc: Y.Doc, n: number): Promise<void> {
  const tasks = doc.getMap('tasks');
  return new Promise((resolve) => {
    const check = () => {
      if (tasks.size < n) return;
      tasks.unobserve(check);
      resolve();
    };
    tasks.observe(check);
    check();
  });
}

/**
 * Flips a task's status through `from` (pending ↔ in_progress) and resolves with the ms until `to`'s onChange
 * reports it; `label` names the system in the error when it is not seen within 10 s.
 */
export async function timeStatusFlip(from: Plan, to: Plan, target: string, label: string): Promise<number> {
  const seen = new Promise<number>((resolve) => {
    const off = to.onChange((e) => {
      if (e.changes.some((c) => c.id === target && c.fields.includes('status'))) {
        off();
        resolve(now());
      }
    });
  });
  const t = now();
  from.update(target, { status: from.get(target)!.status === 'pending' ? 'in_progress' : 'pending' });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<number>((resolve) => {
    timer = setTimeout(() => resolve(Number.NaN), 10_000);
  });
  const at = await Promise.race([seen, timeout]);
  clearTimeout(timer);
  if (Number.isNaN(at)) throw new Error(`${label}: an edit was not seen within 10 s`);
  return at - t;
}
