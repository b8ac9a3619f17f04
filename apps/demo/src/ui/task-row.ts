// One task's row: checkbox (named by the title), the title (bound to its Y.Text while focused), status, who is
// on it, the next step, the wake time, what it waits on, and who is here. Updates touch only what changed.

import type { TaskSnapshot } from '@cairn/core';
import type { BlockedInfo } from '@cairn/core/protocol';
import { h, setAttr, setText } from '../dom.js';
import { type PresenceTag, relativeTime, STATUS_LABELS, type UiContext } from './context.js';
import { TaskDetails } from './task-details.js';
import { TitleBinding } from './title-binding.js';

/** True while the list moves rows: a focused title that is moved must not end its edit. */
let moving = false;

/** Runs `fn` (which moves rows) and gives focus and caret back to whatever had them. */
export function keepingFocus(fn: () => void): void {
  const active = document.activeElement as HTMLElement | null;
  const input = active instanceof HTMLInputElement && active.type === 'text' ? active : null;
  const start = input?.selectionStart ?? null;
  const end = input?.selectionEnd ?? null;
  moving = true;
  try {
    fn();
  } finally {
    if (active && document.activeElement !== active && active.isConnected) {
      active.focus({ preventScroll: true });
      if (input && start !== null && end !== null) input.setSelectionRange(start, end);
    }
    moving = false;
  }
}

export class TaskRow {
  readonly el: HTMLDivElement;
  task: TaskSnapshot;
  depth = -1;
  blocked: BlockedInfo | null = null;
  private presence: PresenceTag[] = [];
  private readonly check: HTMLInputElement;
  private readonly title: HTMLInputElement;
  private readonly num: HTMLSpanElement;
  private readonly pill: HTMLSpanElement;
  private readonly more: HTMLButtonElement;
  private meta: HTMLDivElement | null = null;
  private details: TaskDetails | null = null;
  private binding: TitleBinding | null = null;

  constructor(
    task: TaskSnapshot,
    private readonly ctx: UiContext,
  ) {
    this.task = task;
    const id = task.id;
    this.check = h('input', {
      className: 'task-check',
      attrs: { type: 'checkbox', 'aria-label': task.title },
      on: {
        change: () => this.toggleDone(),
      },
    });
    this.title = h('input', {
      className: 'task-title',
      attrs: { type: 'text', 'aria-label': 'Edit title', maxlength: 500, spellcheck: 'false' },
      on: {
        focus: () => {
          if (!this.binding) this.startEditing();
        },
        blur: () => {
          if (!moving) this.stopEditing();
        },
        keydown: (event) => {
          if (event.key === 'Enter' || event.key === 'Escape') {
            event.preventDefault();
            this.title.blur();
          }
        },
      },
    });
    this.title.value = task.title;
    this.num = h('span', { className: 'task-num', text: `#${task.num}` });
    this.pill = h('span', { className: 'pill' });
    this.more = h('button', {
      className: 'icon-button task-more',
      text: '⋯',
      attrs: {
        type: 'button',
        'aria-expanded': 'false',
        'aria-label': 'Details',
        title: 'Details and actions',
      },
      on: { click: () => this.toggleDetails() },
    });
    const handle = h('span', {
      className: 'task-handle',
      text: '⠿',
      attrs: { draggable: 'true', 'aria-hidden': 'true', title: 'Drag to reorder (or Alt+↑ / Alt+↓)' },
    });
    this.el = h(
      'div',
      { className: 'task', attrs: { role: 'listitem' }, dataset: { id } },
      h('div', { className: 'task-main' }, handle, this.check, this.title, this.num, this.pill, this.more),
    );
    this.render(null);
  }

  get id(): string {
    return this.task.id;
  }

  get editing(): boolean {
    return this.binding !== null;
  }

  update(task: TaskSnapshot): void {
    const before = this.task;
    this.task = task;
    this.render(before);
  }

  setDepth(depth: number): void {
    if (depth === this.depth) return;
    this.depth = depth;
    this.el.style.setProperty('--depth', String(depth));
    this.el.dataset['depth'] = String(depth);
  }

  setBlocked(info: BlockedInfo | null): void {
    this.blocked = info;
    this.el.classList.toggle('is-blocked', info !== null);
    this.el.classList.toggle('in-cycle', info?.reason === 'cycle');
    this.renderMeta();
  }

  /** Re-renders what names other tasks (a blocker's title changed). */
  refreshReferences(): void {
    this.renderMeta();
    this.details?.update(this.task);
  }

  setPresence(tags: PresenceTag[]): void {
    const same =
      tags.length === this.presence.length && tags.every((tag, i) => tag.id === this.presence[i]?.id);
    this.presence = tags;
    if (same) return;
    const first = tags[0];
    this.el.classList.toggle('has-presence', first !== undefined);
    if (first) this.el.style.setProperty('--presence', first.color);
    else this.el.style.removeProperty('--presence');
    this.renderMeta();
  }

  destroy(): void {
    this.binding?.destroy();
    this.binding = null;
    this.details?.destroy();
    this.el.remove();
  }

  focusTitle(): void {
    this.title.focus();
  }

  focusHandleTarget(): void {
    this.check.focus();
  }

  private render(before: TaskSnapshot | null): void {
    const task = this.task;
    if (!before || before.title !== task.title) {
      setAttr(this.check, 'aria-label', task.title);
      // While the person edits, the binding owns the input's value (and keeps the caret where it belongs).
      if (!this.binding && this.title.value !== task.title) this.title.value = task.title;
    }
    if (!before || before.status !== task.status) {
      this.check.checked = task.status === 'done';
      this.el.dataset['status'] = task.status;
      setText(this.pill, STATUS_LABELS[task.status] ?? task.status);
      this.pill.className = `pill status-${task.status}`;
    }
    if (!before || before.num !== task.num) setText(this.num, `#${task.num}`);
    if (
      !before ||
      before.assignee !== task.assignee ||
      before.nextStep !== task.nextStep ||
      before.wakeAt !== task.wakeAt ||
      before.blockedBy.join() !== task.blockedBy.join()
    ) {
      this.renderMeta();
    }
    this.details?.update(task);
  }

  private renderMeta(): void {
    const task = this.task;
    const parts: HTMLElement[] = [];
    if (task.assignee) {
      parts.push(
        h('span', { className: 'chip chip-assignee', text: `On it: ${this.ctx.nameOf(task.assignee)}` }),
      );
    }
    if (task.nextStep) parts.push(h('span', { className: 'chip chip-next', text: `Next: ${task.nextStep}` }));
    if (task.wakeAt) {
      parts.push(
        h('span', {
          className: 'chip chip-wake',
          text: `Wakes ${relativeTime(task.wakeAt)}`,
          attrs: { title: new Date(task.wakeAt).toLocaleString() },
        }),
      );
    }
    const blocked = this.blocked;
    if (blocked) parts.push(h('span', { className: 'chip chip-blocked', text: this.blockedText(blocked) }));
    for (const tag of this.presence) {
      const chip = h('span', {
        className: 'chip chip-presence',
        text: `● ${tag.name}${tag.kind === 'agent' ? ' (agent)' : ''} is on this`,
      });
      chip.style.setProperty('--presence', tag.color);
      parts.push(chip);
    }
    if (parts.length === 0) {
      this.meta?.remove();
      this.meta = null;
      return;
    }
    if (!this.meta) {
      this.meta = h('div', { className: 'task-meta' });
      this.el.children[0]!.after(this.meta);
    }
    this.meta.replaceChildren(...parts);
  }

  private blockedText(info: BlockedInfo): string {
    const names = (ids: string[]) => ids.map((id) => this.ctx.plan.get(id)?.title ?? id).join(', ');
    switch (info.reason) {
      case 'cycle':
        return `In a dependency cycle with ${names(info.blockedBy)}`;
      case 'parent_blocked':
        return `Waits with its parent: ${names(info.blockedBy)}`;
      case 'blocker_failed':
        return `A task it waits on failed: ${names(info.blockedBy)}`;
      case 'waiting_on_steps': {
        // In the order the steps are listed, not the ids' order.
        const open = new Set(info.blockedBy);
        const steps = this.ctx.plan.children(this.id).filter((s) => open.has(s.id));
        return `Waits on its steps: ${names(steps.map((s) => s.id))}`;
      }
      default:
        return `Waits on: ${names(info.blockedBy)}`;
    }
  }

  private toggleDone(): void {
    const done = this.check.checked;
    const title = this.task.title;
    const ok = this.ctx.attempt(() => this.ctx.plan.update(this.id, { status: done ? 'done' : 'pending' }));
    if (!ok) this.check.checked = !done;
    else if (done) {
      this.ctx.notify(`Marked “${title}” done.`, { label: 'Undo', run: () => this.ctx.plan.undo() });
    }
  }

  private startEditing(): void {
    this.ctx.focusTask(this.id);
    const ytext = TitleBinding.textOf(this.ctx.plan, this.id);
    if (ytext) this.binding = new TitleBinding(this.title, this.ctx.plan, this.id, ytext);
  }

  private stopEditing(): void {
    const binding = this.binding;
    this.binding = null;
    if (binding) binding.finish();
    else if (this.title.value.trim() && this.title.value.trim() !== this.task.title) {
      // No Y.Text to bind (a title another writer stored as a string): write it as one change.
      this.ctx.attempt(() => this.ctx.plan.update(this.id, { title: this.title.value }));
    }
    if (this.title.value !== this.task.title && !this.binding) this.title.value = this.task.title;
  }

  private toggleDetails(): void {
    if (this.details) {
      this.details.destroy();
      this.details = null;
      setAttr(this.more, 'aria-expanded', 'false');
      this.el.classList.remove('expanded');
      return;
    }
    this.details = new TaskDetails(this, this.ctx);
    this.el.append(this.details.el);
    setAttr(this.more, 'aria-expanded', 'true');
    this.el.classList.add('expanded');
  }
}
