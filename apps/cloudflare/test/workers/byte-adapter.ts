// A worker for the byte contract's suite: each request makes one call of a SqliteByteAdapter inside a Durable
// Object (one object per store, its own SQLite), so the suite, run by vitest in Node, checks the adapter in the
// runtime it is made for. Bytes travel as arrays of numbers; a rejection as its CairnError code and message.
import { type ByteLock, toCairnError } from '@cairn/core/protocol';
import { SqliteByteAdapter } from '../../../../packages/server/src/cloudflare/sqlite-adapter.js';
import type {
  DurableObjectNamespace,
  DurableObjectState,
} from '../../../../packages/server/src/cloudflare/workers-types.js';

/**
 * One adapter call: `adapter` numbers an adapter over the object's storage (another one is a "reopen"), made with
 * `chunkBytes` (the most bytes one row holds) at its first call.
 */
export interface ByteCall {
  adapter: number;
  chunkBytes?: number;
  method: 'lock' | 'release' | 'read' | 'append' | 'replace' | 'sync' | 'readSnapshot' | 'writeSnapshot';
  name: string;
  lock?: number;
  keys?: number[];
  records?: number[][];
  bytes?: number[];
}

export class ByteAdapterObject {
  private readonly adapters = new Map<number, SqliteByteAdapter>();
  private readonly locks = new Map<number, ByteLock>();

  constructor(private readonly ctx: DurableObjectState) {}

  async fetch(request: Request): Promise<Response> {
    const call = (await request.json()) as ByteCall;
    try {
      return Response.json({ value: (await this.run(call)) ?? null });
    } catch (error) {
      const { code, message } = toCairnError(error);
      return Response.json({ error: { code, message } });
    }
  }

  private async run(call: ByteCall): Promise<unknown> {
    let adapter = this.adapters.get(call.adapter);
    if (!adapter) {
      adapter = new SqliteByteAdapter(this.ctx.storage, { chunkBytes: call.chunkBytes });
      this.adapters.set(call.adapter, adapter);
    }
    const { name } = call;
    switch (call.method) {
      case 'lock': {
        const id = this.locks.size + 1;
        this.locks.set(id, await adapter.lock(name));
        return id;
      }
      case 'release':
        return this.locks.get(call.lock ?? 0)?.release();
      case 'read':
        return (await adapter.read(name)).map((record) => ({ key: record.key, bytes: [...record.bytes] }));
      case 'append':
        return adapter.append(
          name,
          (call.records ?? []).map((r) => new Uint8Array(r)),
        );
      case 'replace':
        return adapter.replace(name, call.keys ?? [], new Uint8Array(call.bytes ?? []));
      case 'sync':
        return adapter.sync(name);
      case 'readSnapshot': {
        const snapshot = await adapter.readSnapshot(name);
        return snapshot ? [...snapshot] : null;
      }
      case 'writeSnapshot':
        return adapter.writeSnapshot(name, new Uint8Array(call.bytes ?? []));
    }
  }
}

export default {
  async fetch(request: Request, env: { BYTE_STORES: DurableObjectNamespace }): Promise<Response> {
    if (request.method !== 'POST') return new Response('ok'); // the harness's readiness check
    const store = new URL(request.url).pathname.slice(1);
    return env.BYTE_STORES.get(env.BYTE_STORES.idFromName(store)).fetch(request);
  },
};
