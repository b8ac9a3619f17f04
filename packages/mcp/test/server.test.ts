// The MCP server in process, driven by the MCP SDK's own Client over its in-memory transport: what it says of
// itself follows the offered families, tool text stays as the tool wrote it, and the plan's conversation (and a
// wake-up notice in it) reaches the agent through its tools.
import { createChat, createPlan, type FamilyName } from '@cairn/core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { createCairnMcpServer } from '../src/server.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function connect(families: FamilyName[], planId = 'p1') {
  const plan = createPlan({ doc: new Y.Doc(), actor: 'agent:claude' });
  const mcp = createCairnMcpServer({ plan, planId, families });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await mcp.server.connect(serverSide);
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(clientSide);
  cleanups.push(
    () => mcp.close(),
    () => client.close(),
  );
  return { plan, client };
}

type Content = Array<{ type: string; text: string }>;
async function texts(client: Client, name: string, args: Record<string, unknown> = {}): Promise<string[]> {
  const result = await client.callTool({ name, arguments: args });
  return (result.content as Content).map((c) => c.text);
}

describe('the MCP server', () => {
  it('describes only the tools of the families it offers', async () => {
    for (const family of ['task_graph', 'ongoing_task'] as const) {
      const { client } = await connect([family]);
      const said = client.getInstructions() ?? '';
      expect(said).not.toMatch(/claim_next|update_tasks|\bclaim\b/);
      const offered = (await client.listTools()).tools.map((t) => t.name);
      for (const name of offered) expect(said).toContain(name);
    }
    const { client } = await connect(['cairn']);
    expect(client.getInstructions()).toMatch(/claim_next/);
  });

  it('returns a tool’s plain text as it is, not JSON-quoted', async () => {
    const { client } = await connect(['task_graph']);
    await client.callTool({ name: 'create_task', arguments: { title: 'Refactor' } });
    expect(await texts(client, 'complete_task', { task_id: 1 })).toEqual(['Task 1 completed.']);
  });

  it('reads and adds to the conversation, and a wake-up notice rides along with the next tool result', async () => {
    const { plan, client } = await connect(['ongoing_task']);
    const first = JSON.parse((await texts(client, 'read_chat'))[0]!);
    expect(first.messages).toEqual([]);
    await texts(client, 'add_chat_message', { role: 'user', text: 'Book a table for Friday' });
    await texts(client, 'add_chat_message', { role: 'assistant', text: 'I will ask Luigi.' });

    // The server's wake sweeper, on another replica: the task goes back to in progress with a system notice.
    const sweeper = new Y.Doc();
    Y.applyUpdate(sweeper, Y.encodeStateAsUpdate(plan.doc));
    createChat(sweeper, { actor: 'wake' }).append({
      role: 'system',
      text: 'Task wake-up: "Book a table" is due. Next step: Call Luigi',
    });
    Y.applyUpdate(plan.doc, Y.encodeStateAsUpdate(sweeper, Y.encodeStateVector(plan.doc)));

    const next = await texts(client, 'get_ongoing_task');
    expect(next).toHaveLength(2);
    expect(next[1]).toBe(
      'Since your last call:\n- Task wake-up: "Book a table" is due. Next step: Call Luigi',
    );
    expect(await texts(client, 'get_ongoing_task')).toHaveLength(1); // told once

    const since = JSON.parse((await texts(client, 'read_chat', { since: first.cursor }))[0]!);
    expect(since.messages.map((m: { role: string; actor: string }) => `${m.role} ${m.actor}`)).toEqual([
      'user agent:claude',
      'assistant agent:claude',
      'system wake',
    ]);
    const bad = await client.callTool({ name: 'read_chat', arguments: { since: '%%%' } });
    expect(bad.isError).toBe(true);
    expect((bad.content as Content)[0]!.text).toMatch(/is not a cursor/);
    // The chat tools go through the toolkit's dispatcher: a null is an absent field, a bad value names the valid.
    const all = JSON.parse((await texts(client, 'read_chat', { since: null }))[0]!);
    expect(all.messages).toHaveLength(first.messages.length + 3);
    const wrong = await client.callTool({
      name: 'add_chat_message',
      arguments: { role: 'robot', text: 'hi' },
    });
    expect(wrong.isError).toBe(true);
    expect((wrong.content as Content)[0]!.text).toMatch(/role.*"user".*"assistant"|role.*user.*assistant/);
  });

  it("resolves seed 002's context template on the live plan, with what others did since a cursor", async () => {
    const { plan, client } = await connect(['task_manage']);
    plan.add({ title: 'Publish the relay list' });
    const template = [
      { section: 'agent_profile', role: 'system', tool: 'nostr_agent_profile', skip_if_empty: true },
      { section: 'changes', role: 'system', tool: 'plan_changes', skip_if_empty: true },
      { section: 'tasks', role: 'system', tool: 'task_list', skip_if_empty: true },
    ];
    const first = JSON.parse((await texts(client, 'resolve_context', { template }))[0]!);
    expect(first.messages).toEqual([
      {
        role: 'system',
        content: expect.stringMatching(/### Current Tasks[\s\S]*- \[ \] 1\. Publish the relay list$/),
      },
    ]);
    expect(first.warnings).toEqual([expect.stringMatching(/"agent_profile" left out/)]);

    const other = new Y.Doc();
    Y.applyUpdate(other, Y.encodeStateAsUpdate(plan.doc));
    const b = createPlan({ doc: other, actor: 'agent:b' });
    b.update(b.byNum(1)!.id, { status: 'done' });
    Y.applyUpdate(plan.doc, Y.encodeStateAsUpdate(other, Y.encodeStateVector(plan.doc)));
    const next = JSON.parse((await texts(client, 'resolve_context', { template, since: first.cursor }))[0]!);
    expect(next.messages[0].content).toBe(
      'Changes since your last turn:\n- task 1 "Publish the relay list" done by agent:b',
    );
  });

  it('tells with each tool result what others did since the previous call, and reads changes since a cursor', async () => {
    const { plan, client } = await connect(['task_graph']);
    await texts(client, 'create_task', { title: 'Write the tests' });
    const mine = await texts(client, 'create_task', { title: 'Ship' });
    expect(mine).toHaveLength(1); // its own changes are not news
    const start = JSON.parse((await texts(client, 'plan_changes'))[0]!);
    expect(start.changes).toBe('');

    const other = new Y.Doc();
    Y.applyUpdate(other, Y.encodeStateAsUpdate(plan.doc));
    const b = createPlan({ doc: other, actor: 'agent:b' });
    b.update(b.byNum(1)!.id, { status: 'done' });
    Y.applyUpdate(plan.doc, Y.encodeStateAsUpdate(other, Y.encodeStateVector(plan.doc)));

    const next = await texts(client, 'list_ready_tasks');
    expect(next[1]).toBe('Since your last call:\n- task 1 "Write the tests" done by agent:b');
    expect(await texts(client, 'list_ready_tasks')).toHaveLength(1);
    const changes = JSON.parse((await texts(client, 'plan_changes', { since: start.cursor }))[0]!);
    expect(changes.changes).toBe('Changes since your last turn:\n- task 1 "Write the tests" done by agent:b');
  });

  it('issue 30: names tasks as the family does, tells a plan_changes line once, and reads its plan by its plain URI', async () => {
    const { plan, client } = await connect(['cairn'], 'acme:conv:14');
    // Enough of a plan that one change is shorter told than the plan itself (else plan_changes gives the plan).
    const [added] = await texts(client, 'add_tasks', {
      tasks: [
        { title: 'Write the tests' },
        { title: 'Review the release notes' },
        { title: 'Tag the release' },
      ],
    });
    const id = JSON.parse(added!).added[0].id as string;
    const start = JSON.parse((await texts(client, 'plan_changes'))[0]!);

    const other = new Y.Doc();
    Y.applyUpdate(other, Y.encodeStateAsUpdate(plan.doc));
    createPlan({ doc: other, actor: 'agent:b' }).update(id, { status: 'done' });
    Y.applyUpdate(plan.doc, Y.encodeStateAsUpdate(other, Y.encodeStateVector(plan.doc)));

    // plan_changes tells the change; "Since your last call" does not repeat it, and both name the string id.
    const told = await texts(client, 'plan_changes', { since: start.cursor });
    expect(told).toHaveLength(1);
    expect(JSON.parse(told[0]!).changes).toBe(
      `Changes since your last turn:\n- task ${id} "Write the tests" done by agent:b`,
    );
    createPlan({ doc: other, actor: 'agent:b' }).add({ title: 'Deploy' });
    Y.applyUpdate(plan.doc, Y.encodeStateAsUpdate(other, Y.encodeStateVector(plan.doc)));
    const news = await texts(client, 'list_tasks');
    expect(news[1]).toMatch(/^Since your last call:\n- task [a-z0-9]{7} "Deploy" added by agent:b$/);

    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(['cairn://plan/acme:conv:14']);
    for (const uri of ['cairn://plan/acme:conv:14', 'cairn://plan/acme%3Aconv%3A14']) {
      const read = await client.readResource({ uri });
      expect((read.contents[0] as { text: string }).text).toContain('Write the tests');
    }
  });

  it('issue 30: plan_changes since a cursor so old that its changes are longer than the plan gives the plan, marked', async () => {
    const { plan, client } = await connect(['cairn']);
    const [added] = await texts(client, 'add_tasks', {
      tasks: Array.from({ length: 20 }, (_, i) => ({
        title: `Call supplier number ${i + 1} about the order`,
      })),
    });
    const ids = (JSON.parse(added!).added as Array<{ id: string }>).map((t) => t.id);
    const start = JSON.parse((await texts(client, 'plan_changes'))[0]!);

    const other = new Y.Doc();
    Y.applyUpdate(other, Y.encodeStateAsUpdate(plan.doc));
    const b = createPlan({ doc: other, actor: 'agent:b' });
    const sync = () => Y.applyUpdate(plan.doc, Y.encodeStateAsUpdate(other, Y.encodeStateVector(plan.doc)));
    b.update(ids[0]!, { status: 'done' });
    sync();
    const small = JSON.parse((await texts(client, 'plan_changes', { since: start.cursor }))[0]!);
    expect(small).toMatchObject({
      kind: 'delta',
      changes: expect.stringMatching(/^Changes since your last turn:/),
    });

    // Telling each of 19 removals costs more than the one task left: the plan itself, as the resource reads it.
    for (const id of ids.slice(1)) b.remove(id);
    sync();
    const old = JSON.parse((await texts(client, 'plan_changes', { since: start.cursor }))[0]!);
    const resource = await client.readResource({ uri: 'cairn://plan/p1' });
    const whole = (resource.contents[0] as { text: string }).text;
    expect(old.kind).toBe('full_old_cursor');
    expect(old.changes).toBe(
      '(So much changed since the cursor given that the whole plan is shorter, so this is the whole plan rather ' +
        `than what changed.)\n\n${whole}`,
    );
    expect(whole).toContain('Call supplier number 1 about the order');
    // A cursor of another plan: the whole plan too, said so.
    const stranger = createPlan({ doc: new Y.Doc(), actor: 'agent:c' });
    stranger.add({ title: 'Elsewhere' });
    const { cursorOf } = await import('@cairn/core/protocol');
    const foreign = JSON.parse((await texts(client, 'plan_changes', { since: cursorOf(stranger.doc) }))[0]!);
    expect(foreign.kind).toBe('full_unknown_cursor');
  });
});
