// Deltas: what others changed since a point the agent kept (state vector, Y.Snapshot or plan.toJSON()), as
// attributed lines, computed on the agent's own replica after sync.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { createChat, createContextFeed, createPlan, renderDelta } from '../src/index.js';
import { changesSince, sinceLastCallFeed } from '../src/protocol-entry.js';
import { fixedPlan, sync } from './tools-fixtures.js';

function twoReplicas() {
  const mine = fixedPlan('agent:a', 1);
  const theirs = createPlan({ actor: 'agent:b', doc: new Y.Doc() });
  const [a, b, c] = mine.addMany([
    { title: 'Write tests' },
    { title: 'Draft notes', nextStep: 'outline' },
    { title: 'Old idea' },
  ]);
  sync(mine.doc, theirs.doc);
  return { mine, theirs, ids: [a!.id, b!.id, c!.id] as const };
}

describe('changesSince and renderDelta', () => {
  it('tells what others did since a state vector, attributed', () => {
    const { mine, theirs, ids } = twoReplicas();
    const point = Y.encodeStateVector(mine.doc);
    expect(renderDelta(mine, { since: point })).toBe('');
    theirs.update(ids[0], { status: 'done' });
    theirs.withActor('user:ann').add({ title: 'Deploy' });
    theirs.withActor('user:ann').remove(ids[2]);
    theirs.update(ids[1], { title: 'Draft the notes', assignee: 'agent:b' });
    sync(mine.doc, theirs.doc);
    expect(renderDelta(mine, { since: point })).toBe(
      [
        'Changes since your last turn:',
        '- task 1 "Write tests" done by agent:b',
        '- task 2 "Draft the notes" changed by agent:b: assignee, title',
        '- task 4 "Deploy" added by user:ann',
        '- task 3 removed by user:ann',
      ].join('\n'),
    );
    expect(renderDelta(mine, { since: point, exclude: 'agent:b', ids: 'id' })).toMatch(
      /^Changes since your last turn:\n- task \w{7} "Deploy" added by user:ann\n- task \w{7} removed by user:ann$/,
    );
  });

  it('sees pure deletions with a Y.snapshot, and old values with a plan.toJSON() snapshot', () => {
    const { mine, theirs, ids } = twoReplicas();
    const snap = Y.snapshot(mine.doc);
    const sv = Y.encodeStateVector(mine.doc);
    const json = mine.toJSON();
    theirs.update(ids[1], { nextStep: null });
    sync(mine.doc, theirs.doc);
    expect(changesSince(mine, snap)).toMatchObject([
      { id: ids[1], kind: 'updated', fields: ['nextStep'], actor: 'agent:b' },
    ]);
    // A state vector has no delete set: a field cleared and nothing else written is the documented blind spot.
    expect(changesSince(mine, sv)).toEqual([]);
    const [change] = changesSince(mine, json);
    expect(change).toMatchObject({
      kind: 'updated',
      fields: ['nextStep'],
      before: { nextStep: 'outline' },
      task: { nextStep: null },
    });
    expect(renderDelta(mine, { since: json })).toBe(
      'Changes since your last turn:\n- task 2 "Draft notes" changed by agent:b: next step',
    );
  });

  it('reports a step moved and a renumbered alias', () => {
    const mine = fixedPlan('agent:one', 1);
    const theirs = createPlan({
      actor: 'agent:two',
      doc: new Y.Doc(),
      now: () => Date.parse('2026-12-02T10:00:00Z'),
    });
    const point = Y.encodeStateVector(mine.doc);
    mine.add({ title: 'from one' });
    const late = theirs.add({ title: 'from two' });
    sync(mine.doc, theirs.doc);
    sync(mine.doc, theirs.doc);
    const mark = Y.snapshot(mine.doc);
    expect(renderDelta(mine, { since: point, exclude: 'agent:one' })).toBe(
      'Changes since your last turn:\n- task 2 "from two" added by agent:two',
    );
    theirs.move(late.id, { after: null });
    sync(mine.doc, theirs.doc);
    expect(renderDelta(mine, { since: mark })).toBe(
      'Changes since your last turn:\n- task 2 "from two" changed by agent:two: position',
    );
  });

  it('ends with a count of what did not fit the budget, and refuses a bad point', () => {
    const { mine, theirs, ids } = twoReplicas();
    const point = Y.encodeStateVector(mine.doc);
    for (let i = 0; i < 20; i++) theirs.add({ title: `new task ${i}` });
    theirs.update(ids[0], { status: 'done' });
    sync(mine.doc, theirs.doc);
    const text = renderDelta(mine, { since: point, maxTokens: 60 });
    expect(text).toMatch(/- and \d+ more changes$/);
    expect(() => renderDelta(mine, { since: new Uint8Array([255, 255, 255]) })).toThrow(
      /not a valid Yjs state vector/,
    );
    expect(() => changesSince(mine, {} as never)).toThrow(/state vector/);
  });
});

describe('createContextFeed', () => {
  it('keeps the plan text byte-identical while others change it, telling the changes as deltas, until they cost too much', () => {
    const mine = fixedPlan('agent:a', 1);
    const theirs = createPlan({ actor: 'agent:b', doc: new Y.Doc() });
    const ids = mine
      .addMany(Array.from({ length: 6 }, (_, i) => ({ title: `Task ${i + 1}` })))
      .map((t) => t.id);
    sync(mine.doc, theirs.doc);
    const feed = createContextFeed(mine, { format: 'checklist', reRenderShare: 0.5 });
    const first = feed.turn();
    expect(first).toMatchObject({ delta: '', reRendered: true });
    expect(feed.turn()).toEqual({ plan: first.plan, delta: '', reRendered: false });

    theirs.update(ids[0]!, { status: 'done' });
    mine.update(ids[5]!, { title: 'Mine' }); // the reader's own change is not told back
    sync(mine.doc, theirs.doc);
    const second = feed.turn();
    expect(second.plan).toBe(first.plan);
    expect(second.delta).toBe('Changes since your last turn:\n- task 1 "Task 1" done by agent:b');

    // The deltas add up; past half the plan's cost, one fresh render is cheaper than carrying them.
    const turns = [];
    for (const id of ids.slice(1, 5)) {
      theirs.update(id, { status: 'done' });
      sync(mine.doc, theirs.doc);
      turns.push(feed.turn());
    }
    const fresh = turns.find((t) => t.reRendered);
    expect(fresh).toBeDefined();
    expect(fresh!.plan).not.toBe(first.plan);
    expect(fresh!.plan).toContain('- [x] 2. Task 2');
    expect(turns.slice(0, turns.indexOf(fresh!)).every((t) => t.plan === first.plan && t.delta !== '')).toBe(
      true,
    );
  });
});

describe('createContextFeed for a reader whose history is trimmed', () => {
  it("tells the reader's own changes too, names actors as a page does, and numbers native tasks", () => {
    const mine = fixedPlan('agent:a', 1);
    const theirs = createPlan({ actor: 'user:nd17n7', doc: new Y.Doc() });
    const [first] = mine.addMany([{ title: 'Book the venue', assignee: 'user:nd17n7' }]);
    sync(mine.doc, theirs.doc);
    const names: Record<string, string> = { 'agent:a': 'you', 'user:nd17n7': 'Ann' };
    const feed = createContextFeed(mine, {
      format: 'native',
      includeOwn: true,
      numbers: true,
      nameOf: (actor) => names[actor] ?? actor,
      presence: [{ actor: 'user:nd17n7', taskId: first!.id }],
    });
    const plan = feed.turn().plan;
    expect(plan).toContain(`Here now: Ann (on Book the venue [${first!.id}])`);
    expect(plan).toContain(`- [ ] 1. Book the venue [${first!.id}] — Ann is on it`);
    expect(plan).not.toContain('nd17n7');

    const [second] = mine.addMany([{ title: 'Send invites' }]);
    theirs.update(first!.id, { status: 'done' });
    sync(mine.doc, theirs.doc);
    const paid = theirs.add({ title: 'Pay the deposit', status: 'done' });
    sync(mine.doc, theirs.doc);
    expect(feed.turn().delta).toBe(
      [
        'Changes since your last turn:',
        `- task 1 [${first!.id}] "Book the venue" done by Ann`,
        `- task 2 [${second!.id}] "Send invites" added by you`,
        // One line per task: a task added and closed since says how it stands.
        `- task 3 [${paid.id}] "Pay the deposit" added by Ann (done)`,
      ].join('\n'),
    );
  });
});

describe('sinceLastCallFeed', () => {
  it("tells others' changes and chat notices since the previous call, never the reader's own, each once", () => {
    const mine = fixedPlan('agent:a', 1);
    const theirs = createPlan({ actor: 'agent:b', doc: new Y.Doc() });
    const [task, ship] = mine.addMany([{ title: 'Write tests' }, { title: 'Ship' }]);
    sync(mine.doc, theirs.doc);
    const feed = sinceLastCallFeed(mine);
    expect(feed.next()).toBe('');
    mine.update(ship!.id, { nextStep: 'mine' });
    theirs.update(task!.id, { status: 'done' });
    createChat(theirs.doc, { actor: 'wake' }).append({
      role: 'system',
      text: 'Task wake-up: "Ship" is due.',
    });
    sync(mine.doc, theirs.doc);
    expect(feed.next()).toBe(
      'Since your last call:\n- Task wake-up: "Ship" is due.\n- task 1 "Write tests" done by agent:b',
    );
    expect(feed.next()).toBe('');
  });
});
