// The one place that finds which tasks of a loaded plan changed: a single deep observer per plan, core's
// `collectChanges` read once per transaction that can matter to a subscriber, and each subscriber told only of the
// tasks it asked for (a field it reads changed, or a task was added, replaced or removed). Extensions subscribe here
// instead of observing the tasks map themselves. It runs for every transaction of every plan: a transaction that
// writes no field anyone asked for (a title typed, a note) costs one walk over its events and nothing else.
import { collectChanges, DOC_KEYS } from '@cairn/core/protocol';
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
  /** Every field some subscriber reads, and whether any wants tasks added or removed. */
  private fields = new Set<string>();
  private wholeTasks = false;
  private readonly watched = new WeakSet<Y.Doc>();

  /** Subscribes to the task changes of every plan loaded from now on; returns the unsubscribe. */
  subscribe(subscription: TaskChangeSubscription): () => void {
    this.subscriptions = [...this.subscriptions, subscription];
    this.summarize();
    return () => {
      this.subscriptions = this.subscriptions.filter((s) => s !== subscription);
      this.summarize();
    };
  }

  /** A plan loaded: its tasks are observed while it stays loaded (the observer dies with the doc). */
  watch(planId: string, doc: Y.Doc): void {
    if (this.watched.has(doc)) return;
    this.watched.add(doc);
    const tasks = doc.getMap<unknown>(DOC_KEYS.tasks);
    tasks.observeDeep((events) => {
      if (this.subscriptions.length === 0 || !this.mayMatter(events, tasks)) return;
      const changes = collectChanges(events, tasks);
      for (const subscription of this.subscriptions) {
        const ids: string[] = [];
        for (const [id, { kind, fields }] of changes) {
          // An `updated` change without fields is a task replaced whole (its new map's fields are not events).
          const whole = kind !== 'updated' || fields.size === 0;
          if (whole ? subscription.addedOrRemoved : subscription.fields.some((f) => fields.has(f)))
            ids.push(id);
        }
        if (ids.length > 0) subscription.onChange(planId, doc, ids);
      }
    });
  }

  private summarize(): void {
    this.fields = new Set(this.subscriptions.flatMap((s) => s.fields));
    this.wholeTasks = this.subscriptions.some((s) => s.addedOrRemoved);
  }

  /** Whether a transaction's events touch a field someone reads, or a whole task when someone wants those. */
  private mayMatter(
    events: ReadonlyArray<Y.YEvent<Y.AbstractType<unknown>>>,
    tasks: Y.Map<unknown>,
  ): boolean {
    for (const event of events) {
      if (event.target === tasks) {
        if (this.wholeTasks) return true;
        continue;
      }
      // Up to the task's map: the event is the task map's own (its keys are fields) or inside one field's value.
      let type: Y.AbstractType<unknown> = event.target;
      let field: string | null = null;
      for (let item = type._item; item !== null; item = type._item) {
        if (item.parent === tasks) break;
        field = item.parentSub;
        type = item.parent as Y.AbstractType<unknown>;
      }
      if (type._item === null) continue; // not under the tasks map
      if (field !== null) {
        if (this.fields.has(field)) return true;
      } else {
        for (const key of (event as Y.YMapEvent<unknown>).keysChanged) if (this.fields.has(key)) return true;
      }
    }
    return false;
  }
}
