// LangChain's own agent (createAgent) over Cairn's tools and middleware, driven by LangChain's fake tool-calling
// chat model: see test/agents/script.ts for the session and its checks.
import { AIMessage, type BaseMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { createAgent } from 'langchain';
import { describe, expect, it } from 'vitest';
import { cairnLangChain } from '../src/agents/langchain.js';
import { messageText, seenCall } from './agents/langchain-messages.js';
import { AGENT, FINAL_TEXT, type SeenCall, scriptedSession } from './agents/script.js';

describe('@cairn/core/langchain', () => {
  it('runs the scripted session in createAgent: tools, error ToolMessages, the plan once and deltas after', async () => {
    const session = scriptedSession();
    const seen: SeenCall[] = [];
    const respond = (messages: BaseMessage[]) => {
      seen.push(seenCall(messages));
      const results = messages.filter((m) => ToolMessage.isInstance(m));
      const last = results.at(-1);
      const move = session.next(seen.length - 1, last ? messageText(last) : '');
      return typeof move === 'string'
        ? new AIMessage(move)
        : new AIMessage({
            content: '',
            tool_calls: [{ name: move.name, args: move.args, id: `c${seen.length}` }],
          });
    };
    let model = fakeModel();
    for (let i = 0; i < 5; i++) model = model.respond(respond);
    const cairn = cairnLangChain(session.plan, { actor: AGENT });
    const agent = createAgent({ model, tools: cairn.tools, middleware: [cairn.middleware] });
    const out = await agent.invoke(
      { messages: [new HumanMessage('Plan the blog post and start on it.')] },
      { recursionLimit: 20 },
    );
    expect(messageText(out.messages.at(-1)!)).toBe(FINAL_TEXT);
    session.check(seen);
    // The refused call came back as LangChain's tool error: a ToolMessage with status "error".
    const refused = out.messages.filter((m) => ToolMessage.isInstance(m) && m.status === 'error');
    expect(refused).toHaveLength(1);
    expect(messageText(refused[0]!)).toContain('invalid_argument');
    cairn.session.destroy();
  });
});
