// The toolkit behind real clients: the MCP SDK's Client listing and calling the tools through an MCP Server, and
// the OpenAI and Anthropic SDKs sending the definitions to a model endpoint (a tiny local HTTP server standing in
// for the model) whose tool calls the toolkit then runs.
import {
  createServer,
  type Server as HttpServer,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { createToolkit, isToolError, type Toolkit } from '../src/index.js';
import { fixedPlan } from './tools-fixtures.js';

/** A model endpoint that records each request body and answers with the next canned response. */
async function fakeModel(
  responses: unknown[],
): Promise<{ url: string; bodies: unknown[]; server: HttpServer }> {
  const bodies: unknown[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let data = '';
    req.on('data', (chunk) => {
      data += chunk;
    });
    req.on('end', () => {
      bodies.push(JSON.parse(data));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(responses.shift()));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, bodies, server };
}

const servers: HttpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

function mcpServer(toolkit: Toolkit): Server {
  const server = new Server({ name: 'cairn-test', version: '0.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: toolkit.definitions('mcp') }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const result = await toolkit.dispatch(request.params.name, request.params.arguments);
    return { content: [{ type: 'text', text: JSON.stringify(result) }], isError: isToolError(result) };
  });
  return server;
}

describe('real clients', () => {
  it('the MCP SDK client lists and calls the tools', async () => {
    const toolkit = createToolkit(fixedPlan(), { families: ['cairn', 'task_graph'] });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'test-client', version: '0.0.0' });
    await Promise.all([mcpServer(toolkit).connect(serverSide), client.connect(clientSide)]);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(toolkit.names);
    expect(tools.find((t) => t.name === 'get_task')!.annotations).toEqual({ readOnlyHint: true });

    const created = await client.callTool({
      name: 'create_task',
      arguments: { title: 'Read current auth code' },
    });
    expect(created.isError).toBe(false);
    expect(JSON.parse((created.content as Array<{ text: string }>)[0]!.text)).toEqual({
      id: 1,
      title: 'Read current auth code',
      status: 'pending',
      blockedBy: [],
    });
    const refused = await client.callTool({ name: 'complete_task', arguments: { task_id: 5 } });
    expect(refused.isError).toBe(true);
    expect((refused.content as Array<{ text: string }>)[0]!.text).toContain('There is no task 5');
    await client.close();
  });

  it('the OpenAI SDK sends the definitions, and the toolkit runs the returned call from its JSON string', async () => {
    const toolkit = createToolkit(fixedPlan(), { families: ['todo'] });
    const todos = [{ content: 'Run tests', activeForm: 'Running tests', status: 'in_progress' }];
    const model = await fakeModel([
      {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 0,
        model: 'fake',
        choices: [
          {
            index: 0,
            finish_reason: 'tool_calls',
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [
                {
                  id: 'call_1',
                  type: 'function',
                  function: { name: 'TodoWrite', arguments: JSON.stringify({ todos }) },
                },
              ],
            },
          },
        ],
      },
    ]);
    servers.push(model.server);
    const openai = new OpenAI({ apiKey: 'test', baseURL: model.url, maxRetries: 0 });
    const completion = await openai.chat.completions.create({
      model: 'fake',
      messages: [{ role: 'user', content: 'Plan the release' }],
      tools: toolkit.definitions('openai'),
    });
    expect((model.bodies[0] as { tools: unknown }).tools).toEqual(toolkit.definitions('openai'));
    const call = completion.choices[0]!.message.tool_calls![0]!;
    if (call.type !== 'function') throw new Error('expected a function call');
    const result = await toolkit.dispatch(call.function.name, call.function.arguments);
    expect(result).toMatchObject({ newTodos: todos });
    expect(toolkit.plan.list().map((t) => [t.title, t.status])).toEqual([['Run tests', 'in_progress']]);
  });

  it('the Anthropic SDK sends the definitions, and the toolkit runs the returned tool_use input', async () => {
    const toolkit = createToolkit(fixedPlan(), { families: ['ongoing_task'] });
    const model = await fakeModel([
      {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'fake',
        stop_reason: 'tool_use',
        stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 1 },
        content: [
          {
            type: 'tool_use',
            id: 'toolu_1',
            name: 'set_ongoing_task',
            input: { task: 'Book a table for 4', status: 'waiting_user', wakeAt: '2026-12-04T09:00:00Z' },
          },
        ],
      },
    ]);
    servers.push(model.server);
    const anthropic = new Anthropic({ apiKey: 'test', baseURL: model.url, maxRetries: 0 });
    const message = await anthropic.messages.create({
      model: 'fake',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'Book a table' }],
      tools: toolkit.definitions('anthropic'),
    });
    expect((model.bodies[0] as { tools: unknown }).tools).toEqual(toolkit.definitions('anthropic'));
    const use = message.content.find((block) => block.type === 'tool_use');
    if (use?.type !== 'tool_use') throw new Error('expected a tool_use block');
    const result = await toolkit.dispatch(use.name, use.input);
    expect(result).toMatchObject({
      created: true,
      taskId: 1,
      status: 'waiting_user',
      wakeAt: '2026-12-04T09:00:00Z',
    });
  });
});
