// The Anthropic SDK's tool runner over Cairn's tools and system prompt, against a local server speaking the
// Messages API (with the runner's server-held threads): see test/agents/script.ts for the session and its checks.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { cairnAnthropic } from '../src/agents/anthropic.js';
import { AGENT, FINAL_TEXT, type ScriptedSession, type SeenCall, scriptedSession } from './agents/script.js';

type Block = { type: string; text?: string; content?: unknown; is_error?: boolean; [key: string]: unknown };
type Message = { role: string; content: string | Block[] };
const closers: Array<() => void> = [];
afterEach(() => {
  while (closers.length > 0) closers.pop()?.();
});

function blockText(block: string | Block): string {
  if (typeof block === 'string') return block;
  if (block.type === 'text') return block.text ?? '';
  if (block.type === 'tool_result')
    return typeof block.content === 'string' ? block.content : JSON.stringify(block.content);
  return JSON.stringify(block);
}

/** A Messages API that answers with the script's moves, holding each thread's history as the real one does. */
async function messagesApi(session: ScriptedSession, seen: SeenCall[], errors: boolean[]): Promise<string> {
  const held = new Map<string, { system: string; messages: Message[] }>();
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    if (req.method !== 'POST' || !req.url?.startsWith('/v1/messages')) return res.writeHead(404).end();
    const p = JSON.parse(body) as {
      model: string;
      system: string;
      messages: Message[];
      thread?: { type: string; previous_message_id?: string };
    };
    const previous = p.thread?.type === 'continue' ? held.get(p.thread.previous_message_id ?? '') : undefined;
    const conversation = previous
      ? { ...previous, messages: [...previous.messages, ...p.messages] }
      : { system: p.system, messages: p.messages };
    const blocks: Array<string | Block> = conversation.messages.flatMap(
      (m): Array<string | Block> => (typeof m.content === 'string' ? [m.content] : m.content),
    );
    seen.push({ system: conversation.system, rest: blocks.map(blockText).join('\n') });
    const results = blocks.filter((b): b is Block => typeof b !== 'string' && b.type === 'tool_result');
    errors.push(results.at(-1)?.is_error === true);
    const move = session.next(seen.length - 1, results.length > 0 ? blockText(results.at(-1)!) : '');
    const content =
      typeof move === 'string'
        ? [{ type: 'text', text: move }]
        : [{ type: 'tool_use', id: `toolu_${seen.length}`, name: move.name, input: move.args }];
    const id = `msg_${seen.length}`;
    held.set(id, { ...conversation, messages: [...conversation.messages, { role: 'assistant', content }] });
    res.writeHead(200, { 'content-type': 'application/json', 'request-id': `req_${seen.length}` });
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
  closers.push(() => server.close());
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('@cairn/core/anthropic', () => {
  it('runs the scripted session in the tool runner: tools, is_error results, the plan once and deltas after', async () => {
    const session = scriptedSession();
    const seen: SeenCall[] = [];
    const errors: boolean[] = [];
    const baseURL = await messagesApi(session, seen, errors);
    const client = new Anthropic({ apiKey: 'test-key', baseURL, maxRetries: 0 });
    const cairn = cairnAnthropic(session.plan, { actor: AGENT });
    const final = await client.beta.messages
      .toolRunner({
        model: 'claude-test',
        max_tokens: 1024,
        max_iterations: 10,
        system: await cairn.system(),
        messages: [{ role: 'user', content: 'Plan the blog post and start on it.' }],
        tools: cairn.tools,
      })
      .runUntilDone();
    expect(final.content[0]).toMatchObject({ type: 'text', text: FINAL_TEXT });
    session.check(seen);
    // The malformed call's result was the runner's error result.
    expect(errors).toEqual([false, false, true, false, false]);
    cairn.session.destroy();
  });
});
