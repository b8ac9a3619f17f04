// `cairn mcp` driven by the MCP SDK's own Client over stdio: it lists the toolkit's tools, runs them on the live
// plan (claims arbitrated by the real server), serves the rendered plan as a resource and notifies a subscriber
// when another client edits the plan. On local disk the edits land in the plan's log.
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createPlan, createToolkit, type Plan } from '@cairn/core';
import { openFilePersistence } from '@cairn/core/fs';
import { learnSkill, readCalls, traceDocId } from '@cairn/core/learning';
import { until } from '@cairn/core/testing';
import { connectPlan } from '@cairn/core/websocket';
import { type CairnServer, createCairnServer, signToken, silentLogger } from '@cairn/server';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import * as Y from 'yjs';
import { onCleanup, tempDir } from './cleanup.js';
import { SOURCE_CLI_ARGS } from './source-cli.js';

const SECRET = 'mcp-test-secret-mcp-test-secret-0123456789';

async function startServer(
  secret?: string,
  at: { dataDir?: string; port?: number } = {},
): Promise<{ server: CairnServer; url: string; port: number; dataDir: string }> {
  const dataDir = at.dataDir ?? (await tempDir('cairn-mcp-'));
  const server = createCairnServer({ dataDir, secret: secret ?? null, logger: silentLogger });
  const info = await server.listen(at.port ?? 0, '127.0.0.1');
  onCleanup(() => server.close());
  return { server, url: info.url, port: info.port, dataDir };
}

/** `cairn mcp ARGS` as an MCP client sees it: a child process speaking stdio. */
async function mcpClient(
  args: string[],
): Promise<{ client: Client; stderr: () => string; transport: StdioClientTransport }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...SOURCE_CLI_ARGS, 'mcp', ...args],
    // The outbox of a synced plan goes under XDG_STATE_HOME unless --outbox says otherwise.
    env: { PATH: process.env.PATH ?? '', XDG_STATE_HOME: await tempDir('cairn-mcp-') },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk) => {
    stderr += String(chunk);
  });
  const client = new Client({ name: 'cairn-test', version: '1.0.0' });
  await client.connect(transport);
  onCleanup(() => client.close());
  return { client, stderr: () => stderr, transport };
}

// biome-ignore lint/suspicious/noExplicitAny: tool results are JSON whose shape each assertion states
type Json = any;

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<Json> {
  const result = (await client.callTool({ name, arguments: args })) as {
    content: Array<{ type: string; text: string }>;
    isError?: boolean;
  };
  const parsed = JSON.parse(result.content[0]!.text);
  return result.isError ? { isError: true, ...parsed } : parsed;
}

/** Another participant: a person in the demo, say. */
async function person(url: string, planId: string, token?: string): Promise<Plan> {
  const doc = new Y.Doc();
  const plan = createPlan({ doc, actor: 'user:ann' });
  const connection = connectPlan(doc, {
    url,
    planId,
    WebSocketPolyfill: WebSocket,
    plan,
    presence: { id: 'user:ann', name: 'Ann', kind: 'human' },
    ...(token ? { token } : {}),
  });
  onCleanup(() => connection.destroy());
  await connection.whenSynced(10_000);
  return plan;
}

describe('cairn mcp', () => {
  it('serves the toolkit and the live plan through the server, and tells of edits by others', async () => {
    const { url, server } = await startServer(SECRET);
    const token = await signToken(SECRET, { plan: 'team:1', role: 'write', sub: 'claude' });
    // A procedure the team learned before: the MCP client can look it up.
    const skills = await server.hub.openPlan('team#skills');
    const { skill } = learnSkill(skills.doc, {
      scope: 'team',
      draft: {
        name: 'Write a migration',
        triggers: ['write migration'],
        steps: [{ tool: 'claim_next', args: {} }],
        pitfalls: [],
      },
      author: { kind: 'offline' },
      source: { planId: 'team:0', taskId: null, goal: 'Write a migration' },
      actor: 'learning',
      now: Date.now(),
    });
    await skills.flush();
    skills.release();
    const ann = await person(
      url,
      'team:1',
      await signToken(SECRET, { plan: 'team:1', role: 'write', sub: 'user:ann' }),
    );
    const first = ann.add({ title: 'Write the migration' });

    const { client } = await mcpClient(['--plan', 'team:1', '--server', url, '--token', token]);
    expect(client.getServerVersion()?.name).toBe('cairn');
    expect(client.getInstructions()).toContain('agent:claude');
    const { tools } = await client.listTools();
    // The toolkit's default tools, then what only a live plan has.
    expect(tools.map((t) => t.name)).toEqual([
      ...createToolkit(createPlan()).names,
      'get_learned_procedure',
      'read_chat',
      'add_chat_message',
      'resolve_context',
      'plan_changes',
    ]);
    // The scope's skills sync beside the plan; wait until they are there.
    await vi.waitFor(
      async () =>
        expect(await call(client, 'get_learned_procedure', { query: 'write a migration' })).toMatchObject({
          procedures: [{ skillId: skill.id }],
        }),
      { timeout: 15_000, interval: 50 },
    );
    expect(await call(client, 'get_learned_procedure', { skillId: skill.id })).toMatchObject({
      procedures: [{ skillId: skill.id, version: 1, text: expect.stringContaining('1. claim_next') }],
    });

    // It sees the plan as it is on the server, claims through the server, and its edits reach the others.
    expect(await call(client, 'list_tasks', {})).toMatchObject({ count: 1, tasks: [{ id: first.id }] });
    expect(await call(client, 'claim_next', {})).toMatchObject({
      outcome: 'won',
      holder: 'agent:claude',
      arbitrated: true,
      task: { id: first.id, status: 'in_progress' },
    });
    await until(ann, () => ann.get(first.id)?.assignee === 'agent:claude');
    expect(await ann.claim(first.id)).toMatchObject({ outcome: 'lost', holder: 'agent:claude' });
    const added = await call(client, 'add_tasks', { tasks: [{ title: 'Review it', blockedBy: [first.id] }] });
    await until(ann, () => ann.list().length === 2);
    expect(ann.get(added.added[0].id)).toMatchObject({ createdBy: 'agent:claude', blockedBy: [first.id] });
    // A refusal is a tool error with the toolkit's message, and changes nothing.
    expect(await call(client, 'claim', { id: 'nope' })).toMatchObject({
      isError: true,
      error: { code: 'not_found' },
    });

    // The rendered plan is a resource; a subscriber hears when someone else edits it.
    const { resources } = await client.listResources();
    expect(resources).toEqual([
      expect.objectContaining({ uri: 'cairn://plan/team:1', mimeType: 'text/markdown' }),
    ]);
    const read = async () =>
      ((await client.readResource({ uri: 'cairn://plan/team:1' })).contents[0] as { text: string }).text;
    expect(await read()).toContain('Write the migration');
    // The percent-encoded form names the same plan (issue 30).
    const encoded = await client.readResource({ uri: 'cairn://plan/team%3A1' });
    expect((encoded.contents[0] as { text: string }).text).toContain('Write the migration');
    const updated = new Promise<string>((done) =>
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => done(n.params.uri)),
    );
    await client.subscribeResource({ uri: 'cairn://plan/team:1' });
    ann.add({ title: 'Tell the customer' });
    expect(await updated).toBe('cairn://plan/team:1');
    const text = await read();
    expect(text).toContain('Tell the customer');
    expect(text).toContain('user:ann'); // here now, from presence
    await expect(client.readResource({ uri: 'cairn://plan/other' })).rejects.toThrow(/Unknown resource/);
  });

  it('works on a plan on local disk, and stores its edits there', async () => {
    const dir = await tempDir('cairn-mcp-');
    const { client } = await mcpClient(['--plan', 'solo', '--data', dir, '--actor', 'agent:codex']);
    const added = await call(client, 'add_tasks', { tasks: [{ title: 'Alone', steps: ['one'] }] });
    expect(await call(client, 'claim', { id: added.added[0].id })).toMatchObject({
      outcome: 'won',
      arbitrated: false,
    });
    await client.close(); // ends stdin and waits for the process to exit, which stores the plan and unlocks it
    const doc = new Y.Doc();
    const stored = openFilePersistence(dir)('solo', doc);
    await stored.whenLoaded;
    expect(createPlan({ doc }).list()).toMatchObject([
      { title: 'Alone', assignee: 'agent:codex', createdBy: 'agent:codex' },
      { title: 'one' },
    ]);
    await stored.close();
    // Each tool call is in the plan's trace, stored beside it and not in it.
    const traceDoc = new Y.Doc();
    const storedTrace = openFilePersistence(dir)(traceDocId('solo'), traceDoc);
    await storedTrace.whenLoaded;
    expect(
      readCalls(traceDoc).map((c) => [c.tool, c.actor, c.outcome, c.tasks.includes(added.added[0].id)]),
    ).toEqual([
      ['add_tasks', 'agent:codex', 'ok', true],
      ['claim', 'agent:codex', 'ok', true],
    ]);
    expect([...doc.share.keys()]).not.toContain('calls');
    await storedTrace.close();
  });

  it('keeps an edit made while the server is away, and the next run for the plan sends it (issue 32)', async () => {
    const first = await startServer();
    const outbox = await tempDir('cairn-mcp-');
    const args = ['--plan', 'team:2', '--server', first.url, '--outbox', outbox];
    // Two agents on the plan: each keeps its own copy (the second finds the first's locked).
    const a = await mcpClient([...args, '--actor', 'agent:a']);
    const b = await mcpClient([...args, '--actor', 'agent:b']);
    expect(await call(a.client, 'add_tasks', { tasks: [{ title: 'Online' }] })).toMatchObject({
      synced: true,
    });

    await first.server.close();
    await vi.waitFor(() => expect(a.stderr()).toMatch(/lost the server at .* edits are kept in/), {
      timeout: 10_000,
    });
    for (const [agent, title] of [
      [a, 'Written by a while the server is away'],
      [b, 'Written by b while the server is away'],
    ] as const) {
      expect(await call(agent.client, 'add_tasks', { tasks: [{ title }] })).toMatchObject({
        added: [{ title }],
        synced: false,
        pending: expect.stringMatching(/^Not on the server yet: .*kept on this machine/),
      });
    }
    // a exits as a client closes it (stdin ends, then SIGTERM); b dies at once.
    await a.client.close();
    expect(a.stderr()).toMatch(/waiting up to 10 s for the server/);
    expect(a.stderr()).toMatch(/left pending: edits the server has not acknowledged .*kept in /);
    process.kill(b.transport.pid!, 'SIGKILL');
    // A copy of the plan waits there, for this user's eyes only.
    const kept = await readdir(outbox);
    expect(kept).toHaveLength(1);
    expect((await stat(join(outbox, kept[0]!))).mode & 0o777).toBe(0o700);

    // The server is back (same address, same data): the edits are not there until the next run.
    const second = await startServer(undefined, { dataDir: first.dataDir, port: first.port });
    const ann = await person(second.url, 'team:2');
    expect(ann.list().map((t) => t.title)).toEqual(['Online']);
    const c = await mcpClient([...args, '--actor', 'agent:c']);
    await until(ann, () => ann.list().length === 3);
    // a and b wrote concurrently, so their order in the plan is the ranks' tie-break: compare sorted.
    expect(
      ann
        .list()
        .map((t) => [t.title, t.createdBy])
        .sort(),
    ).toEqual([
      ['Online', 'agent:a'],
      ['Written by a while the server is away', 'agent:a'],
      ['Written by b while the server is away', 'agent:b'],
    ]);
    await vi.waitFor(() => expect(c.stderr()).toMatch(/the server stored the edits an earlier run left/), {
      timeout: 10_000,
    });
    expect(c.stderr()).toMatch(/sending the server the edits an earlier run left/);
    await c.client.close();
    // Everything is on the server: nothing is left in the outbox.
    expect(await readdir(outbox)).toEqual([]);
  }, 90_000);

  it('reports a write the server refuses for the plan size limit as refused, and changes nothing', async () => {
    const maxDocBytes = 40_000;
    const dataDir = await tempDir('cairn-mcp-');
    const server = createCairnServer({
      dataDir,
      secret: null,
      logger: silentLogger,
      limits: { maxDocBytes },
    });
    const { url } = await server.listen(0, '127.0.0.1');
    onCleanup(() => server.close());
    const { client } = await mcpClient(['--plan', 'team:big', '--server', url]);

    const small = await call(client, 'add_tasks', { tasks: [{ title: 'Small' }] });
    expect(small).toMatchObject({ added: [{ title: 'Small' }], synced: true });
    const big = await call(client, 'add_tasks', {
      tasks: Array.from({ length: 4 }, (_, i) => ({ title: `Big ${i}`, note: 'n'.repeat(15_000) })),
    });
    expect(big).toMatchObject({ isError: true, error: { code: 'limit', closeCode: 4414 } });
    expect(big.error.message).toMatch(
      new RegExp(`^The server refused this change: .*${maxDocBytes} bytes.*Nothing was changed`),
    );
    // Here as on the server, the plan is what it was before the refused call.
    const listed = await call(client, 'list_tasks', { view: 'all' });
    expect(listed.tasks.map((t: Json) => t.title)).toEqual(['Small']);
    const handle = await server.hub.openPlan('team:big');
    expect(
      createPlan({ doc: handle.doc })
        .list()
        .map((t) => t.title),
    ).toEqual(['Small']);
    handle.release();
    // And the connection is back for what follows.
    const next = await call(client, 'add_tasks', { tasks: [{ title: 'Next' }] });
    expect(next).toMatchObject({ added: [{ title: 'Next' }], synced: true });
    // The trace keeps the refused call as refused, with what the model was told, not as a call that worked.
    const traces = await server.hub.openPlan(traceDocId('team:big'));
    try {
      await vi.waitFor(
        () => expect(readCalls(traces.doc).map((c) => c.outcome)).toEqual(['ok', 'limit', 'ok', 'ok']),
        {
          timeout: 10_000,
        },
      );
      expect(readCalls(traces.doc)[1]?.error).toMatch(/^The server refused this change/);
    } finally {
      traces.release();
    }
  });

  it('refuses bad arguments with the usage, exit code 2', async () => {
    const { spawnSync } = await import('node:child_process');
    const run = spawnSync(process.execPath, [...SOURCE_CLI_ARGS, 'mcp', '--server', 'ws://127.0.0.1:1'], {
      encoding: 'utf8',
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('--plan is required');
    expect(run.stderr).toContain('cairn mcp --plan ID');
    expect(run.stdout).toBe('');
  });
});
