// An UndoManager with a bounded undo stack. Y.UndoManager keeps every value its tracked transactions overwrote or
// deleted (it marks those items `keep`, so the document's garbage collection leaves their content in place), for
// as long as the stack item that could restore them exists. Its stack has no bound: a plan written 100,000 times
// by one actor held 100,000 stack items and every overwritten value, in memory and in every snapshot a storage
// adapter wrote (the values were only dropped when a replica reloaded the snapshot). Here the oldest items are
// evicted past `limit`, and what they kept is released and collected the way Yjs collects any deleted item.
//
// Collection is Yjs's own (Y.tryGc, what every transaction's cleanup runs): a deleted item's content becomes
// ContentDeleted and the item keeps its id and origins, so concurrent remote edits that point at it still
// integrate; nothing is written to the document and no update is emitted.
import * as Y from 'yjs';

export interface BoundedUndoManagerOptions {
  /** Most undo steps kept; older ones are forgotten and what they kept alive is collected. */
  limit: number;
  trackedOrigins?: Set<unknown>;
  captureTimeout?: number;
}

export class BoundedUndoManager extends Y.UndoManager {
  readonly limit: number;
  private trimQueued = false;
  /** Steps already out of the stack whose kept values are not collected yet. */
  private readonly evicted: Array<(typeof this.undoStack)[number]> = [];
  private readonly collectBatch: number;

  constructor(scope: ConstructorParameters<typeof Y.UndoManager>[0], options: BoundedUndoManagerOptions) {
    const { limit, ...rest } = options;
    super(scope, rest);
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
    this.limit = limit;
    this.collectBatch = Math.max(1, Math.min(25, Math.floor(limit / 4)));
    this.on('stack-item-added', this.onStackItemAdded);
    this.doc.on('afterAllTransactions', this.trim);
  }

  // Eviction waits until every transaction of the batch is cleaned up: evicting from inside a transaction's
  // cleanup (where 'stack-item-added' fires) would collect structs while Yjs is still merging that transaction's.
  private readonly onStackItemAdded = (): void => {
    if (this.undoStack.length > this.limit) this.trimQueued = true;
  };

  private readonly trim = (): void => {
    if (!this.trimQueued) return;
    this.trimQueued = false;
    const excess = this.undoStack.length - this.limit;
    if (excess <= 0) return;
    for (const item of this.undoStack.splice(0, excess)) this.evicted.push(item);
    // Collecting costs a transaction of its own (about as much as the write that evicted the step), so evicted
    // steps are collected a batch at a time: the depth of undo stays exact, a few more values stay held a while.
    if (this.evicted.length < this.collectBatch) return;
    this.collect(this.evicted.splice(0));
  };

  /**
   * Forgets the redo steps, collecting what they kept: after an undo, what it took back is then gone as if never
   * written (a replica that never saw it gets no trace of its content).
   */
  forgetRedo(): void {
    this.collect(this.redoStack.splice(0));
  }

  private collect(evicted: Array<(typeof this.undoStack)[number]>): void {
    if (evicted.length === 0) return;
    const doc = this.doc;
    // The same release as UndoManager.clear(): items (and their parents) no longer kept for an undo. Collected
    // inside the transaction that split them at the evicted ranges' edges: at its cleanup Yjs merges split items
    // back, and a merged item stays kept if any part was, so a run of overwrites of one key (which Yjs merges
    // into one item) would otherwise stay kept whole until its last step is evicted.
    doc.transact((tr) => {
      for (const item of evicted) {
        Y.iterateDeletedStructs(tr, item.deletions, (struct) => {
          if (struct instanceof Y.Item && this.scope.some((type) => isInScope(type, struct, doc))) {
            release(struct);
          }
        });
      }
      if (doc.gc) for (const item of evicted) Y.tryGc(item.deletions, doc.store, doc.gcFilter);
    });
  }

  override destroy(): void {
    this.doc.off('afterAllTransactions', this.trim);
    this.off('stack-item-added', this.onStackItemAdded);
    super.destroy();
  }
}

function isInScope(type: Y.AbstractType<unknown> | Y.Doc, item: Y.Item, doc: Y.Doc): boolean {
  return type === doc || Y.isParentOf(type as Y.AbstractType<unknown>, item);
}

/** Yjs's keepItem(item, false), which it does not export: clears `keep` on the item and up its parents. */
function release(item: Y.Item | null): void {
  while (item?.keep) {
    item.keep = false;
    item = (item.parent as Y.AbstractType<unknown>)._item;
  }
}
