// The one place that finds which tasks of a loaded plan changed: core's `changedTasks` read once per transaction
// that touched the plan's tasks, after it (from what Yjs records of every transaction, so no deep observer and no
// events built for it), and each subscriber told only of the tasks it asked for (a field it reads changed, or a
// task was added, replaced or removed). Extensions subscribe here instead of observing the tasks map themselves.
import { changedTasks, DOC_KEYS } from '@cairn/core/protocol';
import type * as Y from 'yjs';

export interface TaskChangeSubscription {
  /** Task fields whose change the subscriber needs (e.g. `status`). */
  fields: readonly string[];
  /** Also tasks added to the plan, replaced whole or removed. Default false. */
  addedOrRemoved?: boolean;
  /** Called after a transaction with the ids of the tasks it asked about (never with none). */
  onChange(planId: string, doc: Y.Doc, taskIds: readonly string[]): void;
}

export class TaskChanges {
  private subscriptions: TaskChangeSubscription[] = [];
  private readonly watched = new WeakSet<Y.Doc>();

  /** Subscribes to the task changes of every plan loaded from now on; returns the unsubscribe. */
  subscribe(subscription: TaskChangeSubscription): () => void {
    this.subscriptions = [...this.subscriptions, subscription];
    return () => {
      this.subscriptions = this.subscriptions.filter((s) => s !== subscription);
    };
  }

  /** A plan loaded: its transactions are read while it stays loaded (the listener dies with the doc). */
  watch(planId: string, doc: Y.Doc): void {
    if (this.watched.has(doc)) return;
    this.watched.add(doc);
    const tasks = doc.getMap<unknown>(DOC_KEYS.tasks);
    doc.on('afterTransaction', (transaction: Y.Transaction) => {
      if (this.subscriptions.length === 0 || transaction.changed.size === 0) return;
      const changes = changedTasks(transaction, tasks);
      if (changes.size === 0) return;
      for (const subscription of this.subscriptions) {
        const ids: string[] = [];
        for (const [id, { kind, fields }] of changes) {
          // An update that names no field replaced the task's whole map: as good as removed and added again.
          const whole = kind !== 'updated' || fields.size === 0;
          if (whole ? subscription.addedOrRemoved : subscription.fields.some((f) => fields.has(f)))
            ids.push(id);
        }
        if (ids.length > 0) subscription.onChange(planId, doc, ids);
      }
    });
  }
}
