// Documents of other objects, for the server-side code of this one. An object holds one document (its plan, a plan's
// traces, a scope's skills); learning in a plan's object also reads and writes the plan's traces and the scope's
// skills, each in an object of its own. The hub opens them as it opens any plan: this store keeps the object's own
// document in its SQLite, and loads another document from the object that holds it (its whole state, fresh at each
// load) and sends each update back to that object, which applies it, stores and relays it as its own. Yjs merges
// these updates with what that object's clients wrote meanwhile. Design: docs/decisions/049.
import { CairnError } from '@cairn/core';
import { toCairnError } from '@cairn/core/protocol';
import * as Y from 'yjs';
import type { SyncHub } from '../hub/hub.js';
import type { DamagedLog, PlanStore, StoreMetrics } from '../store/store.js';
import { PLAN_HEADER } from './env.js';
import type { DurableObjectNamespace } from './workers-types.js';

/**
 * The path an object answers another object's load (GET) and update (POST) of its document on. The Worker never
 * forwards it (it sends only `/sync/`, `/api/plans/`, `/api/scopes/` and `/metrics` to objects), so only code of
 * this worker reaches it.
 */
export const DOCUMENT_PATH = '/.cairn/document';

/** Where updates are applied from (the origin's `via`): another object's server-side code. */
const VIA = 'object';

export class ObjectDocuments implements PlanStore {
  /** Per document of another object: its updates sent in order, and the first failure since the last flush. */
  private readonly sending = new Map<string, { chain: Promise<void>; failure: unknown }>();

  constructor(
    private readonly own: string,
    private readonly local: PlanStore,
    private readonly objects: DurableObjectNamespace,
  ) {}

  async load(docId: string, snapshot: () => Uint8Array, doc?: Y.Doc): Promise<Uint8Array[]> {
    if (docId === this.own) return this.local.load(docId, snapshot, doc);
    const response = await this.call(docId, 'GET');
    const state = new Uint8Array(await response.arrayBuffer());
    this.sending.set(docId, { chain: Promise.resolve(), failure: null });
    return [state];
  }

  append(docId: string, update: Uint8Array): void {
    if (docId === this.own) {
      this.local.append(docId, update);
      return;
    }
    const sending = this.sending.get(docId) ?? { chain: Promise.resolve(), failure: null };
    this.sending.set(docId, sending);
    sending.chain = sending.chain.then(() =>
      this.call(docId, 'POST', update).then(
        () => undefined,
        (error: unknown) => {
          sending.failure ??= error;
        },
      ),
    );
  }

  /** Resolves once the holding object has stored every update sent so far (it answers once they are durable). */
  async flush(docId: string): Promise<void> {
    if (docId === this.own) return this.local.flush(docId);
    const sending = this.sending.get(docId);
    if (!sending) return;
    await sending.chain;
    const { failure } = sending;
    sending.failure = null;
    if (failure) throw toStorageError(failure, docId);
  }

  compact(docId: string): Promise<void> {
    return docId === this.own ? this.local.compact(docId) : Promise.resolve();
  }

  async release(docId: string): Promise<void> {
    if (docId === this.own) return this.local.release(docId);
    try {
      await this.flush(docId);
    } finally {
      this.sending.delete(docId);
    }
  }

  close(): Promise<void> {
    return this.local.close();
  }

  /** The local store holds only the object's own document; any other is its own object's to refuse. */
  validatePlanId(docId: string): void {
    if (docId === this.own) this.local.validatePlanId?.(docId);
  }

  firstRead(docId: string) {
    return docId === this.own ? (this.local.firstRead?.(docId) ?? null) : null;
  }

  verifyLoaded(docId: string, doc: Y.Doc): void {
    if (docId === this.own) this.local.verifyLoaded?.(docId, doc);
  }

  metrics(): StoreMetrics {
    return this.local.metrics();
  }

  damagedLogs(): DamagedLog[] {
    return this.local.damagedLogs?.() ?? [];
  }

  onError(listener: (error: Error, planId: string, what?: 'append') => void): () => void {
    return this.local.onError?.(listener) ?? (() => {});
  }

  private async call(docId: string, method: 'GET' | 'POST', update?: Uint8Array): Promise<Response> {
    const stub = this.objects.get(this.objects.idFromName(docId));
    const response = await stub.fetch(
      new Request(`https://cairn${DOCUMENT_PATH}`, {
        method,
        headers: { [PLAN_HEADER]: docId },
        ...(update ? { body: update as Uint8Array<ArrayBuffer> } : {}),
      }),
    );
    if (!response.ok) {
      const text = await response.text();
      throw new CairnError('storage', `The object of "${docId}" answered ${response.status}: ${text}`, {
        planId: docId,
      });
    }
    return response;
  }
}

/**
 * The object's side of `ObjectDocuments`: GET answers the document's whole state; POST applies an update as one
 * brought in from outside (stored, relayed to the object's clients) and answers once it is durable.
 */
export async function serveDocument(hub: SyncHub, docId: string, request: Request): Promise<Response> {
  const handle = await hub.openPlan(docId);
  try {
    if (request.method === 'POST') {
      const update = new Uint8Array(await request.arrayBuffer());
      hub.loadedRoom(docId)?.applyRemote(update, VIA);
      await handle.flush();
      return new Response(null, { status: 204 });
    }
    return new Response(Y.encodeStateAsUpdate(handle.doc) as Uint8Array<ArrayBuffer>, {
      headers: { 'content-type': 'application/octet-stream' },
    });
  } finally {
    handle.release();
  }
}

function toStorageError(error: unknown, docId: string): CairnError {
  const cause = toCairnError(error);
  return cause.code === 'storage'
    ? cause
    : new CairnError('storage', cause.message, { planId: docId }, { cause: error });
}
