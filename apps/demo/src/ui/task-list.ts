// The plan panel's list: tasks with their steps nested, kept live incrementally. plan.onChange names the tasks a
// transaction touched; only their rows are updated, rows are moved only when order changed, and what the graph
// derives (blocked, cycles) is recomputed once per change and applied to the rows whose state differs.

import type { Plan, PlanChangeEvent, TaskSnapshot } from '@cairn/core';
import { isOpenStatus } from '@cairn/core';
import type { BlockedInfo } from '@cairn/core/protocol';
import { h } from '../dom.js';
import { adjacentRow, ChunkedList } from './chunked-list.js';
import type { PresenceTag, UiContext } from './context.js';
import { moveBy, moveNextTo } from './moves.js';
import { keepingFocus, TaskRow } from './task-row.js';

/** Fields whose change can move a row or hide it. */
const STRUCTURAL = new Set(['rank', 'parent', 'status']);
/** Fields whose change can change what is blocked. */
const GRAPH = new Set(['status', 'blockedBy', 'parent']);
const DRAG_TYPE = 'application/x-cairn-task';

export class TaskList {
  readonly el: HTMLElement;
  private readonly plan: Plan;
  private readonly chunks = new ChunkedList('Tasks');
  private readonly list: HTMLDivElement = this.chunks.el;
  private readonly rows = new Map<string, TaskRow>();
  private readonly counts: HTMLSpanElement;
  private readonly closedToggle: HTMLInputElement;
  private readonly closedLabel: HTMLSpanElement;
  private readonly empty: HTMLParagraphElement;
  private showClosed = false;
  private blocked = new Map<string, BlockedInfo>();
  /** blocker id -> ids of tasks that wait on it, to refresh their "waits on" text when its title changes. */
  private readonly dependents = new Map<string, Set<string>>();
  private presence = new Map<string, PresenceTag[]>();
  private dragging: string | null = null;
  private dropMark: { row: TaskRow; where: 'before' | 'after' } | null = null;
  private readonly unsubscribe: () => void;

  constructor(private readonly ctx: UiContext) {
    this.plan = ctx.plan;
    const input = h('input', {
      attrs: {
        type: 'text',
        'aria-label': 'New task',
        placeholder: 'Add a task…',
        maxlength: 500,
        autocomplete: 'off',
      },
    });
    const form = h(
      'form',
      {
        className: 'add-task',
        on: {
          submit: (event) => {
            event.preventDefault();
            const title = input.value.trim();
            if (!title) return;
            if (ctx.attempt(() => this.plan.add({ title }))) input.value = '';
          },
        },
      },
      input,
      h('button', { text: 'Add', attrs: { type: 'submit' } }),
    );
    this.counts = h('span', { className: 'counts', attrs: { 'aria-live': 'polite' } });
    this.closedLabel = h('span', { text: 'Show closed' });
    this.closedToggle = h('input', {
      attrs: { type: 'checkbox' },
      on: {
        change: () => {
          this.showClosed = this.closedToggle.checked;
          this.reorder(new Set());
        },
      },
    });
    this.empty = h('p', {
      className: 'empty',
      text: 'No tasks yet. Add one above, or ask the agent: “plan a launch: write post, review, publish”.',
    });
    this.el = h(
      'section',
      { className: 'plan-list', attrs: { 'aria-label': 'Plan' } },
      form,
      h(
        'div',
        { className: 'list-bar' },
        this.counts,
        h('label', { className: 'toggle' }, this.closedToggle, this.closedLabel),
      ),
      this.empty,
      this.list,
    );
    this.wireKeyboard();
    this.wireDrag();
    this.unsubscribe = this.plan.onChange((event) => this.apply(event));
    this.reorder(new Set());
    this.refreshBlocked();
  }

  destroy(): void {
    this.unsubscribe();
    for (const row of this.rows.values()) row.destroy();
    this.rows.clear();
  }

  /** The row of a task, if it is shown. */
  row(id: string): TaskRow | undefined {
    return this.rows.get(id);
  }

  /** Shows a task (opening "show closed" if needed) and puts focus on its checkbox. */
  reveal(id: string): void {
    const task = this.plan.get(id);
    if (!task) return;
    if (!this.rows.has(id) && !isOpenStatus(task.status)) {
      this.closedToggle.checked = true;
      this.showClosed = true;
      this.reorder(new Set());
    }
    const row = this.rows.get(id);
    row?.el.scrollIntoView({ block: 'nearest' });
    row?.focusHandleTarget();
  }

  /** Who is on which task (from awareness); only rows whose tags changed are touched. */
  setPresence(byTask: Map<string, PresenceTag[]>): void {
    const ids = new Set([...this.presence.keys(), ...byTask.keys()]);
    this.presence = byTask;
    for (const id of ids) this.rows.get(id)?.setPresence(byTask.get(id) ?? []);
  }

  /** Applies one transaction's changes. */
  private apply(event: PlanChangeEvent): void {
    let structural = false;
    let graph = false;
    const moved = new Set<string>();
    for (const change of event.changes) {
      if (change.kind === 'removed') {
        this.dropRow(change.id);
        structural = graph = true;
        continue;
      }
      if (change.kind === 'added') {
        moved.add(change.id);
        structural = graph = true;
        continue;
      }
      const task = this.plan.get(change.id);
      if (!task) continue;
      const row = this.rows.get(change.id);
      row?.update(task);
      if (change.fields.some((f) => STRUCTURAL.has(f))) {
        structural = true;
        if (change.fields.includes('rank') || change.fields.includes('parent')) moved.add(change.id);
      }
      if (change.fields.some((f) => GRAPH.has(f))) graph = true;
      if (change.fields.includes('blockedBy') && row) this.indexDependents(row.task);
      if (change.fields.includes('title')) {
        for (const dependent of this.dependents.get(change.id) ?? [])
          this.rows.get(dependent)?.refreshReferences();
      }
    }
    if (structural) keepingFocus(() => this.reorder(moved));
    if (graph) this.refreshBlocked();
    this.updateCounts();
  }

  /**
   * Puts the shown rows in tree order. Rows of moved tasks (and their steps) are taken out first, so putting
   * them back is a few inserts instead of shifting every row between the old and the new place.
   */
  private reorder(moved: Set<string>): void {
    const order: Array<{ task: TaskSnapshot; depth: number }> = [];
    const depth = new Map<string | null, number>([[null, -1]]);
    const tasks = this.plan.list();
    const shown = this.shownIds(tasks);
    const hidden = new Set<string>();
    for (const task of tasks) {
      const parent = this.plan.effectiveParent(task);
      if (!shown.has(task.id)) {
        hidden.add(task.id);
        continue;
      }
      const d = (depth.get(parent) ?? -1) + 1;
      depth.set(task.id, d);
      if (parent !== null && moved.has(parent)) moved.add(task.id);
      order.push({ task, depth: d });
    }
    for (const id of [...this.rows.keys()]) if (hidden.has(id) || !this.plan.has(id)) this.dropRow(id);
    for (const id of moved) this.rows.get(id)?.el.remove();

    const fresh: TaskRow[] = [];
    const els: HTMLElement[] = [];
    for (const { task, depth: d } of order) {
      let row = this.rows.get(task.id);
      if (!row) {
        row = new TaskRow(task, this.ctx);
        this.rows.set(task.id, row);
        fresh.push(row);
      }
      row.setDepth(d);
      els.push(row.el);
    }
    this.chunks.place(els);
    for (const row of fresh) {
      row.setBlocked(this.blocked.get(row.id) ?? null);
      row.setPresence(this.presence.get(row.id) ?? []);
      this.indexDependents(row.task);
    }
    this.empty.hidden = this.plan.list().length > 0;
    this.updateCounts();
  }

  /**
   * The tasks to show: open ones always, whatever their parent's state, and the closed tasks they sit under (so
   * an open step keeps its place); every task when "show closed" is on. `tasks` is in tree order, so walking it
   * backwards meets each step before its parent.
   */
  private shownIds(tasks: readonly TaskSnapshot[]): Set<string> {
    const shown = new Set<string>();
    for (let i = tasks.length - 1; i >= 0; i--) {
      const task = tasks[i]!;
      if (!this.showClosed && !isOpenStatus(task.status) && !shown.has(task.id)) continue;
      shown.add(task.id);
      const parent = this.plan.effectiveParent(task);
      if (parent !== null) shown.add(parent);
    }
    return shown;
  }

  private dropRow(id: string): void {
    const row = this.rows.get(id);
    if (!row) return;
    row.destroy();
    this.rows.delete(id);
  }

  /** Recomputes what is blocked and updates the rows whose blocked state changed. */
  private refreshBlocked(): void {
    const next = new Map(this.plan.blocked().map((b) => [b.id, b as BlockedInfo]));
    for (const id of new Set([...this.blocked.keys(), ...next.keys()])) {
      const before = this.blocked.get(id);
      const after = next.get(id);
      if (sameBlock(before, after)) continue;
      this.rows.get(id)?.setBlocked(after ?? null);
    }
    this.blocked = next;
  }

  private indexDependents(task: TaskSnapshot): void {
    for (const blocker of task.blockedBy) {
      const set = this.dependents.get(blocker) ?? new Set<string>();
      set.add(task.id);
      this.dependents.set(blocker, set);
    }
  }

  private updateCounts(): void {
    const all = this.plan.list();
    let open = 0;
    for (const task of all) if (isOpenStatus(task.status)) open++;
    const closed = all.length - open;
    this.counts.textContent = `${open} open · ${closed} closed · ${this.plan.ready().length} ready for you`;
    this.closedLabel.textContent = `Show closed (${closed})`;
  }

  /** Alt+↑ / Alt+↓ move the focused task; ↑ / ↓ on a checkbox move focus between rows. */
  private wireKeyboard(): void {
    this.list.addEventListener('keydown', (event) => {
      const li = (event.target as HTMLElement).closest<HTMLElement>('.task');
      const id = li?.dataset['id'];
      if (!li || !id) return;
      if (event.altKey && (event.key === 'ArrowUp' || event.key === 'ArrowDown')) {
        event.preventDefault();
        const target = event.target as HTMLElement;
        this.ctx.attempt(() => moveBy(this.plan, id, event.key === 'ArrowUp' ? -1 : 1));
        target.focus();
        return;
      }
      if ((event.target as HTMLElement).classList.contains('task-check') && !event.altKey) {
        const sibling =
          event.key === 'ArrowDown'
            ? adjacentRow(li, 1)
            : event.key === 'ArrowUp'
              ? adjacentRow(li, -1)
              : null;
        const check = sibling?.querySelector<HTMLInputElement>('.task-check');
        if (check) {
          event.preventDefault();
          check.focus();
        }
      }
    });
    this.list.addEventListener('focusin', (event) => {
      const id = (event.target as HTMLElement).closest<HTMLElement>('.task')?.dataset['id'];
      if (id) this.ctx.focusTask(id);
    });
    this.list.addEventListener('focusout', (event) => {
      const next = event.relatedTarget as HTMLElement | null;
      if (!next || !this.list.contains(next)) this.ctx.focusTask(null);
    });
  }

  /** Drag by the handle; drop on the upper or lower half of another row to go before or after it. */
  private wireDrag(): void {
    this.list.addEventListener('dragstart', (event) => {
      const li = (event.target as HTMLElement).closest<HTMLElement>('.task');
      const id = li?.dataset['id'];
      if (!li || !id || !event.dataTransfer) return;
      this.dragging = id;
      event.dataTransfer.setData(DRAG_TYPE, id);
      event.dataTransfer.setData('text/plain', this.plan.get(id)?.title ?? id);
      event.dataTransfer.effectAllowed = 'move';
      event.dataTransfer.setDragImage(li, 16, 16);
      li.classList.add('dragging');
    });
    this.list.addEventListener('dragover', (event) => {
      if (!this.dragging) return;
      const target = this.rowAt(event);
      if (!target || target.id === this.dragging) return this.mark(null);
      event.preventDefault();
      if (event.dataTransfer) event.dataTransfer.dropEffect = 'move';
      const rect = target.el.getBoundingClientRect();
      this.mark({ row: target, where: event.clientY < rect.top + rect.height / 2 ? 'before' : 'after' });
    });
    this.list.addEventListener('drop', (event) => {
      event.preventDefault();
      const id = this.dragging;
      const mark = this.dropMark;
      this.endDrag();
      if (id && mark) this.ctx.attempt(() => moveNextTo(this.plan, id, mark.row.id, mark.where));
    });
    this.list.addEventListener('dragend', () => this.endDrag());
  }

  private rowAt(event: DragEvent): TaskRow | undefined {
    const id = (event.target as HTMLElement).closest<HTMLElement>('.task')?.dataset['id'];
    return id ? this.rows.get(id) : undefined;
  }

  private mark(next: { row: TaskRow; where: 'before' | 'after' } | null): void {
    if (this.dropMark) this.dropMark.row.el.classList.remove('drop-before', 'drop-after');
    this.dropMark = next;
    if (next) next.row.el.classList.add(next.where === 'before' ? 'drop-before' : 'drop-after');
  }

  private endDrag(): void {
    this.mark(null);
    if (this.dragging) this.rows.get(this.dragging)?.el.classList.remove('dragging');
    this.dragging = null;
  }
}

function sameBlock(a: BlockedInfo | undefined, b: BlockedInfo | undefined): boolean {
  if (!a || !b) return a === b;
  return (
    a.reason === b.reason &&
    a.blockedBy.join() === b.blockedBy.join() &&
    (a.cycle ?? []).join() === (b.cycle ?? []).join()
  );
}
