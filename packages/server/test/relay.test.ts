// How a client's edit reaches the other connections of its plan: relayed as it came once it is integrated, before
// the plan's observers and extensions run, exactly once; what a held-back update lets in still reaches everyone;
// and an update the server cannot integrate reaches nobody. Sockets are test doubles handed to the real hub of a
// real server, so every frame the hub sends is seen synchronously, in order.
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { checkWholeUpdate } from '../src/hub/whole-update.js';
import { CloseCode, type Extension, type HubConnection, type HubSocket } from '../src/index.js';
import { startServer } from './helpers.js';

const SYNC = 0;
const STEP2 = 1;
const UPDATE = 2;

function syncMessage(step: number, update: Uint8Array): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, SYNC);
  encoding.writeVarUint(encoder, step);
  encoding.writeVarUint8Array(encoder, update);
  return encoding.toUint8Array(encoder);
}

/** The Yjs update of a sync Update or SyncStep2 frame, or null for any other frame. */
function updateOf(frame: Uint8Array): Uint8Array | null {
  const decoder = decoding.createDecoder(frame);
  if (decoding.readVarUint(decoder) !== SYNC) return null;
  const step = decoding.readVarUint(decoder);
  return step === UPDATE || step === STEP2 ? decoding.readVarUint8Array(decoder) : null;
}

class FakeSocket implements HubSocket {
  readonly sent: Uint8Array[] = [];
  closedWith: number | null = null;
  send(data: Uint8Array): void {
    this.sent.push(data);
  }
  close(code: number): void {
    this.closedWith = code;
  }
  /** Every update the hub sent, applied in order to a fresh doc. */
  replica(): Y.Doc {
    const doc = new Y.Doc();
    for (const frame of this.sent) {
      const update = updateOf(frame);
      if (update) Y.applyUpdate(doc, update);
    }
    return doc;
  }
  updates(): Uint8Array[] {
    return this.sent.flatMap((frame) => updateOf(frame) ?? []);
  }
}

/** A server whose hub reports, at each observer call on the plan's `m` map, how many frames `peer` had by then. */
async function setUp(planId: string) {
  const atObserver: number[] = [];
  /** The update of each change the extensions were told of. */
  const changes: Uint8Array[] = [];
  let peerSocket: FakeSocket | null = null;
  const probe = (): Extension => ({
    name: 'probe',
    loaded(room) {
      room.doc.getMap('m').observe(() => atObserver.push(peerSocket?.updates().length ?? -1));
    },
    change({ update }) {
      changes.push(update);
    },
  });
  const server = await startServer({ extensions: [probe] });
  const hub = server.server.hub;
  const grant = { planId, role: 'write' as const, sub: 'anonymous', pattern: planId, expiresAt: null };
  const connect = async (): Promise<{ socket: FakeSocket; conn: HubConnection }> => {
    const socket = new FakeSocket();
    const conn = hub.connect(socket, grant);
    // Started once the plan has loaded: the greeting (the server's SyncStep1) is its first frame.
    await expect.poll(() => socket.sent.length).toBeGreaterThan(0);
    return { socket, conn };
  };
  const peer = await connect();
  peerSocket = peer.socket;
  return { peer, connect, atObserver, changes, hub: server.server.hub };
}

function edits(client: number, values: Record<string, number>): Uint8Array[] {
  const doc = new Y.Doc();
  doc.clientID = client;
  const out: Uint8Array[] = [];
  doc.on('update', (u: Uint8Array) => out.push(u));
  for (const [key, value] of Object.entries(values)) doc.getMap('m').set(key, value);
  return out;
}

describe('relay of a client edit', () => {
  it('reaches the other connections before the plan observers run, once, and never its sender', async () => {
    const { peer, connect, atObserver } = await setUp('relay-first');
    const writer = await connect();
    const [update] = edits(101, { a: 1 });
    writer.conn.receive(syncMessage(UPDATE, update!));
    // The observer ran after the peer already had the update; before, the relay waited for every observer.
    expect(atObserver).toEqual([1]);
    expect(peer.socket.updates()).toEqual([update]);
    expect(writer.socket.updates()).toEqual([]);
    expect(peer.socket.replica().getMap('m').toJSON()).toEqual({ a: 1 });
  });

  it('relays the frame as it came, or the update alone when bytes follow it in the frame', async () => {
    const { peer, connect } = await setUp('relay-frame');
    const writer = await connect();
    const [first, second] = edits(606, { a: 1, b: 2 });
    const frame = syncMessage(UPDATE, first!);
    writer.conn.receive(frame);
    expect(peer.socket.sent.at(-1)).toEqual(frame);
    writer.conn.receive(Uint8Array.of(...syncMessage(UPDATE, second!), 7, 7, 7));
    expect(peer.socket.sent.at(-1)).toEqual(syncMessage(UPDATE, second!));
    expect(peer.socket.replica().getMap('m').toJSON()).toEqual({ a: 1, b: 2 });
  });

  it('relays what a held-back update lets in, when an edit completes it', async () => {
    const { peer, connect } = await setUp('relay-pending');
    const writer = await connect();
    const [first, second] = edits(202, { a: 1, b: 2 });
    // The second edit arrives first (in a SyncStep2): it waits for the first, and nothing is relayed yet.
    writer.conn.receive(syncMessage(STEP2, second!));
    expect(peer.socket.updates()).toEqual([]);
    writer.conn.receive(syncMessage(UPDATE, first!));
    // The peer got the edit as it came, and then what its transaction let in, the held-back edit included.
    expect(peer.socket.replica().getMap('m').toJSON()).toEqual({ a: 1, b: 2 });
  });

  it('sends nothing of an update that reads whole but does not apply, and closes its sender', async () => {
    const { peer, connect, hub } = await setUp('relay-refused');
    const writer = await connect();
    const [valid] = edits(303, { k: 1 });
    writer.conn.receive(syncMessage(UPDATE, valid!));
    const before = peer.socket.sent.length;
    const bad = invalidUtf8Update();
    // Whole to the check made before applying (it skips over strings), refused by Yjs when it reads the string.
    expect(() => checkWholeUpdate(bad)).not.toThrow();
    expect(() => Y.applyUpdate(new Y.Doc(), bad)).toThrow(/utf-8/);
    writer.conn.receive(syncMessage(UPDATE, bad));
    expect(writer.socket.closedWith).toBe(CloseCode.BadMessage);
    expect(peer.socket.sent.length).toBe(before);
    const handle = await hub.openPlan('relay-refused');
    expect(handle.doc.getMap('m').toJSON()).toEqual({ k: 1 });
    handle.release();
  });
});

describe('what the extensions are told of a change', () => {
  it('a client edit as it came, once; a repeat of it not at all; every other change as Yjs encodes it', async () => {
    const { connect, changes, hub } = await setUp('changes');
    const writer = await connect();
    const [first, second, third] = edits(404, { a: 1, b: 2, c: 3 });
    writer.conn.receive(syncMessage(UPDATE, first!));
    expect(changes).toEqual([first]);
    changes.length = 0;
    writer.conn.receive(syncMessage(UPDATE, first!)); // the doc has it: nothing changed
    expect(changes).toEqual([]);

    // Held back, then let in by the edit it waited for: the transaction carries both, so Yjs encodes it.
    writer.conn.receive(syncMessage(STEP2, third!));
    expect(changes).toEqual([]);
    writer.conn.receive(syncMessage(UPDATE, second!));
    expect(changes).toHaveLength(1);
    const both = new Y.Doc();
    Y.applyUpdate(both, first!);
    Y.applyUpdate(both, changes[0]!);
    expect(both.getMap('m').toJSON()).toEqual({ a: 1, b: 2, c: 3 });

    // A change made on the server after an edit taken as it came is still heard.
    changes.length = 0;
    writer.conn.receive(syncMessage(UPDATE, edits(505, { d: 4 })[0]!));
    const handle = await hub.openPlan('changes');
    handle.doc.getMap('m').set('e', 5);
    handle.release();
    expect(changes).toHaveLength(2);
    const replica = new Y.Doc();
    for (const update of [first!, second!, third!, ...changes]) Y.applyUpdate(replica, update);
    expect(replica.getMap('m').toJSON()).toEqual({ a: 1, b: 2, c: 3, d: 4, e: 5 });
  });
});

/** An update (Yjs format v1) setting `m.z` to a string whose bytes are not UTF-8. */
function invalidUtf8Update(): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, 1); // one client
  encoding.writeVarUint(encoder, 1); // one struct
  encoding.writeVarUint(encoder, 909); // client
  encoding.writeVarUint(encoder, 0); // clock
  encoding.writeUint8(encoder, 4 | 0b0010_0000); // ContentString, with a key in its parent
  encoding.writeVarUint(encoder, 1); // the parent is a root type, by name
  encoding.writeVarString(encoder, 'm');
  encoding.writeVarString(encoder, 'z'); // the key
  encoding.writeVarUint8Array(encoder, Uint8Array.of(0xff, 0xfe)); // the string: no UTF-8
  encoding.writeVarUint(encoder, 0); // no deletions
  return encoding.toUint8Array(encoder);
}

describe('what a relayed update can do to a peer', () => {
  it('applies on any replica whenever it applied on the server (seeded corrupted updates)', () => {
    let state = 7;
    const random = () => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return state / 2 ** 32;
    };
    // The server's plan, and a writer's edits of it: values, texts, nested maps, deletions.
    const server = new Y.Doc();
    const tasks = server.getMap('tasks');
    for (let i = 0; i < 5; i++) {
      const task = new Y.Map<unknown>();
      tasks.set(`t${i}`, task);
      task.set('status', 'pending');
      task.set('title', new Y.Text(`task ${i}`));
      task.set('n', i);
    }
    const base = Y.encodeStateAsUpdate(server);
    const writer = replicaOf(base);
    const edits: Uint8Array[] = [];
    writer.on('update', (u: Uint8Array) => edits.push(u));
    for (let i = 0; i < 5; i++) {
      const task = writer.getMap('tasks').get(`t${i}`) as Y.Map<unknown>;
      task.set('status', 'done');
      (task.get('title') as Y.Text).insert(2, 'é✓');
      task.delete('n');
      const added = new Y.Map<unknown>();
      writer.getMap('tasks').set(`n${i}`, added);
      added.set('context', { list: [1, { b: 'c' }] });
    }
    let applied = 0;
    for (let i = 0; i < 20_000; i++) {
      const update = Uint8Array.from(edits[Math.floor(random() * edits.length)]!);
      for (let flips = 1 + Math.floor(random() * 3); flips > 0; flips--) {
        update[Math.floor(random() * update.length)] = Math.floor(random() * 256);
      }
      try {
        checkWholeUpdate(update);
        Y.applyUpdate(replicaOf(base), update);
      } catch {
        continue; // the server refuses it: nothing is relayed
      }
      applied++;
      expect(() => Y.applyUpdate(new Y.Doc(), update), `mutation ${i}`).not.toThrow();
      expect(() => Y.applyUpdate(replicaOf(base), update), `mutation ${i}`).not.toThrow();
    }
    expect(applied).toBeGreaterThan(1_000);
  });
});

function replicaOf(update: Uint8Array): Y.Doc {
  const doc = new Y.Doc();
  Y.applyUpdate(doc, update);
  return doc;
}
