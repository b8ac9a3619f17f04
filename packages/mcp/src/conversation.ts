// The plan's conversation for an MCP client: `read_chat` (messages since a cursor) and `add_chat_message` (a turn
// of the agent's, or the user's words it relays), beside any other tools the server adds.
import {
  CairnError,
  type ChatEntry,
  createChat,
  cursorOf,
  defineTool,
  type McpToolDefinition,
  type Plan,
  readCursor,
  type ToolSpec,
  toCairnError,
  toDefinition,
} from '@cairn/core';
import * as z from 'zod';

export interface Conversation {
  definitions(): McpToolDefinition[];
  /** Whether `name` is one of the conversation's tools. */
  has(name: string): boolean;
  /** Runs a conversation tool: its result, or `{ error }`. */
  call(name: string, args: unknown): Promise<unknown>;
  destroy(): void;
}

/** `extra`: more tools served beside the chat's (resolve_context). */
export function createConversation(plan: Plan, extra: ReadonlyArray<ToolSpec<unknown>> = []): Conversation {
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
  const tools = new Map<string, ToolSpec<unknown>>([
    [readChat.name, readChat as ToolSpec<unknown>],
    [addMessage.name, addMessage as ToolSpec<unknown>],
    ...extra.map((tool): [string, ToolSpec<unknown>] => [tool.name, tool]),
  ]);

  return {
    definitions: () => [...tools.values()].map((tool) => toDefinition(tool, 'mcp')),
    has: (name) => tools.has(name),
    async call(name, args) {
      const tool = tools.get(name)!;
      const parsed = tool.input.safeParse(args ?? {});
      try {
        if (!parsed.success) {
          const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(arguments)'}: ${i.message}`);
          throw new CairnError('invalid_argument', `Invalid arguments: ${issues.join('; ')}.`, {
            tool: name,
          });
        }
        return await tool.run(parsed.data, { plan, actor: plan.actor, now: Date.now });
      } catch (error) {
        return { error: toCairnError(error).toJSON() };
      }
    },
    destroy: () => chat.destroy(),
  };
}
