// The chat that lives in a plan's document: messages, tool calls and their results, sync between replicas,
// attribution, refusals that change nothing, and reading what another writer got wrong.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { type ChatChangeEvent, createChat } from '../src/chat.js';
import { CairnError, createPlan } from '../src/index.js';

function sync(a: Y.Doc, b: Y.Doc): void {
  Y.applyUpdate(b, Y.encodeStateAsUpdate(a, Y.encodeStateVector(b)));
  Y.applyUpdate(a, Y.encodeStateAsUpdate(b, Y.encodeStateVector(a)));
}

function refused(doc: Y.Doc, fn: () => unknown, code: string): void {
  const before = Y.encodeStateAsUpdate(doc);
  expect(fn).toThrow(CairnError);
  try {
    fn();
  } catch (error) {
    expect((error as CairnError).code).toBe(code);
  }
  expect(Y.encodeStateAsUpdate(doc)).toEqual(before);
}

describe('chat', () => {
  it('appends messages with tool calls and results, in a top-level array named chat', () => {
    const doc = new Y.Doc();
    let clock = 100;
    const chat = createChat(doc, { actor: 'agent:helper', now: () => clock++ });
    const user = createChat(doc, { actor: 'user:ann' });
    user.append({ role: 'user', text: 'plan a launch' });
    const reply = chat.append({
      role: 'assistant',
      text: '',
      toolCalls: [{ id: 'c1', name: 'add_tasks', arguments: '{"tasks":[]}' }],
    });
    chat.setToolResult(reply.id, 'c1', '{"added":[]}');
    chat.appendText(reply.id, 'Done.');
    const list = chat.list();
    expect(list.map((m) => [m.role, m.actor, m.text])).toEqual([
      ['user', 'user:ann', 'plan a launch'],
      ['assistant', 'agent:helper', 'Done.'],
    ]);
    expect(list[1]!.toolCalls).toEqual([
      { id: 'c1', name: 'add_tasks', arguments: '{"tasks":[]}', result: '{"added":[]}' },
    ]);
    expect(list[1]!.at).toBe(100);
    expect(doc.getArray('chat').length).toBe(2);
    expect(Object.isFrozen(list[1])).toBe(true);
  });

  it('syncs to another replica and reports added and updated messages there', () => {
    const a = new Y.Doc();
    const b = new Y.Doc();
    const chatA = createChat(a, { actor: 'agent:x' });
    const chatB = createChat(b, { actor: 'user:bo' });
    const events: ChatChangeEvent[] = [];
    chatB.onChange((e) => events.push(e));
    const m = chatA.append({ role: 'assistant', toolCalls: [{ id: 'k', name: 'todo', arguments: '{}' }] });
    sync(a, b);
    chatA.setToolResult(m.id, 'k', '{"error":{}}', true);
    sync(a, b);
    expect(events).toEqual([
      { local: false, added: [m.id], updated: [] },
      { local: false, added: [], updated: [m.id] },
    ]);
    expect(chatB.get(m.id)!.toolCalls![0]).toMatchObject({ result: '{"error":{}}', isError: true });
  });

  it('keeps chat writes out of the plan and its undo history', () => {
    const plan = createPlan({ actor: 'user:ann' });
    const chat = createChat(plan.doc, { actor: 'user:ann' });
    chat.append({ role: 'user', text: 'hello' });
    expect(plan.canUndo()).toBe(false);
    expect(plan.list()).toEqual([]);
  });

  it('refuses bad input and writes by someone else, changing nothing', () => {
    const doc = new Y.Doc();
    const chat = createChat(doc, { actor: 'agent:x' });
    const other = createChat(doc, { actor: 'user:y' });
    const m = chat.append({
      role: 'assistant',
      text: 'hi',
      toolCalls: [{ id: 'a', name: 't', arguments: '{}' }],
    });
    refused(doc, () => chat.append({ role: 'robot' as never, text: 'x' }), 'invalid_argument');
    refused(doc, () => chat.append({ role: 'user', text: 'x'.repeat(20_001) }), 'invalid_argument');
    refused(
      doc,
      () =>
        chat.append({
          role: 'assistant',
          toolCalls: [
            { id: 'd', name: 't', arguments: '{}' },
            { id: 'd', name: 't', arguments: '{}' },
          ],
        }),
      'invalid_argument',
    );
    refused(doc, () => other.appendText(m.id, 'mine now'), 'forbidden');
    refused(doc, () => chat.setToolResult(m.id, 'nope', '{}'), 'not_found');
    refused(doc, () => chat.appendText('missing', 'x'), 'not_found');
    expect(() => createChat(doc, { actor: 'nobody' })).toThrow(/actor/);
  });

  it('reads entries another writer got wrong without crashing', () => {
    const doc = new Y.Doc();
    const array = doc.getArray<unknown>('chat');
    const bad = new Y.Map<unknown>();
    array.push(['not a map', bad]);
    bad.set('role', 'wizard');
    bad.set('text', 'plain string');
    bad.set('at', 'yesterday');
    const chat = createChat(doc, { actor: 'user:z' });
    // An unknown role reads as the least trusted one: only an admin may write a system turn.
    expect(chat.list()).toEqual([{ id: '', role: 'user', actor: 'system', text: 'plain string', at: 0 }]);
  });
});
