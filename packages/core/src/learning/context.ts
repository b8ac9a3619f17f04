// The `learned_procedures` context section: the scope's skills whose trigger phrases fit the current task's goal
// or the latest user message, and a note in the plan's trace that they were offered on that task (so its outcome
// counts toward their success rates).
import type * as Y from 'yjs';
import { createChat } from '../chat.js';
import type { Plan } from '../plan.js';
import type { Actor } from '../schema.js';
import { openConversationTasks } from '../task-numbers.js';
import { matchSkills, renderLearnedProcedures } from './match.js';
import { currentVersion, type Skill } from './skill.js';
import { recordOffer } from './traces.js';

export interface LearnedContext {
  /** The scope's skills (retired ones are never offered). */
  skills: readonly Skill[];
  /** The latest user message; default: the last user message of the plan's chat. */
  message?: string | null;
  /** The plan's trace document: the offer is noted there on the newest open task. Without it nothing is noted. */
  traces?: Y.Doc | null;
  /** At most this many skills. Default 3. */
  limit?: number;
}

/** The section's text (empty when nothing fits), noting the offer when `traces` is given. */
export function learnedProcedures(plan: Plan, learned: LearnedContext, actor: Actor, now: number): string {
  const open = openConversationTasks(plan);
  const message = learned.message !== undefined ? learned.message : latestUserMessage(plan);
  const texts = [...open.map((t) => t.title), ...(message ? [message] : [])];
  const skills = matchSkills(learned.skills, texts, learned.limit ?? 3);
  const task = open[0];
  if (learned.traces && task && skills.length > 0) {
    recordOffer(
      learned.traces,
      task.id,
      skills.map((s) => ({ id: s.id, version: currentVersion(s).version })),
      actor,
      now,
    );
  }
  return renderLearnedProcedures(skills);
}

function latestUserMessage(plan: Plan): string | null {
  const chat = createChat(plan.doc, { actor: plan.actor });
  try {
    return chat.list().findLast((m) => m.role === 'user')?.text ?? null;
  } finally {
    chat.destroy();
  }
}
