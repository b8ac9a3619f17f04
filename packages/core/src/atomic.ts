// plan.atomic's dry run: the call runs once, on a Plan over a scratch copy of the document (scratch.ts), whose
// journal records each validated write; the real plan then applies those writes, validating nothing again.
import type * as Y from 'yjs';
import { CairnError } from './errors.js';
import { scratchCopy } from './scratch.js';

/** A write as a dry run records it: applied to the plan it was planned on, then to the real one. */
export type JournalWrite<P> = (target: P) => void;

/** What a dry run records: each write, and the transactions they made (any other change is refused). */
export class Journal<P> {
  readonly writes: Array<JournalWrite<P>> = [];
  private readonly transactions = new Set<Y.Transaction>();

  /** Whether `txn` is one a recorded write made. */
  made(txn: Y.Transaction): boolean {
    return this.transactions.has(txn);
  }

  /** A write succeeded in `txn` (its own transaction, or the batch it is part of): called before `txn` ends. */
  wroteIn(txn: Y.Transaction): void {
    this.transactions.add(txn);
  }

  /** `write` is done: the real plan applies it in turn. */
  wrote(write: JournalWrite<P>): void {
    this.writes.push(write);
  }
}

/**
 * Runs `fn` once on `open(copy, journal)`: a Plan over a scratch copy of `doc` that records its writes in
 * `journal`. Returns what `fn` returned and the writes to apply to the real plan; throws, before anything is
 * written there, when `fn` changed the copy other than through the Plan's recorded writes.
 */
export function dryRun<P extends { destroy(): void }, T>(
  doc: Y.Doc,
  open: (copy: Y.Doc, journal: Journal<P>) => P,
  fn: (plan: P) => T,
): { result: T; writes: ReadonlyArray<JournalWrite<P>> } {
  const scratch = scratchCopy(doc);
  const journal = new Journal<P>();
  const probe = open(scratch, journal);
  let unrecorded = false;
  const watch = (txn: Y.Transaction) => {
    if (txn.changed.size > 0 && !journal.made(txn)) unrecorded = true;
  };
  scratch.on('afterTransaction', watch);
  let result: T;
  try {
    result = fn(probe);
  } finally {
    scratch.off('afterTransaction', watch);
    probe.destroy();
    scratch.destroy();
  }
  if (unrecorded) {
    throw new CairnError(
      'invalid_argument',
      'plan.atomic takes writes made through the Plan it gives (add, update, move, remove, replace, batch); ' +
        'this one wrote otherwise, so nothing was written.',
    );
  }
  return { result, writes: journal.writes };
}
