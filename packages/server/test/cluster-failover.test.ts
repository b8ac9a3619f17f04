// Clients that fail over: a client given the URLs of three `cairn serve --redis --postgres` processes (or a
// resolver) keeps writing when the instance it is on dies with kill -9. It continues on a survivor within 5 s with
// the default reconnect jitter, nothing it saw acknowledged is lost, and what the dead instance never acknowledged
// is resent and acknowledged by the survivor.
import { connectPlan, type PlanConnection } from '@cairn/core/websocket';
import { describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import * as Y from 'yjs';
import { PostgresStore } from '../src/cluster/index.js';
import { serveChild, useClusterServices } from './cluster-helpers.js';
import { cairnClient } from './helpers.js';
import { freePort } from './services.js';

const services = useClusterServices();

async function storedKeys(planId: string): Promise<Set<string>> {
  const store = await PostgresStore.connect(services.postgres.url, { mode: 'cluster' });
  try {
    const doc = new Y.Doc();
    for (const u of await store.readStored(planId)) Y.applyUpdate(doc, u);
    return new Set(doc.getMap('tasks').keys());
  } finally {
    await store.close();
  }
}

/** Writes key after key, each acknowledged before the next; `acked` holds what was, when and by which server. */
function writer(conn: PlanConnection, doc: Y.Doc, name: string) {
  const state = {
    acked: [] as Array<{ key: string; at: number; url: string | null }>,
    failures: 0,
    stop: false,
  };
  const done = (async () => {
    await conn.whenSynced(30_000);
    for (let n = 0; !state.stop; n++) {
      const key = `${name}-${n}`;
      doc.getMap('tasks').set(key, n);
      try {
        await conn.whenAcknowledged(8_000);
        state.acked.push({ key, at: Date.now(), url: conn.serverUrl });
      } catch {
        state.failures++;
      }
    }
  })();
  return Object.assign(state, { done });
}

describe('client failover across cluster instances', () => {
  it('kill -9 of the instance a client is on: it continues on another within 5 s, nothing acknowledged or pending is lost', async () => {
    const children = await Promise.all([0, 1, 2].map(async () => serveChild(services, await freePort())));
    const urls = children.map((c) => c.url);
    const plan = 'acme:failover';
    // One client with the list, one with a resolver that moves off the URL that failed; real jitter (1 s).
    const listDoc = new Y.Doc();
    const listConn = cairnClient(urls, plan, listDoc, { reconnectJitterMs: 1000 });
    const resolved: Array<string | null> = [];
    const resolverDoc = new Y.Doc();
    const resolverConn = cairnClient(
      ({ failed }) => {
        resolved.push(failed);
        return failed === urls[0] ? urls[2]! : urls[0]!;
      },
      plan,
      resolverDoc,
      { reconnectJitterMs: 1000 },
    );
    const writers = [writer(listConn, listDoc, 'list'), writer(resolverConn, resolverDoc, 'resolver')];
    await vi.waitFor(() => expect(writers.every((w) => w.acked.length >= 20)).toBe(true), {
      timeout: 60_000,
    });
    expect(listConn.serverUrl).toBe(urls[0]);
    expect(resolverConn.serverUrl).toBe(urls[0]);

    children[0]!.child.kill('SIGKILL');
    const killedAt = Date.now();
    await children[0]!.exited;
    // Edits made while no instance has the client: acknowledged only once resent to a survivor.
    listDoc.getMap('tasks').set('offline-list', 1);
    resolverDoc.getMap('tasks').set('offline-resolver', 1);
    const pending = [listConn.whenAcknowledged(10_000), resolverConn.whenAcknowledged(10_000)];

    await vi.waitFor(() => expect(writers.every((w) => w.acked.some((a) => a.url !== urls[0]))).toBe(true), {
      timeout: 15_000,
    });
    const firstAfterKill = writers.map((w) => w.acked.find((a) => a.url !== urls[0])!.at - killedAt);
    expect(Math.max(...firstAfterKill)).toBeLessThan(5_000);
    await Promise.all(pending);
    expect(listConn.serverUrl).toBe(urls[1]);
    expect(resolverConn.serverUrl).toBe(urls[2]);
    expect(resolved[0]).toBeNull();
    expect(resolved).toContain(urls[0]);

    for (const w of writers) w.stop = true;
    await Promise.all(writers.map((w) => w.done));
    const acked = [...writers.flatMap((w) => w.acked.map((a) => a.key)), 'offline-list', 'offline-resolver'];
    const stored = await storedKeys(plan);
    expect(acked.filter((key) => !stored.has(key))).toEqual([]);
    // Everything either client ever wrote, acknowledged or not, reached the cluster.
    const written = [...listDoc.getMap('tasks').keys(), ...resolverDoc.getMap('tasks').keys()];
    expect(written.filter((key) => !stored.has(key))).toEqual([]);
    const readerDoc = new Y.Doc();
    const reader = cairnClient(urls[2]!, plan, readerDoc);
    await reader.whenSynced(30_000);
    await vi.waitFor(() => expect(written.filter((key) => !readerDoc.getMap('tasks').has(key))).toEqual([]));
  }, 120_000);

  it('refuses a url that is neither a URL, a non-empty list of them, nor a function, naming what is valid', () => {
    for (const url of [[], [''], '', [42]] as unknown as string[]) {
      expect(() => connectPlan(new Y.Doc(), { url, planId: 'p', WebSocketPolyfill: WebSocket })).toThrow(
        /url must be a server URL .*a non-empty list of them, or a function returning one/,
      );
    }
  });
});
