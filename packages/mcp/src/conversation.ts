// The plan's conversation for an MCP client: `read_chat` (messages since a cursor) and `add_chat_message` (a turn
// of the agent's, or the user's words it relays), offered through the toolkit like every other tool.
import { type ChatEntry, createChat, type Plan } from '@cairn/core';
import { cursorOf, defineTool, readCursor, type ToolSpec } from '@cairn/core/protocol';
import * as z from 'zod';

export interface Conversation {
  /** `read_chat` and `add_chat_message`, for the toolkit to offer and dispatch beside its families' tools. */
  readonly tools: ReadonlyArray<ToolSpec<unknown>>;
  destroy(): void;
}

export function createConversation(plan: Plan): Conversation {
  const chat = createChat(plan.doc, { actor: plan.actor });
  const entry = (m: ChatEntry) => ({ id: m.id, role: m.role, actor: m.actor, text: m.text, at: m.at });

  const readChat = defineTool({
    name: 'read_chat',
    description:
      "Read the conversation that goes with this plan (the user's messages, replies, and system notices such as " +
      'task wake-ups), oldest first. Pass the cursor of your previous read as since to get only what is new.',
    annotations: { readOnlyHint: true },
    input: z.strictObject({
      since: z.string().max(4096).optional().describe('The cursor a previous read_chat returned.'),
    }),
    run({ since }) {
      const messages = since === undefined ? chat.list() : chat.since(readCursor(since));
      return { messages: messages.map(entry), cursor: cursorOf(plan.doc) };
    },
  });
  const addMessage = defineTool({
    name: 'add_chat_message',
    description:
      'Add a turn to the conversation: role assistant for your own reply, role user for the user message you ' +
      'relay. Tasks are judged against these turns (auto-close), so record the exchange as it happened.',
    input: z.strictObject({
      role: z.enum(['user', 'assistant']).describe('assistant (your reply) or user (the message you relay).'),
      text: z.string().min(1).max(20_000).describe('The message.'),
    }),
    run({ role, text }) {
      return { message: entry(chat.append({ role, text })), cursor: cursorOf(plan.doc) };
    },
  });
  return {
    tools: [readChat as ToolSpec<unknown>, addMessage as ToolSpec<unknown>],
    destroy: () => chat.destroy(),
  };
}
