// Seed 000's checklist: "### Current Tasks", then `- [x] 1. text` per task with its integer alias; steps are
// indented under their task. Finished tasks stay for continuity until the budget or the done policy prunes them.
import type { TaskSnapshot } from '../schema.js';
import { type FormatRenderer, linesBlock } from './page.js';
import {
  checkbox,
  collapsedNote,
  indent,
  inlineMarked,
  type Omissions,
  type PlanView,
  statusWords,
  visibleSteps,
} from './view.js';

export const checklistFormat: FormatRenderer = {
  tops: (view) => view.children(null),
  head: () =>
    '### Current Tasks\n\nYour active task list - short-term working memory for tracking plan steps.\n\n',
  between: '\n',
  gap: '\n\n',
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
  out.push(
    `${indent(depth)}- ${checkbox(task.status)} ${task.num}. ${inlineMarked(task.title)}${statusWords(task.status)}${collapsed}`,
  );
  for (const step of visibleSteps(view, omit, top.id, task.id)) line(view, omit, top, step, depth + 1, out);
}
