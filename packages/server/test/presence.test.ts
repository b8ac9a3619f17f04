// Presence is capped within one message as well as across messages: entries per awareness frame, client ids per
// connection, bytes per state and per plan. A read-only token cannot flood a plan's awareness.
import { CloseCode } from '@cairn/core/protocol';
import * as encoding from 'lib0/encoding';
import { describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import { signToken } from '../src/index.js';
import { rawClient, startServer, stockClient, whenProviderSynced } from './helpers.js';

const secret = 'presence-test-secret-with-32-bytes-at-least';
const read = (plan: string, sub = 'reader') => signToken(secret, { plan, role: 'read', sub });
const write = (plan: string, sub = 'writer') => signToken(secret, { plan, role: 'write', sub });

/** An awareness message (type 1) with `count` entries, client ids from `firstId`, each state `state`. */
function awarenessFrame(count: number, firstId: number, state: unknown, clock = 1): Uint8Array {
  const json = JSON.stringify(state);
  const update = encoding.createEncoder();
  encoding.writeVarUint(update, count);
  for (let i = 0; i < count; i++) {
    encoding.writeVarUint(update, firstId + i);
    encoding.writeVarUint(update, clock);
    encoding.writeVarString(update, json);
  }
  const message = encoding.createEncoder();
  encoding.writeVarUint(message, 1);
  encoding.writeVarUint8Array(message, encoding.toUint8Array(update));
  return encoding.toUint8Array(message);
}

/** A stock client that shows presence (a first state of clock 0 would be ignored by every receiver). */
async function watching(url: string, token: string) {
  const provider = stockClient(url, 'acme:p', new Y.Doc(), { token });
  provider.awareness.setLocalStateField('user', 'watcher');
  await whenProviderSynced(provider);
  return provider;
}

/** Client ids a stock client has seen in the plan's awareness, its own aside. */
function seen(provider: ReturnType<typeof stockClient>): number[] {
  return [...provider.awareness.getStates().keys()].filter((id) => id !== provider.awareness.clientID);
}

describe('presence caps', () => {
  it('refuses one awareness frame of 300,000 entries from a read-only token unread: nothing kept or relayed', async () => {
    const server = await startServer({ secret });
    const watcher = await watching(server.url, await write('acme:p'));
    const room = server.server.hub.loadedRoom('acme:p')!;
    await vi.waitFor(() => expect(room.awareness.getStates().size).toBe(1), { timeout: 10_000 });
    const flood = rawClient(server.url, 'acme:p', { token: await read('acme:p') });
    await flood.next((m) => m[0] === 0);
    const frame = awarenessFrame(300_000, 1_000, { user: 'x' });
    expect(frame.byteLength).toBeGreaterThan(2_000_000); // under the 8 MiB message limit: only the entry cap stops it
    flood.send(frame);
    expect(await flood.closed).toEqual({
      code: CloseCode.BadMessage,
      reason: expect.stringMatching(/300000 entries; at most 64/),
    });
    expect(room.awareness.getStates().size).toBe(1); // the watcher's own state
    // A joiner after the flood receives only the watcher's presence.
    const joiner = await watching(server.url, await read('acme:p', 'late'));
    await vi.waitFor(() => expect(seen(joiner)).toEqual([watcher.awareness.clientID]), { timeout: 10_000 });
    await vi.waitFor(() => expect(seen(watcher)).toEqual([joiner.awareness.clientID]), { timeout: 10_000 });
  });

  it('admits at most maxAwarenessClients new ids from one frame, and relays only those', async () => {
    const server = await startServer({ secret });
    const watcher = await watching(server.url, await write('acme:p'));
    const reader = rawClient(server.url, 'acme:p', { token: await read('acme:p') });
    await reader.next((m) => m[0] === 0);
    reader.send(awarenessFrame(64, 5_000, { user: 'x' }));
    const expected = Array.from({ length: 8 }, (_, i) => 5_000 + i);
    await vi.waitFor(() => expect(seen(watcher).sort((a, b) => a - b)).toEqual(expected), {
      timeout: 10_000,
    });
    // A second frame adds nothing either: the connection already speaks for 8 ids.
    reader.send(awarenessFrame(8, 9_000, { user: 'y' }));
    reader.send(awarenessFrame(1, 5_000, { user: 'still me' }, 2));
    await vi.waitFor(() => expect(watcher.awareness.getStates().get(5_000)).toEqual({ user: 'still me' }), {
      timeout: 10_000,
    });
    expect(seen(watcher)).toHaveLength(8);
    const room = server.server.hub.loadedRoom('acme:p')!;
    expect(room.awareness.getStates().size).toBe(9);
    expect(server.server.hub.metrics.refusedUpdatesTotal.get({ reason: 'presence_limit' })).toBe(64 - 8 + 8);
  });

  it('drops a state over maxAwarenessStateBytes, and states past the plan’s maxPresenceBytes', async () => {
    const server = await startServer({
      secret,
      limits: { maxAwarenessStateBytes: 1_000, maxPresenceBytes: 3_000 },
    });
    const watcher = await watching(server.url, await write('acme:p'));
    const readers = await Promise.all(
      [1, 2, 3, 4].map(async (n) => {
        const c = rawClient(server.url, 'acme:p', { token: await read('acme:p', `r${n}`) });
        await c.next((m) => m[0] === 0);
        return c;
      }),
    );
    readers[0]!.send(awarenessFrame(1, 100, { blob: 'x'.repeat(2_000) })); // one state over 1,000 bytes
    // Three states of about 900 bytes fit in 3,000 bytes with the watcher's; a fourth does not.
    for (const [i, r] of readers.entries()) r.send(awarenessFrame(1, 200 + i, { blob: 'y'.repeat(880) }));
    await vi.waitFor(() => expect(seen(watcher)).toHaveLength(3), { timeout: 10_000 });
    expect(seen(watcher)).not.toContain(100);
    // When a reader leaves, its bytes are freed for the next one.
    const leaving = seen(watcher)[0]!;
    readers[leaving - 200]!.ws.close();
    await vi.waitFor(() => expect(seen(watcher)).not.toContain(leaving), { timeout: 10_000 });
    const last = readers.find((_, i) => !seen(watcher).includes(200 + i) && 200 + i !== leaving)!;
    last.send(awarenessFrame(1, 300, { blob: 'z'.repeat(880) }));
    await vi.waitFor(() => expect(seen(watcher)).toContain(300), { timeout: 10_000 });
  });
});
