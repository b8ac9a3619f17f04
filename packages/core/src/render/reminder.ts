// Seed 003's todo reminder, as the amplifier hook prints it before each model call: `✓ content` when completed,
// `→ activeForm` while in progress, `☐ content` when pending; steps indented under their task.
import { isOpenStatus, type TaskSnapshot } from '../schema.js';
import { type FormatRenderer, linesBlock } from './page.js';
import {
  collapsedNote,
  indent,
  inline,
  type Omissions,
  type PlanView,
  statusWords,
  visibleSteps,
} from './view.js';

export const reminderFormat: FormatRenderer = {
  tops: (view) => view.children(null),
  head: () => '',
  between: '\n',
  gap: '\n',
  block: linesBlock(line),
};

function line(
  view: PlanView,
  omit: Omissions,
  top: TaskSnapshot,
  task: TaskSnapshot,
  depth: number,
  out: string[],
): void {
  const collapsed = depth === 0 ? collapsedNote(view, omit, top.id) : '';
  let text: string;
  if (!isOpenStatus(task.status)) text = `✓ ${inline(task.title)}`;
  else if (task.status === 'pending') text = `☐ ${inline(task.title)}`;
  else text = `→ ${inline(task.activeForm ?? task.title)}`;
  // "done" needs no word; failed, cancelled and waiting do, since ✓ and → alone would mislead.
  out.push(`${indent(depth)}${text}${statusWords(task.status)}${collapsed}`);
  for (const step of visibleSteps(view, omit, top.id, task.id)) line(view, omit, top, step, depth + 1, out);
}
