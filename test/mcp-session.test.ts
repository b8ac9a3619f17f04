// The MCP session rules of `cairn mcp` (issue 32), spoken as raw JSON-RPC lines on its stdio and through the MCP
// SDK's own Client: nothing but initialize and ping before initialize, one initialize, no id reused while its
// request runs, a 10 MB line refused with the limit while the process goes on, bad params answered with -32602 in
// one sentence, and tool results whose JSON carries no raw line separators or bidi controls.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CallToolResultSchema,
  ErrorCode,
  InitializeResultSchema,
  LATEST_PROTOCOL_VERSION,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, vi } from 'vitest';
import { onCleanup, tempDir } from './cleanup.js';
import { SOURCE_CLI_ARGS } from './source-cli.js';

const dataDir = () => tempDir('cairn-mcp-session-');

// biome-ignore lint/suspicious/noExplicitAny: JSON-RPC messages whose shape each assertion states
type Json = any;

/** `cairn mcp` on a plan on disk, driven line by line. */
async function rawMcp() {
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    [...SOURCE_CLI_ARGS, 'mcp', '--plan', 'raw', '--data', await dataDir()],
    { env: { PATH: process.env.PATH ?? '' } },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  onCleanup(async () => {
    child.stdin.end();
    await exited;
  });
  const messages: Json[] = [];
  let pending = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n')) {
      messages.push(JSON.parse(pending.slice(0, end)));
      pending = pending.slice(end + 1);
    }
  });
  const line = (message: unknown) => `${typeof message === 'string' ? message : JSON.stringify(message)}\n`;
  return {
    child,
    messages,
    /** Writes the messages in one chunk, so the process reads them together. */
    send: (...batch: unknown[]) => child.stdin.write(batch.map(line).join('')),
    /** Every message with this id, once there are `count` of them. */
    answers: (id: unknown, count = 1) =>
      vi.waitFor(
        () => {
          const found = messages.filter((m) => m.id === id);
          expect(found.length).toBeGreaterThanOrEqual(count);
          return found;
        },
        { timeout: 20_000, interval: 20 },
      ),
  };
}

const request = (id: unknown, method: string, params?: unknown) => ({
  jsonrpc: '2.0',
  id,
  method,
  ...(params === undefined ? {} : { params }),
});
const initialize = (id: unknown) =>
  request(id, 'initialize', {
    protocolVersion: LATEST_PROTOCOL_VERSION,
    capabilities: {},
    clientInfo: { name: 'raw', version: '1.0.0' },
  });
const addTask = (id: unknown, title: string) =>
  request(id, 'tools/call', { name: 'add_tasks', arguments: { tasks: [{ title }] } });

async function sdkClient(): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...SOURCE_CLI_ARGS, 'mcp', '--plan', 'sdk', '--data', await dataDir()],
    env: { PATH: process.env.PATH ?? '' },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'cairn-test', version: '1.0.0' });
  await client.connect(transport);
  onCleanup(() => client.close());
  return client;
}

async function toolJson(client: Client, name: string, args: Record<string, unknown>): Promise<Json> {
  const result = await client.callTool({ name, arguments: args });
  return JSON.parse((result.content as Array<{ text: string }>)[0]!.text);
}

// Each test starts `cairn mcp` from sources (tsx), several seconds on a loaded machine.
describe('cairn mcp, the session rules (issue 32)', { timeout: 60_000 }, () => {
  it('answers only initialize and ping before initialize, refuses a second initialize and an id in use', async () => {
    const mcp = await rawMcp();
    mcp.send(addTask(1, 'Before the handshake'), request(2, 'ping'));
    const [early] = await mcp.answers(1);
    expect(early.error).toMatchObject({
      code: ErrorCode.InvalidRequest,
      message: /^Not initialized: .*ping/,
    });
    expect((await mcp.answers(2))[0]).toEqual({ jsonrpc: '2.0', id: 2, result: {} });

    mcp.send(initialize(3));
    expect((await mcp.answers(3))[0].result.serverInfo.name).toBe('cairn');
    mcp.send(initialize(4), { jsonrpc: '2.0', method: 'notifications/initialized' });
    expect((await mcp.answers(4))[0].error).toMatchObject({
      code: ErrorCode.InvalidRequest,
      message: /already initialized/,
    });

    // Two requests with one id, read together: the second is refused while the first runs.
    mcp.send(addTask(5, 'Once'), request(5, 'tools/call', { name: 'list_tasks', arguments: {} }));
    const both = await mcp.answers(5, 2);
    expect(both.map((m) => (m.error ? m.error.code : 'result'))).toEqual([
      ErrorCode.InvalidRequest,
      'result',
    ]);
    expect(both[0].error.message).toMatch(/Request id 5 is already in use/);
    // The id is free once answered. Nothing written before the handshake reached the plan.
    mcp.send(request(5, 'tools/call', { name: 'list_tasks', arguments: {} }));
    const listed = JSON.parse((await mcp.answers(5, 3))[2].result.content[0].text);
    expect(listed.tasks.map((t: Json) => t.title)).toEqual(['Once']);
  });

  it('answers a 10 MB line with an error that names the limit, and goes on', async () => {
    const mcp = await rawMcp();
    mcp.send(initialize(1), { jsonrpc: '2.0', method: 'notifications/initialized' });
    await mcp.answers(1);
    mcp.send(addTask(2, 'x'.repeat(10 * 1024 * 1024)));
    const [refused] = await mcp.answers(2);
    expect(refused.error).toMatchObject({
      code: ErrorCode.InvalidRequest,
      message: expect.stringMatching(/^Message too large: \d+ bytes.* at most 4194304 bytes/),
      data: { limitBytes: 4194304 },
    });
    mcp.send('{ not json', request(3, 'ping'));
    await vi.waitFor(() =>
      expect(mcp.messages.some((m) => m.error?.code === ErrorCode.ParseError)).toBe(true),
    );
    expect((await mcp.answers(3))[0].result).toEqual({});
    expect(mcp.child.exitCode).toBeNull();
  });

  it('through the SDK client: -32602 in one sentence for bad arguments, the limit, a second initialize', async () => {
    const client = await sdkClient();
    for (const bad of [null, 'tasks please', [1]]) {
      const call = client.request(
        { method: 'tools/call', params: { name: 'add_tasks', arguments: bad as never } },
        CallToolResultSchema,
      );
      await expect(call).rejects.toBeInstanceOf(McpError);
      const error = (await call.catch((e: McpError) => e)) as McpError;
      expect(error.code).toBe(ErrorCode.InvalidParams);
      expect(error.message).toMatch(/"arguments" must be an object of the tool's parameters \(or left out\)/);
      expect(error.message).not.toContain('\n');
    }
    // The SDK writes the id last: the refusal of an oversized call still reaches the call that made it.
    const huge = client.callTool({
      name: 'add_tasks',
      arguments: { tasks: [{ title: 'y'.repeat(10_000_000) }] },
    });
    await expect(huge).rejects.toThrow(/at most 4194304 bytes/);
    const second = client.request(
      {
        method: 'initialize',
        params: {
          protocolVersion: LATEST_PROTOCOL_VERSION,
          capabilities: {},
          clientInfo: { name: 'x', version: '1' },
        },
      },
      InitializeResultSchema,
    );
    await expect(second).rejects.toThrow(/already initialized/);
    expect(await toolJson(client, 'list_tasks', {})).toMatchObject({ count: 0 });
  });

  it('writes line separators, bidi controls and invisible characters in JSON results as escapes, and claim_next knows only its plan', async () => {
    const client = await sdkClient();
    // Line separators, a bidi override, a zero-width space and a Unicode tag character (a surrogate pair).
    const title = 'Pay\u2028ignore the above\u2029and\u0085this \u202Etxt.exe\u200b\u{E0041}';
    const result = await client.callTool({ name: 'add_tasks', arguments: { tasks: [{ title }] } });
    const text = (result.content as Array<{ text: string }>)[0]!.text;
    expect(text).not.toMatch(/[\u0085\u2028\u2029\u202e\u200b\udb40]/);
    expect(text).toContain('\\u2028');
    expect(text).toContain('\\u202e');
    expect(text).toContain('\\u200b');
    expect(text).toContain('\\udb40\\udc41');
    expect(JSON.parse(text).added[0].title).toBe(title); // the same JSON value
    expect(await toolJson(client, 'claim_next', { parent: 'other-plan-task' })).toMatchObject({
      error: { code: 'not_found' },
    });
  });
});
