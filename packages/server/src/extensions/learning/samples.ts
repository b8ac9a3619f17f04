// What a distillation learns from: the goal, since when, and which tasks' calls count, for one task or for a whole
// conversation.
import { CairnError, createChat, type Plan } from '@cairn/core';

/** A task: its title is the goal, the calls on it and its steps since it was created the trace. */
export function taskSample(plan: Plan, planId: string, taskId: string) {
  const task = plan.require(taskId);
  return {
    planId,
    taskId: task.id,
    goal: task.title,
    since: task.createdAt,
    ids: new Set([task.id, ...plan.descendants(task.id)]),
  };
}

/** A conversation without a task: its first user message is the goal, every call since then the trace. */
export function conversationSample(plan: Plan, planId: string) {
  const chat = createChat(plan.doc, { actor: 'learning' });
  try {
    const first = chat.list().find((m) => m.role === 'user' && m.text.trim() !== '');
    const task = plan.children(null).sort((a, b) => a.createdAt - b.createdAt)[0];
    const goal = first?.text ?? task?.title;
    if (!goal) {
      throw new CairnError(
        'invalid_argument',
        `Nothing to learn: plan "${planId}" has neither a user message nor a task to stand in as the goal.`,
        { planId },
      );
    }
    return { planId, taskId: null, goal, since: first?.at ?? 0, ids: null };
  } finally {
    chat.destroy();
  }
}
