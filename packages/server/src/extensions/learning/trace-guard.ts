// A plan's trace document as the server keeps it: trimmed back to the bound whatever the writers' own bound was,
// and its queued jobs the server's alone.
import { TRACE_KEYS, type TraceBound, trimTrace } from '@cairn/core/learning';
import { readOrigin } from '@cairn/core/protocol';
import type * as Y from 'yjs';

/** Watches a loaded trace document while it stays loaded; `stopped`: the learner closed. */
export function guardTrace(doc: Y.Doc, bound: TraceBound, now: () => number, stopped: () => boolean): void {
  const calls = doc.getArray(TRACE_KEYS.calls);
  let queued = false;
  const check = () => {
    if (queued || stopped()) return;
    const oldest = (calls.length > 0 ? (calls.get(0) as { at?: unknown }) : null)?.at;
    const tooOld = typeof oldest === 'number' && oldest < now() - bound.maxAgeMs;
    if (calls.length <= bound.maxCalls && !tooOld) return;
    queued = true;
    // Not inside the observer's transaction: a write of its own, as `learning`.
    queueMicrotask(() => {
      queued = false;
      trimTrace(doc, bound, now(), 'learning');
    });
  };
  calls.observe(check);
  check();
  // Queued jobs are the server's: a client's change to them (a forged job would be learned into the scope's
  // skills) is undone. Another server's, relayed, is kept (a client's forged change is undone where it entered).
  const pending = doc.getMap<unknown>(TRACE_KEYS.pending);
  pending.observe((event, transaction) => {
    if (transaction.origin === 'learning' || readOrigin(transaction.origin).source === 'remote') return;
    const changes = [...event.changes.keys];
    queueMicrotask(() => {
      doc.transact(() => {
        for (const [key, change] of changes) {
          if (change.action === 'add') pending.delete(key);
          else pending.set(key, change.oldValue);
        }
      }, 'learning');
    });
  });
}
