// The one task-change observer per plan: each subscriber hears only of the tasks whose fields it asked for (or,
// when it asks, tasks added, replaced whole or removed), and a change nobody asked for reaches nobody.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { TaskChanges } from '../src/hub/task-changes.js';

function task(fields: Record<string, unknown>): Y.Map<unknown> {
  const map = new Y.Map<unknown>();
  for (const [key, value] of Object.entries(fields)) map.set(key, value);
  return map;
}

describe('task changes', () => {
  it('tells each subscriber only what it asked for', () => {
    const doc = new Y.Doc();
    const tasks = doc.getMap<Y.Map<unknown>>('tasks');
    const feed = new TaskChanges();
    const heard: { status: string[][]; whole: string[][] } = { status: [], whole: [] };
    feed.subscribe({ fields: ['status'], onChange: (_plan, _doc, ids) => heard.status.push([...ids]) });
    feed.subscribe({
      fields: ['wakeAt'],
      addedOrRemoved: true,
      onChange: (_plan, _doc, ids) => heard.whole.push([...ids]),
    });
    feed.watch('acme:1', doc);

    tasks.set('a', task({ status: 'pending', title: new Y.Text('Book') }));
    tasks.set('b', task({ status: 'pending' }));
    expect(heard).toEqual({ status: [], whole: [['a'], ['b']] });

    tasks.get('a')!.set('status', 'done');
    (tasks.get('a')!.get('title') as Y.Text).insert(4, ' a table'); // nobody reads titles
    tasks.get('b')!.set('note', 'later');
    expect(heard.status).toEqual([['a']]);
    expect(heard.whole).toEqual([['a'], ['b']]);

    doc.transact(() => {
      tasks.get('b')!.set('wakeAt', '2026-12-03T10:00:00Z');
      tasks.get('b')!.set('status', 'waiting_user');
      tasks.set('a', task({ status: 'pending' })); // replaced whole
    });
    expect(heard.status).toEqual([['a'], ['b']]);
    expect(heard.whole).toHaveLength(3);
    expect(new Set(heard.whole[2])).toEqual(new Set(['a', 'b'])); // b's wakeAt, a replaced whole

    tasks.delete('b');
    expect(heard.whole.at(-1)).toEqual(['b']);
    expect(heard.status).toHaveLength(2);

    doc.getMap('chat').set('x', 1); // not a task: nobody hears of it
    doc.transact(() => {
      tasks.set('c', task({ status: 'pending' }));
      tasks.delete('c'); // added and removed at once: never there for anyone
    });
    expect(heard.whole).toHaveLength(4);
    expect(heard.status).toHaveLength(2);
  });

  it('names the field a change inside a task field is in (text typed into a title)', () => {
    const doc = new Y.Doc();
    const tasks = doc.getMap<Y.Map<unknown>>('tasks');
    const feed = new TaskChanges();
    const titles: string[][] = [];
    feed.subscribe({ fields: ['title'], onChange: (_plan, _doc, ids) => titles.push([...ids]) });
    feed.watch('acme:2', doc);
    tasks.set('a', task({ status: 'pending', title: new Y.Text('Book') }));
    expect(titles).toEqual([]); // added: a whole task, which this subscriber did not ask for
    (tasks.get('a')!.get('title') as Y.Text).insert(4, ' a table');
    expect(titles).toEqual([['a']]);
  });
});
