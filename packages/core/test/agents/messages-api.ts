// A stand-in for Anthropic's Messages API on a free local port, holding each thread's history by message id as
// the real one does (the tool runner continues a thread by `previous_message_id`): for the Anthropic adapter's
// test and the agent-loop benchmarks, each answering with its own script.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The whole conversation a request continues: its system prompt, tools and messages so far. */
export interface HeldConversation {
  system: string;
  tools?: unknown;
  messages: Array<{ role: string; content: unknown }>;
}

/** The model's turn: its final text, or one tool call. */
export type MessagesMove = string | { name: string; args: Record<string, unknown> };

/** `answer(conversation, n)` is called for the n-th request (from 1), with the thread it continues. */
export async function fakeMessagesApi(
  answer: (conversation: HeldConversation, n: number) => MessagesMove,
): Promise<{ url: string; close: () => void }> {
  const held = new Map<string, HeldConversation>();
  let n = 0;
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    if (req.method !== 'POST' || !req.url?.startsWith('/v1/messages')) return res.writeHead(404).end();
    const p = JSON.parse(body) as HeldConversation & {
      model: string;
      thread?: { type: string; previous_message_id?: string };
    };
    const previous = p.thread?.type === 'continue' ? held.get(p.thread.previous_message_id ?? '') : undefined;
    const conversation: HeldConversation = previous
      ? { ...previous, messages: [...previous.messages, ...p.messages] }
      : { system: p.system, tools: p.tools, messages: p.messages };
    n++;
    const move = answer(conversation, n);
    const content =
      typeof move === 'string'
        ? [{ type: 'text', text: move }]
        : [{ type: 'tool_use', id: `toolu_${n}`, name: move.name, input: move.args }];
    const id = `msg_${n}`;
    held.set(id, { ...conversation, messages: [...conversation.messages, { role: 'assistant', content }] });
    res.writeHead(200, { 'content-type': 'application/json', 'request-id': `req_${n}` });
    res.end(
      JSON.stringify({
        id,
        type: 'message',
        role: 'assistant',
        model: p.model,
        content,
        stop_reason: typeof move === 'string' ? 'end_turn' : 'tool_use',
        stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 1 },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => server.close(),
  };
}
