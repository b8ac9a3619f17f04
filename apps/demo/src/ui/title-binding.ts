// Binds a text <input> to a task's title Y.Text while it has focus: each keystroke becomes the smallest Yjs edit
// at the caret, and a remote edit updates the value with the caret moved through the change, so two people
// typing in one title keep both their edits and their caret positions.
import { type Plan, setText } from '@cairn/core';
import * as Y from 'yjs';

export interface TextEdit {
  index: number;
  remove: number;
  insert: string;
}

/**
 * The edit that turns `prev` into `next` when it is one run typed or deleted at the caret (the caret after the
 * edit), or null for anything else, which core's `setText` writes as the smallest edit. Placing it at the caret
 * matters when it merges with someone else's edit: typing "a" into "aa" at 1 inserts at 1, not at 2.
 */
export function caretEdit(prev: string, next: string, caret: number): TextEdit | null {
  const grow = next.length - prev.length;
  if (grow > 0) {
    const at = caret - grow;
    if (at >= 0 && prev.slice(0, at) === next.slice(0, at) && prev.slice(at) === next.slice(caret)) {
      return { index: at, remove: 0, insert: next.slice(at, caret) };
    }
  } else if (grow < 0) {
    const removed = -grow;
    if (prev.slice(0, caret) === next.slice(0, caret) && prev.slice(caret + removed) === next.slice(caret)) {
      return { index: caret, remove: removed, insert: '' };
    }
  }
  return null;
}

type Delta = Array<{ insert?: unknown; retain?: number; delete?: number }>;

/** Where a caret at `pos` (in the text before a change) ends up after it. Inserts at the caret stay after it. */
export function transformCaret(pos: number, delta: Delta): number {
  let old = 0;
  let shift = 0;
  for (const op of delta) {
    if (op.retain !== undefined) old += op.retain;
    else if (op.insert !== undefined) {
      const length = typeof op.insert === 'string' ? op.insert.length : 1;
      if (old < pos) shift += length;
    } else if (op.delete !== undefined) {
      if (pos > old) shift -= Math.min(op.delete, pos - old);
      old += op.delete;
    }
  }
  return pos + shift;
}

export class TitleBinding {
  private readonly ytext: Y.Text;
  private writing = false;
  /** The title when editing began, put back if the person leaves the title empty. */
  private readonly original: string;

  constructor(
    private readonly input: HTMLInputElement,
    private readonly plan: Plan,
    private readonly taskId: string,
    ytext: Y.Text,
  ) {
    this.ytext = ytext;
    this.original = ytext.toString();
    if (input.value !== this.original) input.value = this.original;
    ytext.observe(this.onRemote);
    input.addEventListener('input', this.onInput);
  }

  /** The task's title Y.Text, if it has one (a foreign writer may have stored a plain string). */
  static textOf(plan: Plan, taskId: string): Y.Text | null {
    const task = plan.doc.getMap('tasks').get(taskId);
    const title = task instanceof Y.Map ? task.get('title') : null;
    return title instanceof Y.Text ? title : null;
  }

  /** Ends editing: surrounding spaces trimmed, an empty title restored. */
  finish(): void {
    const value = this.ytext.toString();
    const trimmed = value.trim();
    const wanted = trimmed === '' ? this.original : trimmed;
    if (wanted !== value) this.write(wanted, null);
    this.input.value = wanted;
    this.destroy();
  }

  destroy(): void {
    this.ytext.unobserve(this.onRemote);
    this.input.removeEventListener('input', this.onInput);
  }

  private readonly onInput = (): void => {
    const next = this.input.value;
    const prev = this.ytext.toString();
    if (next !== prev) this.write(next, caretEdit(prev, next, this.input.selectionEnd ?? next.length));
  };

  /** Writes `next` into the title: as `edit` when given (typed at the caret), else as the smallest edit. */
  private write(next: string, edit: TextEdit | null): void {
    const task = this.plan.doc.getMap('tasks').get(this.taskId);
    if (!(task instanceof Y.Map)) return;
    this.writing = true;
    try {
      // The transaction's origin is the person's actor, so the Plan's undo takes it back and history names them.
      this.plan.doc.transact(() => {
        if (!edit) setText(this.ytext, next);
        else {
          if (edit.remove > 0) this.ytext.delete(edit.index, edit.remove);
          if (edit.insert) this.ytext.insert(edit.index, edit.insert);
        }
        task.set('updatedBy', this.plan.actor);
        task.set('updatedAt', Date.now());
      }, this.plan.actor);
    } finally {
      this.writing = false;
    }
  }

  private readonly onRemote = (event: Y.YTextEvent): void => {
    if (this.writing) return;
    const input = this.input;
    const delta = event.delta as Delta;
    const start = transformCaret(input.selectionStart ?? 0, delta);
    const end = transformCaret(input.selectionEnd ?? 0, delta);
    input.value = this.ytext.toString();
    if (document.activeElement === input) input.setSelectionRange(start, end);
  };
}
