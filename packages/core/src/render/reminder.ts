// Seed 003's todo reminder, as the amplifier hook prints it before each model call: `✓ content` when completed,
// `→ activeForm` while in progress, `☐ content` when pending; steps indented under their task.
import { isOpenStatus, type TaskSnapshot } from '../schema.js';
import { type FormatRenderer, linesBlock } from './page.js';
import { type Cut, collapsedNote, indent, inline, inlineTitle, type PlanView, statusWords } from './view.js';

export const reminderFormat: FormatRenderer = {
  tops: (view) => view.children(null),
  head: () => '',
  between: '\n',
  gap: '\n',
  block: linesBlock(line),
};

function line(view: PlanView, cut: Cut, top: TaskSnapshot, task: TaskSnapshot, depth: number): string {
  const collapsed = depth === 0 ? collapsedNote(view, cut, top.id) : '';
  let text: string;
  if (!isOpenStatus(task.status)) text = `✓ ${inlineTitle(task)}`;
  else if (task.status === 'pending') text = `☐ ${inlineTitle(task)}`;
  else text = `→ ${task.activeForm !== null ? inline(task.activeForm) : inlineTitle(task)}`;
  // "done" needs no word; failed, cancelled and waiting do, since ✓ and → alone would mislead.
  return `${indent(depth)}${text}${statusWords(task.status)}${collapsed}`;
}
