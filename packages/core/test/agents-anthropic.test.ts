// The Anthropic SDK's tool runner over Cairn's tools and system prompt, against a local server speaking the
// Messages API (with the runner's server-held threads): see test/agents/script.ts for the session and its checks.
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { cairnAnthropic } from '../src/agents/anthropic.js';
import { fakeMessagesApi } from './agents/messages-api.js';
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

/** A Messages API that answers with the script's moves, recording what each call was shown. */
async function messagesApi(session: ScriptedSession, seen: SeenCall[], errors: boolean[]): Promise<string> {
  const api = await fakeMessagesApi((conversation) => {
    const blocks: Array<string | Block> = (conversation.messages as Message[]).flatMap(
      (m): Array<string | Block> => (typeof m.content === 'string' ? [m.content] : m.content),
    );
    seen.push({ system: conversation.system, rest: blocks.map(blockText).join('\n') });
    const results = blocks.filter((b): b is Block => typeof b !== 'string' && b.type === 'tool_result');
    errors.push(results.at(-1)?.is_error === true);
    return session.next(seen.length - 1, results.length > 0 ? blockText(results.at(-1)!) : '');
  });
  closers.push(api.close);
  return api.url;
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
