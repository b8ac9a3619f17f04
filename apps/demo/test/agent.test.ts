// The in-page agent end to end: the offline planner turns chat requests into tool calls of each family, and the
// other person sees the tasks and the tool activity live; an OpenAI-compatible endpoint (a tiny local HTTP
// server standing in for the model) gets the rendered plan and the tool definitions, and its tool calls run.
import { mkdtempSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCairnServer, silentLogger } from '../../../packages/server/src/index.js';
import { registerModelRoutes } from '../../../packages/server/src/model-proxy.js';
import { agentReplies, answerCors, DIST, goto, openAs, type Person, row, say } from './harness.js';
import { useDemo } from './use-demo.js';

const demo = useDemo();
let ann: Person;
let bo: Person;

beforeAll(async () => {
  ann = await openAs(demo.browser, demo.server.url, 'agent-setup', { id: 'ann001', name: 'Ann' });
  bo = await openAs(demo.browser, demo.server.url, 'agent-setup', { id: 'bo0002', name: 'Bo' });
});

/** The number "Write post" gets in each family's plan, and the tool its plan request calls first. */
const FAMILIES = [
  { family: 'cairn', writePost: 2, firstTool: 'add_tasks' },
  { family: 'task_manage', writePost: 1, firstTool: 'task_manage' },
  { family: 'todo', writePost: 1, firstTool: 'todo' },
  { family: 'task_graph', writePost: 1, firstTool: 'create_task' },
  { family: 'ongoing_task', writePost: 2, firstTool: 'set_ongoing_task' },
] as const;

describe('the offline planner', () => {
  for (const { family, writePost, firstTool } of FAMILIES) {
    it(`plans, finishes and starts tasks with the ${family} tools, and the other person sees it`, async () => {
      const planId = `agent-${family}-${Date.now().toString(36)}`;
      await Promise.all([goto(ann.page, demo.server.url, planId), goto(bo.page, demo.server.url, planId)]);
      await ann.page.getByLabel('Tool family').selectOption(family);
      await ann.page.locator('.model-label', { hasText: 'offline planner' }).waitFor();

      await say(ann.page, 'plan a launch: write post, review, publish');
      expect(await agentReplies(ann.page, 1)).toContain('Planned “Launch”');
      for (const title of ['Write post', 'Review', 'Publish']) await row(bo.page, title).waitFor();
      await bo.page.locator(`li.tool-call[data-tool="${firstTool}"]`).first().waitFor();

      await say(ann.page, `done ${writePost}`);
      expect(await agentReplies(ann.page, 2)).toContain('Marked “Write post” done');
      await row(bo.page, 'Write post').waitFor({ state: 'detached' });

      await say(ann.page, 'start the review');
      const started = await agentReplies(ann.page, 3);
      if (family === 'task_graph') {
        // The seed's graph tools have no way to start a task: the planner says so and changes nothing.
        expect(started).toContain('cannot start');
        expect(await row(bo.page, 'Review').locator('.pill').textContent()).toBe('to do');
      } else {
        expect(started).toContain('Started “Review”');
        await row(bo.page, 'Review').locator('.pill', { hasText: 'in progress' }).waitFor();
      }

      await say(ann.page, "what's next?");
      expect(await agentReplies(ann.page, 4)).toContain('Next up: “Review”');
      // Bo watches the same conversation, tool calls and all.
      await bo.page.locator('li.msg-assistant .msg-text', { hasText: /^Next up: “Review”/ }).waitFor();
    });
  }
});

let mock: Server;
const requests: Array<{ headers: IncomingMessage['headers']; body: Record<string, unknown> }> = [];

beforeAll(async () => {
  mock = createServer((req, res) => {
    if (answerCors(req, res)) return;
    let text = '';
    req.on('data', (chunk) => {
      text += chunk;
    });
    req.on('end', () => {
      const body = JSON.parse(text) as { messages: Array<{ role: string }> };
      requests.push({ headers: req.headers, body });
      const last = body.messages.at(-1)!;
      const message =
        last.role === 'tool'
          ? { role: 'assistant', content: 'Added “Book the venue”.' }
          : {
              role: 'assistant',
              content: null,
              tool_calls: [
                {
                  id: 'call_m1',
                  type: 'function',
                  function: { name: 'add_tasks', arguments: '{"tasks":[{"title":"Book the venue"}]}' },
                },
              ],
            };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ choices: [{ index: 0, message }] }));
    });
  });
  await new Promise<void>((done) => mock.listen(0, '127.0.0.1', done));
});

afterAll(() => new Promise<void>((done) => mock.close(() => done())));

describe('an OpenAI-compatible endpoint', () => {
  it('sends the rendered plan and the tool definitions, runs the tool calls, returns the results', async () => {
    const planId = `agent-openai-${Date.now().toString(36)}`;
    await Promise.all([goto(ann.page, demo.server.url, planId), goto(bo.page, demo.server.url, planId)]);
    await ann.page.getByLabel('New task').fill('Pick a date');
    await ann.page.getByLabel('New task').press('Enter');
    await ann.page.getByLabel('Tool family').selectOption('cairn');

    const { port } = mock.address() as AddressInfo;
    await ann.page.getByRole('button', { name: 'Settings' }).click();
    await ann.page.getByLabel('An OpenAI-compatible endpoint').check();
    await ann.page.getByLabel('Base URL').fill(`http://127.0.0.1:${port}/v1`);
    await ann.page.getByLabel('Model', { exact: true }).fill('mock-1');
    await ann.page.getByLabel('API key').fill('sk-test');
    await ann.page.getByRole('button', { name: 'Save' }).click();
    await ann.page.locator('.model-label', { hasText: 'mock-1' }).waitFor();

    await say(ann.page, 'we need a venue');
    expect(await agentReplies(ann.page, 1)).toBe('Added “Book the venue”.');
    await row(bo.page, 'Book the venue').waitFor();

    expect(requests).toHaveLength(2);
    const [first, second] = requests.splice(0) as [(typeof requests)[0], (typeof requests)[0]];
    expect(first.headers.authorization).toBe('Bearer sk-test');
    expect(first.body['model']).toBe('mock-1');
    const tools = (first.body['tools'] as Array<{ function: { name: string } }>).map((t) => t.function.name);
    expect(tools).toContain('add_tasks');
    const messages = first.body['messages'] as Array<{ role: string; content: string }>;
    expect(messages[0]!.role).toBe('system');
    expect(messages[0]!.content).toContain('Pick a date');
    expect(messages.at(-1)).toEqual({ role: 'user', content: 'we need a venue' });
    const followUp = second.body['messages'] as Array<{
      role: string;
      content: string;
      tool_call_id?: string;
    }>;
    const toolMessage = followUp.find((m) => m.role === 'tool')!;
    expect(toolMessage.tool_call_id).toBe('call_m1');
    expect(toolMessage.content).toContain('Book the venue');
    // The system prompt is byte-identical (the provider's cache holds); the agent's own change is told after its
    // tool result, so the plan it reads stays whole when the history is trimmed.
    expect(followUp[0]!.content).toBe(messages[0]!.content);
    expect(toolMessage.content).toMatch(
      /<plan_changes>\n.*\n- task 2 \[\w+\] "Book the venue" added by you\n<\/plan_changes>$/,
    );

    // Someone else adds a task: the next request keeps the same system prompt and tells the change in the
    // person's message, ahead of what they said, by name.
    await bo.page.getByLabel('New task').fill('Rent chairs');
    await bo.page.getByLabel('New task').press('Enter');
    await row(ann.page, 'Rent chairs').waitFor();
    await say(ann.page, 'and chairs?');
    expect(await agentReplies(ann.page, 2)).toBe('Added “Book the venue”.');
    const third = requests.splice(0)[0]!.body['messages'] as Array<{ role: string; content: string }>;
    expect(third[0]!.content).toBe(messages[0]!.content);
    expect(third.filter((m) => m.role === 'system')).toHaveLength(1);
    const last = third.at(-1)!;
    expect(last.role).toBe('user');
    expect(last.content).toMatch(
      /^<plan_changes>\n[\s\S]*"Rent chairs" added by Bo\n<\/plan_changes>\n\nand chairs\?$/,
    );
  });
});

describe("the server's model", () => {
  it('is the default when the server offers one, and its key never reaches the browser', async () => {
    // The proxy mounted the way the server mounts it: registerModelRoutes on the server's app.
    const host = createCairnServer({
      dataDir: mkdtempSync(join(tmpdir(), 'cairn-demo-')),
      staticDir: DIST,
      logger: silentLogger,
    });
    const { port } = mock.address() as AddressInfo;
    registerModelRoutes(host.app, {
      baseUrl: `http://127.0.0.1:${port}/v1`,
      model: 'srv-1',
      apiKey: 'sk-server-secret',
      label: 'Test model',
    });
    const info = await host.listen(0, '127.0.0.1');
    try {
      const dee = await openAs(demo.browser, info.url, `agent-server-${Date.now().toString(36)}`, {
        id: 'dee004',
        name: 'Dee',
      });
      await dee.page.locator('.model-label', { hasText: 'Server model: Test model' }).waitFor();
      await say(dee.page, 'we need a venue');
      expect(await agentReplies(dee.page, 1)).toBe('Added “Book the venue”.');
      await row(dee.page, 'Book the venue').waitFor();
      const [first] = requests.splice(0);
      expect(first!.headers.authorization).toBe('Bearer sk-server-secret');
      expect(first!.body['model']).toBe('srv-1');
      const seenByPage = await dee.page.evaluate(
        () =>
          document.documentElement.outerHTML +
          JSON.stringify({ ...localStorage }) +
          JSON.stringify({ ...sessionStorage }),
      );
      expect(seenByPage).not.toContain('sk-server-secret');
      await dee.context.close();
    } finally {
      await host.close();
    }
  });
});
