// The one place that finds which tasks of a loaded plan changed: a single deep observer per plan, core's
// `collectChanges` read once per transaction, and each subscriber told only of the changes it asked for (the fields
// it reads, or a task added or removed). Extensions subscribe here instead of observing the tasks map themselves.
import { collectChanges, DOC_KEYS } from '@cairn/core';
import type * as Y from 'yjs';

/** One task a transaction touched, as a subscriber sees it. */
export interface TaskFieldChange {
  id: string;
  kind: 'added' | 'updated' | 'removed';
  /** The task fields written (empty for added and removed). */
  fields: ReadonlySet<string>;
}

export interface TaskChangeSubscription {
  /** Task fields whose change the subscriber needs (e.g. `status`). */
  fields: readonly string[];
  /** Also tasks added to or removed from the plan. Default false. */
  addedOrRemoved?: boolean;
  /** Called after a transaction with the changes it asked for (never with none). */
  onChange(planId: string, doc: Y.Doc, changes: readonly TaskFieldChange[]): void;
}

export class TaskChanges {
  private readonly subscriptions = new Set<TaskChangeSubscription>();
  private readonly watched = new WeakSet<Y.Doc>();

  /** Subscribes to the task changes of every plan loaded from now on; returns the unsubscribe. */
  subscribe(subscription: TaskChangeSubscription): () => void {
    this.subscriptions.add(subscription);
    return () => this.subscriptions.delete(subscription);
  }

  /** A plan loaded: its tasks are observed while it stays loaded (the observer dies with the doc). */
  watch(planId: string, doc: Y.Doc): void {
    if (this.watched.has(doc)) return;
    this.watched.add(doc);
    const tasks = doc.getMap<unknown>(DOC_KEYS.tasks);
    tasks.observeDeep((events) => {
      if (this.subscriptions.size === 0) return;
      const changes = collectChanges(events, tasks);
      if (changes.size === 0) return;
      for (const subscription of this.subscriptions) {
        const wanted: TaskFieldChange[] = [];
        for (const [id, change] of changes) {
          const fits =
            change.kind === 'updated'
              ? subscription.fields.some((field) => change.fields.has(field))
              : subscription.addedOrRemoved === true;
          if (fits) wanted.push({ id, kind: change.kind, fields: change.fields });
        }
        if (wanted.length > 0) subscription.onChange(planId, doc, wanted);
      }
    });
  }
}
