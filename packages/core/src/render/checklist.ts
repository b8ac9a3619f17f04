// Seed 000's checklist: "### Current Tasks", then `- [x] 1. text` per task with its integer alias; steps are
// indented under their task. Finished tasks stay for continuity until the budget or the done policy prunes them.
import type { TaskSnapshot } from '../schema.js';
import { type FormatRenderer, linesBlock } from './page.js';
import {
  type Cut,
  checkbox,
  collapsedNote,
  indent,
  markedTitle,
  type PlanView,
  statusWords,
} from './view.js';

export const checklistFormat: FormatRenderer = {
  tops: (view) => view.children(null),
  head: () =>
    '### Current Tasks\n\nYour active task list - short-term working memory for tracking plan steps.\n\n',
  between: '\n',
  gap: '\n\n',
  block: linesBlock(line),
};

function line(view: PlanView, cut: Cut, top: TaskSnapshot, task: TaskSnapshot, depth: number): string {
  const collapsed = depth === 0 ? collapsedNote(view, cut, top.id) : '';
  return `${indent(depth)}- ${checkbox(task.status)} ${task.num}. ${markedTitle(task)}${statusWords(task.status)}${collapsed}`;
}
