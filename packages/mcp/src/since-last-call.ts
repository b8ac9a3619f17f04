// "Since your last call": what others did to the plan (and the notices they left in its chat, such as a task's
// wake-up) between this agent's tool calls, told with its next tool result so it never acts on a stale plan
// without re-reading it. Bounded in tokens; the agent's own changes are left out.
import { createChat, type Plan, renderDelta } from '@cairn/core';
import * as Y from 'yjs';

export interface SinceLastCall {
  /** What happened since the previous call of this (or since the start), as one text; '' if nothing. */
  next(): string;
  destroy(): void;
}

export function sinceLastCall(plan: Plan, maxTokens = 300): SinceLastCall {
  const chat = createChat(plan.doc, { actor: plan.actor });
  let seen = Y.encodeStateVector(plan.doc);
  return {
    next() {
      const notices = chat
        .since(seen)
        .filter((m) => m.role === 'system' && m.actor !== plan.actor)
        .map((m) => `- ${m.text}`);
      const changes = renderDelta(plan, { since: seen, exclude: plan.actor, maxTokens, header: '' }).replace(
        /^\n/,
        '',
      );
      seen = Y.encodeStateVector(plan.doc);
      const lines = [...notices, ...(changes ? [changes] : [])];
      return lines.length > 0 ? `Since your last call:\n${lines.join('\n')}` : '';
    },
    destroy: () => chat.destroy(),
  };
}
