// Every transaction origin Cairn makes reads back as one tagged value: a Plan's write, its undo, a store's load,
// an update a relay brought in.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { createPlan } from '../src/index.js';
import { readOrigin, remoteOrigin, type TransactionOrigin } from '../src/protocol-entry.js';
import { applyStored } from '../src/storage.js';

describe('readOrigin', () => {
  it('tells a local write, an undo, a store load and anything else apart', () => {
    const doc = new Y.Doc();
    const seen: TransactionOrigin[] = [];
    doc.on('afterTransaction', (txn: Y.Transaction) => seen.push(readOrigin(txn.origin)));
    const plan = createPlan({ doc, actor: 'agent:a' });
    plan.add({ title: 'one' });
    plan.undo();
    const store = {};
    const other = new Y.Doc();
    other.getMap('tasks').set('x', new Y.Map());
    applyStored(doc, [Y.encodeStateAsUpdate(other)], store);
    Y.applyUpdate(doc, Y.encodeStateAsUpdate(other), remoteOrigin('redis', true));
    doc.transact(() => doc.getMap('meta').set('k', 1), Symbol('mine'));
    expect(seen.map((o) => o.source)).toEqual(['local', 'undo', 'store', 'remote', 'unknown']);
    expect(seen[0]).toEqual({ source: 'local', actor: 'agent:a' });
    expect(seen[1]).toEqual({ source: 'undo', actor: 'agent:a' });
    expect(seen[3]).toEqual({ source: 'remote', via: 'redis', stored: true });
  });
});
