// "Since your last call": what others did to the plan (and the notices they left in its chat, such as a task's
// wake-up) since a point, told with an agent's next tool result so it never acts on a stale plan without
// re-reading it. Bounded in tokens; the agent's own changes are left out. The MCP server and the HTTP tool route
// (when the caller passes a cursor) add it to tool results.
import * as Y from 'yjs';
import { createChat } from './chat.js';
import type { Plan } from './plan.js';
import { renderDelta } from './render/delta.js';
import { inline } from './render/view.js';
import type { Actor } from './schema.js';

/** Default bound of the section, in tokens of the default tokenizer. */
export const SINCE_LAST_CALL_TOKENS = 300;

/** What others did since `since` (a state vector), for `actor`: "Since your last call:\n- …", or '' if nothing. */
export function sinceLastCall(
  plan: Plan,
  since: Uint8Array,
  options: { actor?: Actor; maxTokens?: number } = {},
): string {
  const actor = options.actor ?? plan.actor;
  const chat = createChat(plan.doc, { actor: 'system' });
  try {
    const notices = chat
      .since(since)
      .filter((m) => m.role === 'system' && m.actor !== actor)
      // One notice, one line: a turn's text cannot add lines (a forged heading, a fake change) of its own.
      .map((m) => `- ${inline(m.text)}`);
    const changes = renderDelta(plan, {
      since,
      exclude: actor,
      maxTokens: options.maxTokens ?? SINCE_LAST_CALL_TOKENS,
      header: '',
    }).replace(/^\n/, '');
    const lines = [...notices, ...(changes ? [changes] : [])];
    return lines.length > 0 ? `Since your last call:\n${lines.join('\n')}` : '';
  } finally {
    chat.destroy();
  }
}

/** `sinceLastCall` that keeps its own point: each `next()` tells what happened since the previous one. */
export function sinceLastCallFeed(plan: Plan, options: { maxTokens?: number } = {}): { next(): string } {
  let seen = Y.encodeStateVector(plan.doc);
  return {
    next() {
      const text = sinceLastCall(plan, seen, options);
      seen = Y.encodeStateVector(plan.doc);
      return text;
    },
  };
}
