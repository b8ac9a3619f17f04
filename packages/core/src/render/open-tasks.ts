// Seed 001's "Open Tasks In This Conversation" block: each open task's status, age, step checklist, next step,
// note and wake time, newest first, under the task numbers the ongoing_task tools take (steps use up none). Informational: the model is told to put the user's current message first.
import type { TaskSnapshot } from '../schema.js';
import { openConversationTasks } from '../task-numbers.js';
import type { FormatRenderer } from './page.js';
import {
  ago,
  checkbox,
  collapsedNote,
  indent,
  inline,
  inlineMarked,
  type Omissions,
  type PlanView,
  statusWords,
  visibleSteps,
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

function block(view: PlanView, omit: Omissions, task: TaskSnapshot): string {
  const lines = [
    `Task ${view.taskNumber(task.id) ?? task.num}: ${inline(task.title)}`,
    `- Status: ${task.status}${wokeUp(view, task)}, opened ${ago(view.now - task.createdAt)}`,
  ];
  const steps: string[] = [];
  const walk = (id: string, depth: number) => {
    for (const step of visibleSteps(view, omit, task.id, id)) {
      steps.push(
        `${indent(depth)}- ${checkbox(step.status)} ${inlineMarked(step.title)}${statusWords(step.status)}`,
      );
      walk(step.id, depth + 1);
    }
  };
  walk(task.id, 1);
  const collapsed = collapsedNote(view, omit, task.id);
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
