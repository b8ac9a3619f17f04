// Seed 001's "Open Tasks In This Conversation" block: each open task's status, age, step checklist, next step,
// note and wake time, newest first, under the task numbers the ongoing_task tools take (steps use up none). Informational: the model is told to put the user's current message first.
import type { TaskSnapshot } from '../schema.js';
import { openConversationTasks } from '../task-numbers.js';
import { eachStep, type FormatRenderer } from './page.js';
import {
  ago,
  type Cut,
  checkbox,
  collapsedNote,
  indent,
  inline,
  inlineTitle,
  markedTitle,
  type PlanView,
  statusWords,
} from './view.js';

export const openTasksFormat: FormatRenderer = {
  tops: (view) => openConversationTasks(view),
  head: () =>
    '## Open Tasks In This Conversation\n\n' +
    "Informational only: prioritise the user's current message, and continue a task only when the message relates to it.\n\n",
  between: '\n\n',
  gap: '\n\n',
  block,
};

function block(view: PlanView, cut: Cut, task: TaskSnapshot): string {
  const lines = [
    `Task ${view.taskNumber(task.id) ?? task.num}: ${inlineTitle(task)}`,
    `- Status: ${task.status}${wokeUp(view, task)}, opened ${ago(view.now - task.createdAt)}`,
  ];
  const steps: string[] = [];
  eachStep(view, cut, task.id, 1, (step, depth) => {
    steps.push(`${indent(depth)}- ${checkbox(step.status)} ${markedTitle(step)}${statusWords(step.status)}`);
  });
  const collapsed = collapsedNote(view, cut, task.id);
  if (collapsed) lines.push(`- Steps:${collapsed}`);
  else if (steps.length > 0) lines.push('- Steps:', ...steps);
  if (task.nextStep) lines.push(`- Next step: ${inline(task.nextStep)}`);
  // A note a person wrote from the dashboard (PATCH { status, note }) must reach the agent that reads this block.
  if (task.note) lines.push(`- Note: ${inline(task.note)}`);
  if (task.wakeAt) lines.push(`- Wakes at: ${inline(task.wakeAt)}`);
  return lines.join('\n');
}

/**
 * ", woke up 5 minutes ago" while the wake-up sweeper's change is the task's latest: the chat's wake-up notice
 * says the next turn picks the task up, and this block is what that turn reads.
 */
function wokeUp(view: PlanView, task: TaskSnapshot): string {
  return task.updatedBy === 'wake' && task.status === 'in_progress'
    ? `, woke up ${ago(view.now - task.updatedAt)}`
    : '';
}
