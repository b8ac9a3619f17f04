// The agent's conversation in Node, on the edges the 40-turn session does not reach: a turn cut off with its tool
// calls open, messages sent while a turn ran, a window trimmed with a step in it, and the agent's own changes.
import { type Chat, createChat, createPlan, type Plan } from '@cairn/core';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { Conversation, MAX_WINDOW } from '../src/agent/conversation.js';
import { type ChatRequest, roleProblems, toldPlan } from './agent-script.js';

const ANN = 'user:ann001';
const AGENT = 'agent:ann001';

function setup(): { plan: Plan; said: Chat; agent: Chat; talk: Conversation } {
  const doc = new Y.Doc();
  const plan = createPlan({ doc, actor: ANN });
  const names: Record<string, string> = { [ANN]: 'Ann', 'user:bo0002': 'Bo' };
  const talk = new Conversation({
    plan,
    actor: AGENT,
    owner: ANN,
    format: 'native',
    nameOf: (actor) => names[actor] ?? actor,
    presence: () => [],
    intro: () => 'You are Planner for Ann.',
  });
  return { plan, said: createChat(doc, { actor: ANN }), agent: createChat(doc, { actor: AGENT }), talk };
}

function request(talk: Conversation, chat: Chat, seen?: ReadonlySet<string>): ChatRequest {
  const messages = talk.messages(chat.list().filter((e) => !seen || seen.has(e.id)));
  if (!messages) throw new Error('nothing to answer');
  return { messages: JSON.parse(JSON.stringify(messages)) as ChatRequest['messages'] };
}

describe('the agent conversation', () => {
  it('closes a turn cut off with open tool calls, and reads the message sent meanwhile after it', () => {
    const { plan, said, agent, talk } = setup();
    const first = said.append({ role: 'user', text: 'add two tasks' });
    talk.noteBefore(first.id);
    const seen = new Set(said.list().map((e) => e.id));
    expect(request(talk, said).messages.at(-1)).toMatchObject({ role: 'user', content: 'add two tasks' });
    const step = agent.append({
      role: 'assistant',
      text: '',
      toolCalls: [{ id: 'call_1', name: 'add_tasks', arguments: '{}' }],
    });
    seen.add(step.id);
    plan.withActor(AGENT).addMany([{ title: 'One' }, { title: 'Two' }]);
    agent.setToolResult(step.id, 'call_1', '{"added":2}', false);
    // Ann writes while the turn runs; the turn times out on its next call.
    said.append({ role: 'user', text: 'and a third' });
    const second = request(talk, said, seen);
    expect(second.messages.at(-1)!.role).toBe('tool');
    const notice = agent.append({ role: 'system', text: 'The model did not answer within 2 s.' });
    talk.turnEnded(said.list(), seen, notice.id);

    const next = request(talk, said);
    expect(roleProblems(next)).toEqual([]);
    expect(next.messages.slice(-3).map((m) => m.role)).toEqual(['tool', 'assistant', 'user']);
    expect(next.messages.at(-2)!.content).toContain('did not answer within 2 s');
    expect(next.messages.at(-1)!.content).toBe('and a third');
    // The agent's own tasks are told after its tool result: the plan it reads is the real one.
    expect(next.messages.at(-3)!.content).toContain('"One" added by you');
    expect([...toldPlan(next).values()].map((t) => t.title)).toEqual(['One', 'Two']);
  });

  it('trims a long window from a person message, with each step whole and the plan rendered afresh', () => {
    const { plan, said, agent, talk } = setup();
    const requests: ChatRequest[] = [];
    for (let i = 0; i < MAX_WINDOW; i++) {
      said.append({ role: 'user', text: `add T${i}` });
      requests.push(request(talk, said));
      const step = agent.append({
        role: 'assistant',
        text: '',
        toolCalls: [{ id: `call_${i}`, name: 'add_tasks', arguments: '{}' }],
      });
      plan.withActor(AGENT).add({ title: `T${i}` });
      agent.setToolResult(step.id, `call_${i}`, '{}', false);
      requests.push(request(talk, said));
      agent.append({ role: 'assistant', text: `Added T${i}.` });
    }
    said.append({ role: 'user', text: 'what now?' });
    requests.push(request(talk, said));
    const trims = requests.filter((r, i) => i > 0 && r.messages.length < requests[i - 1]!.messages.length);
    expect(trims.length).toBeGreaterThanOrEqual(2);
    for (const [i, r] of requests.entries()) {
      expect(roleProblems(r)).toEqual([]);
      const trimmed = trims.includes(r);
      // The plan text changes exactly where the window is trimmed, and the plan told is the real one.
      if (i > 0) expect(r.messages[0]!.content === requests[i - 1]!.messages[0]!.content).toBe(!trimmed);
      expect(toldPlan(r).size).toBe(Math.floor(i / 2) + (i % 2));
    }
    // Far fewer trims than turns: the prefix holds between them.
    expect(trims.length).toBeLessThanOrEqual(MAX_WINDOW / 8);
    // Nothing new since: the conversation ends with the agent's answer, so there is no request to make.
    agent.append({ role: 'assistant', text: 'Forty tasks.' });
    expect(talk.messages(said.list())).toBeNull();
  });

  it('offers learned procedures with the message they fit, never in the system prompt', () => {
    const { said, agent, talk } = setup();
    said.append({ role: 'user', text: 'hello' });
    const first = request(talk, said);
    agent.append({ role: 'assistant', text: 'Hi.' });
    const ask = said.append({ role: 'user', text: 'book a table' });
    talk.offerLearned(ask.id, 'Learned procedures: call the restaurant, then confirm.');
    const second = request(talk, said);
    expect(second.messages[0]!.content).toBe(first.messages[0]!.content);
    expect(second.messages.at(-1)!.content).toBe(
      '<learned_procedures>\nLearned procedures: call the restaurant, then confirm.\n</learned_procedures>\n\nbook a table',
    );
    // A message already sent keeps its bytes: a later offer for it is not added.
    talk.offerLearned(said.list()[0]!.id, 'Learned procedures: something else.');
    expect(request(talk, said).messages).toEqual(second.messages);
  });
});
