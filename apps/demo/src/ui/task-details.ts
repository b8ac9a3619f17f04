// A task's expanded panel, built only when opened: status, next step, wake time, who is on it, what it waits on
// (add and remove), a new step, moving it, cancelling and deleting it. Every control is labelled.
import { isOpenStatus, STATUSES, type TaskSnapshot } from '@cairn/core';
import { h, replace, setAttr } from '../dom.js';
import { STATUS_LABELS, type UiContext } from './context.js';
import { moveBy } from './moves.js';

const WAITING = new Set(['waiting_user', 'waiting_external']);

/** What the details panel reads of the row it opens under (the row owns the panel, not the other way). */
export interface DetailsRow {
  readonly id: string;
  readonly task: TaskSnapshot;
}

export class TaskDetails {
  readonly el: HTMLDivElement;
  private readonly status: HTMLSelectElement;
  private readonly nextStep: HTMLInputElement;
  private readonly wake: HTMLInputElement;
  private readonly who: HTMLDivElement;
  private readonly deps: HTMLUListElement;
  private readonly depPicker: HTMLSelectElement;

  constructor(
    private readonly row: DetailsRow,
    private readonly ctx: UiContext,
  ) {
    const plan = ctx.plan;
    const id = row.id;
    this.status = h('select', {
      attrs: { 'aria-label': 'Status' },
      on: {
        change: () =>
          ctx.attempt(() => plan.update(id, { status: this.status.value as TaskSnapshot['status'] })),
      },
    });
    this.nextStep = h('input', {
      attrs: {
        type: 'text',
        'aria-label': 'Next step',
        placeholder: 'The next concrete action',
        maxlength: 2000,
      },
      on: {
        change: () => ctx.attempt(() => plan.update(id, { nextStep: this.nextStep.value.trim() || null })),
      },
    });
    this.wake = h('input', {
      attrs: { type: 'datetime-local', 'aria-label': 'Wake time' },
      on: {
        change: () =>
          ctx.attempt(() =>
            plan.update(id, { wakeAt: this.wake.value ? new Date(this.wake.value).toISOString() : null }),
          ),
      },
    });
    this.who = h('div', { className: 'details-who' });
    this.deps = h('ul', { className: 'details-deps', attrs: { 'aria-label': 'Waits on' } });
    this.depPicker = h('select', {
      attrs: { 'aria-label': 'Add dependency' },
      on: { focus: () => this.fillPicker() },
    });
    const stepInput = h('input', {
      attrs: { type: 'text', 'aria-label': 'New step', placeholder: 'Add a step…', maxlength: 500 },
    });
    const addStep = (event: Event) => {
      event.preventDefault();
      const title = stepInput.value.trim();
      if (!title) return;
      if (ctx.attempt(() => plan.add({ title, parent: id }))) stepInput.value = '';
      stepInput.focus();
    };
    this.el = h(
      'div',
      { className: 'task-details', attrs: { role: 'group', 'aria-label': 'Task details' } },
      h('label', { className: 'field' }, h('span', { text: 'Status' }), this.status),
      h('label', { className: 'field' }, h('span', { text: 'Next step' }), this.nextStep),
      h('label', { className: 'field' }, h('span', { text: 'Wake time' }), this.wake),
      this.who,
      h(
        'div',
        { className: 'field' },
        h('span', { text: 'Waits on' }),
        this.deps,
        h(
          'div',
          { className: 'inline' },
          this.depPicker,
          h('button', {
            text: 'Add dependency',
            attrs: { type: 'button' },
            on: {
              click: () => {
                const blocker = this.depPicker.value;
                if (blocker) ctx.attempt(() => plan.update(id, { addBlockedBy: [blocker] }));
              },
            },
          }),
        ),
      ),
      h(
        'form',
        { className: 'inline', on: { submit: addStep } },
        stepInput,
        h('button', { text: 'Add step', attrs: { type: 'submit' } }),
      ),
      h(
        'div',
        { className: 'inline actions' },
        h('button', {
          text: 'Move up',
          attrs: { type: 'button' },
          on: { click: () => ctx.attempt(() => moveBy(plan, id, -1)) },
        }),
        h('button', {
          text: 'Move down',
          attrs: { type: 'button' },
          on: { click: () => ctx.attempt(() => moveBy(plan, id, 1)) },
        }),
        h('button', {
          text: 'Cancel task',
          attrs: { type: 'button' },
          on: { click: () => ctx.attempt(() => plan.update(id, { status: 'cancelled' })) },
        }),
        h('button', {
          className: 'danger',
          text: 'Delete',
          attrs: { type: 'button' },
          on: {
            click: () => {
              const title = this.row.task.title;
              if (ctx.attempt(() => plan.remove(id))) {
                ctx.notify(`Deleted “${title}”.`, { label: 'Undo', run: () => plan.undo() });
              }
            },
          },
        }),
      ),
    );
    this.update(row.task);
  }

  update(task: TaskSnapshot): void {
    const plan = this.ctx.plan;
    // The status list: every status, but `skipped` only for steps (the model refuses it for top-level tasks).
    const statuses = STATUSES.filter((s) => s !== 'skipped' || task.parent !== null);
    if (this.status.options.length !== statuses.length) {
      this.status.replaceChildren(
        ...statuses.map((s) => h('option', { text: STATUS_LABELS[s] ?? s, attrs: { value: s } })),
      );
    }
    this.status.value = task.status;
    if (document.activeElement !== this.nextStep) this.nextStep.value = task.nextStep ?? '';
    const waiting = WAITING.has(task.status);
    this.wake.disabled = !waiting;
    setAttr(this.wake, 'title', waiting ? null : 'Only waiting tasks have a wake time');
    if (document.activeElement !== this.wake) this.wake.value = task.wakeAt ? toLocalInput(task.wakeAt) : '';

    const me = plan.actor;
    const holder = task.assignee;
    const whoText = holder
      ? `On it: ${this.ctx.nameOf(holder)}${holder === me ? ' (you)' : ''}`
      : 'Nobody is on it.';
    const button = !isOpenStatus(task.status)
      ? null
      : holder === me
        ? h('button', {
            text: 'Release',
            attrs: { type: 'button' },
            on: { click: () => this.ctx.attempt(() => plan.release(task.id)) },
          })
        : holder === null
          ? h('button', {
              text: 'Take it',
              attrs: { type: 'button' },
              on: {
                click: () =>
                  this.ctx.attempt(async () => {
                    const result = await plan.claim(task.id);
                    if (result.outcome !== 'won') this.ctx.notify(result.message);
                  }),
              },
            })
          : h('button', {
              text: 'Take over',
              attrs: { type: 'button' },
              on: { click: () => this.ctx.attempt(() => plan.update(task.id, { assignee: me })) },
            });
    replace(this.who, h('span', { text: whoText }), button);

    this.deps.replaceChildren(
      ...task.blockedBy.map((blocker) => {
        const title = plan.get(blocker)?.title ?? blocker;
        return h(
          'li',
          { className: 'chip' },
          h('span', { text: title }),
          h('button', {
            className: 'icon-button',
            text: '×',
            attrs: { type: 'button', 'aria-label': `Remove dependency on ${title}` },
            on: { click: () => this.ctx.attempt(() => plan.update(task.id, { removeBlockedBy: [blocker] })) },
          }),
        );
      }),
    );
    if (task.blockedBy.length === 0) this.deps.append(h('li', { className: 'muted', text: 'nothing' }));
    this.fillPicker();
  }

  destroy(): void {
    this.el.remove();
  }

  /** Tasks this one could wait on: every other task it does not wait on yet (the plan refuses cycles). */
  private fillPicker(): void {
    const task = this.row.task;
    const taken = new Set([task.id, ...task.blockedBy]);
    const options = this.ctx.plan
      .list()
      .filter((t) => !taken.has(t.id))
      .map((t) => h('option', { text: `#${t.num} ${t.title}`, attrs: { value: t.id } }));
    const keep = this.depPicker.value;
    this.depPicker.replaceChildren(h('option', { text: 'Choose a task…', attrs: { value: '' } }), ...options);
    if (keep && options.some((o) => o.value === keep)) this.depPicker.value = keep;
  }
}

/** An ISO time as the value of a datetime-local input (local time, minutes). */
function toLocalInput(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}
