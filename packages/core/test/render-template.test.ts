// The context template (seeds 000 and 002): sections with {{variables}} resolved into chat messages, empty
// sections skipped, the agent's identity and collaborators always at hand.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { CairnError, createPlan, renderPlan, resolveContext } from '../src/index.js';
import { CONTEXT_ALIASES, type ContextSection } from '../src/protocol-entry.js';
import { fixedPlan, sync } from './tools-fixtures.js';

const template: ContextSection[] = [
  { section: 'identity', role: 'system', content: '{{agent_identity}}\nWorking with: {{ collaborators }}' },
  { section: 'agent_tasks', role: 'system', skip_if_empty: true, content: '{{tasks_content}}\n' },
  { section: 'ready', role: 'system', skip_if_empty: true, content: 'Ready now:\n{{ready_tasks}}' },
  { section: 'changes', role: 'system', skip_if_empty: true, tool: 'plan_changes' },
  { section: 'reminder', role: 'user', skip_if_empty: true, tool: 'todo_reminder' },
];

describe('resolveContext', () => {
  it('skips every plan section while the plan is empty (zero tokens)', async () => {
    const plan = fixedPlan('agent:scout');
    const messages = await resolveContext(
      template.filter((s) => s.section !== 'ready'),
      { plan },
    );
    expect(messages).toEqual([
      {
        role: 'system',
        content: 'You are agent:scout. Your changes to the plan are recorded as agent:scout.\nWorking with:',
      },
    ]);
  });

  it('resolves the seed sections, identity, collaborators and what changed', async () => {
    const plan = fixedPlan('agent:scout');
    const since = Y.encodeStateVector(plan.doc);
    const ann = plan.withActor('user:ann');
    const [t] = ann.addMany([{ title: 'Draft the post' }, { title: 'Publish', status: 'done' }]);
    const messages = await resolveContext(template, {
      plan,
      identity: { actor: 'agent:scout', name: 'Scout', about: 'You keep the release plan moving.' },
      presence: [{ actor: 'user:ann', taskId: t!.id }],
      since,
    });
    expect(messages.map((m) => m.role)).toEqual(['system', 'system', 'system', 'system', 'user']);
    expect(messages[0]!.content).toBe(
      'You are Scout (agent:scout). You keep the release plan moving. Your changes to the plan are recorded as agent:scout.\n' +
        'Working with: user:ann (here now, on task 1 "Draft the post")',
    );
    expect(messages[1]!.content).toBe(
      '### Current Tasks\n\nYour active task list - short-term working memory for tracking plan steps.\n\n- [ ] 1. Draft the post\n- [x] 2. Publish',
    );
    // One naming in one context: the checklist says "1.", so the ready list and the changes do too.
    expect(messages[2]!.content).toBe('Ready now:\n- 1. Draft the post');
    expect(messages[3]!.content).toBe(
      'Changes since your last turn:\n- task 1 "Draft the post" added by user:ann\n- task 2 "Publish" added by user:ann (done)',
    );
    expect(messages[4]!.content).toBe('☐ Draft the post\n✓ Publish');
  });

  it('takes extra variables and context tools, and names the known ones for an unknown', async () => {
    const plan = fixedPlan();
    const messages = await resolveContext(
      [
        { section: 'soul', role: 'system', content: 'Role: {{role}}. Me: {{my_actor}}.' },
        { section: 'profile', role: 'system', tool: 'my_profile' },
        { section: 'blank', role: 'assistant', content: '{{nothing}}' },
      ],
      {
        plan,
        variables: { role: 'release manager', nothing: () => '' },
        tools: { my_profile: async () => 'Scout, a bot' },
      },
    );
    expect(messages).toEqual([
      { role: 'system', content: 'Role: release manager. Me: agent:a.' },
      { role: 'system', content: 'Scout, a bot' },
      { role: 'assistant', content: '' },
    ]);
    await expect(
      resolveContext([{ section: 's', role: 'system', content: '{{task_content}}' }], { plan }),
    ).rejects.toThrow(/Unknown context variable "task_content"; known: .*tasks_content/);
    await expect(
      resolveContext([{ section: 's', role: 'system', tool: 'nope' }], { plan }),
    ).rejects.toBeInstanceOf(CairnError);
    await expect(
      resolveContext([{ section: 's', role: 'robot' as never, content: 'x' }], { plan }),
    ).rejects.toThrow(/role/);
    await expect(resolveContext([{ section: 's', role: 'system' }], { plan })).rejects.toThrow(
      /exactly one of content and tool/,
    );
  });

  it("resolves seed 002's own template: task_list, and its host's tools skipped with a warning", async () => {
    const plan = fixedPlan('agent:local');
    plan.addMany([{ title: 'Publish the relay list' }, { title: 'Announce it', status: 'in_progress' }]);
    const warnings: string[] = [];
    const seed002: ContextSection[] = [
      { section: 'agent_identity', role: 'system', tool: 'agent_identity', skip_if_empty: true },
      { section: 'agent_profile', role: 'system', tool: 'nostr_agent_profile', skip_if_empty: true },
      { section: 'agent_notes', role: 'system', tool: 'nostr_agent_notes', skip_if_empty: true },
      { section: 'tasks', role: 'system', tool: 'task_list', skip_if_empty: true },
    ];
    const messages = await resolveContext(seed002, { plan, onWarning: (w) => warnings.push(w) });
    expect(messages.map((m) => m.content)).toEqual([
      'You are agent:local. Your changes to the plan are recorded as agent:local.',
      renderPlan(plan, { format: 'checklist' }),
    ]);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/"agent_profile" left out: Unknown context tool "nostr_agent_profile"/);
    // Without skip_if_empty the section is required, and an unknown tool still fails the context.
    await expect(
      resolveContext([{ section: 'p', role: 'system', tool: 'nostr_agent_profile' }], { plan }),
    ).rejects.toThrow(/Unknown context tool/);
    for (const [alias, name] of Object.entries(CONTEXT_ALIASES)) {
      const [viaAlias] = await resolveContext([{ section: 'a', role: 'system', tool: alias }], { plan });
      const [viaName] = await resolveContext([{ section: 'a', role: 'system', tool: name }], { plan });
      expect(viaAlias, alias).toEqual(viaName);
    }
  });

  it('tells plan_changes that another agent marked done a task the reader added', async () => {
    const plan = fixedPlan('agent:local');
    const since = Y.encodeStateVector(plan.doc);
    const [task] = plan.addMany([{ title: 'Write the release notes' }]);
    const other = createPlan({ actor: 'agent:b', doc: new Y.Doc() });
    sync(plan.doc, other.doc);
    other.update(task!.id, { status: 'done' });
    sync(plan.doc, other.doc);
    const [changes] = await resolveContext([{ section: 'c', role: 'system', tool: 'plan_changes' }], {
      plan,
      since,
    });
    expect(changes!.content).toBe(
      'Changes since your last turn:\n- task 1 "Write the release notes" done by agent:b',
    );
  });

  it('names tasks by id throughout when the template shows the native plan', async () => {
    const plan = fixedPlan('agent:local');
    const [task] = plan.addMany([{ title: 'Ship it' }]);
    const [, ready] = await resolveContext(
      [
        { section: 'plan', role: 'system', content: '{{plan}}' },
        { section: 'ready', role: 'system', content: '{{ready_tasks}}' },
      ],
      { plan },
    );
    expect(ready!.content).toBe(`- Ship it [${task!.id}]`);
  });
});
