// The in-page agent against a local chat-completions server over a scripted 40-turn session (agent-script.ts),
// another person editing the plan between turns: on every request the plan the model is told matches the real
// plan, the roles are valid for a strict provider, and the previous request is a byte-identical prefix of the
// next on at least 90% of requests. A hung endpoint is stopped by the person and by the timeout, with notices,
// and a message sent meanwhile is said to wait; an endpoint without CORS headers gets a notice that says so.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type ChatRequest,
  type Edit,
  keepsPrefix,
  roleProblems,
  scriptedReply,
  sessionScript,
  type ToldTask,
  toldPlan,
} from './agent-script.js';
import { addTask, agentReplies, answerCors, openAs, type Person, say } from './harness.js';
import { useDemo } from './use-demo.js';

const demo = useDemo();
let ann: Person;
let bo: Person;
let mock: Server;
let port = 0;

/** What the endpoint does with the next requests: answer as the scripted model, or never answer. */
const endpoint = {
  hang: false,
  requests: [] as ChatRequest[],
  /** For each request, the real plan in Ann's page when it arrived. */
  realPlans: [] as ToldTask[][],
  hung: [] as ServerResponse[],
  /** Hung requests the browser gave up on (the connection closed before an answer). */
  abandoned: 0,
};

declare global {
  interface Window {
    cairnDemo: {
      plan: {
        list(): Array<{ id: string; num: number; title: string; status: string }>;
        update(id: string, patch: Record<string, unknown>): unknown;
        remove(id: string): unknown;
      };
    };
  }
}

function realPlan(page: Page): Promise<ToldTask[]> {
  return page.evaluate(() =>
    window.cairnDemo.plan
      .list()
      .map((t) => ({ num: t.num, title: t.title, status: t.status }))
      .sort((a, b) => a.num - b.num),
  );
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  // A path for an endpoint that sends no CORS headers: the browser refuses to let the page read its answer.
  if (answerCors(req, res, !req.url?.startsWith('/nocors/'))) return;
  let text = '';
  for await (const chunk of req) text += chunk;
  const body = JSON.parse(text) as ChatRequest;
  endpoint.requests.push(body);
  if (endpoint.hang) {
    endpoint.hung.push(res);
    res.on('close', () => {
      if (!res.writableEnded) endpoint.abandoned++;
    });
    return;
  }
  // The agent waits for this answer, and the other person edits only between turns: the plan is as it was sent.
  endpoint.realPlans.push(await realPlan(ann.page));
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ choices: [{ index: 0, message: scriptedReply(body) }] }));
}

beforeAll(async () => {
  mock = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      res.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((done) => mock.listen(0, '127.0.0.1', done));
  port = (mock.address() as AddressInfo).port;
  const planId = `agent-session-${Date.now().toString(36)}`;
  ann = await openAs(demo.browser, demo.server.url, planId, { id: 'ann001', name: 'Ann' });
  bo = await openAs(demo.browser, demo.server.url, planId, { id: 'bo0002', name: 'Bo' });
  await useEndpoint(ann.page, `http://127.0.0.1:${port}/v1`);
});

afterAll(async () => {
  for (const res of endpoint.hung) res.destroy();
  await new Promise<void>((done) => mock.close(() => done()));
});

async function useEndpoint(page: Page, baseUrl: string, timeoutSeconds?: number): Promise<void> {
  await page.getByRole('button', { name: 'Settings' }).click();
  await page.getByLabel('An OpenAI-compatible endpoint').check();
  await page.getByLabel('Base URL').fill(baseUrl);
  await page.getByLabel('Model', { exact: true }).fill('mock-1');
  if (timeoutSeconds !== undefined) await page.getByLabel(/Model timeout/).fill(String(timeoutSeconds));
  await page.getByRole('button', { name: 'Save' }).click();
  await page.locator('.model-label', { hasText: 'mock-1' }).waitFor();
}

/** Bo's edit, through the page as a person makes it. */
async function edit(page: Page, change: Edit): Promise<void> {
  if (change.kind === 'add') {
    await addTask(page, change.title);
    return;
  }
  if (change.kind === 'done') {
    await page.getByRole('checkbox', { name: change.title, exact: true }).click();
    return;
  }
  await page.evaluate((c) => {
    const plan = window.cairnDemo.plan;
    const task = plan.list().find((t) => t.title === c.title);
    if (!task) throw new Error(`no task "${c.title}"`);
    if (c.kind === 'start') plan.update(task.id, { status: 'in_progress' });
    else if (c.kind === 'rename') plan.update(task.id, { title: c.to });
    else plan.remove(task.id);
  }, change);
}

/** Waits until Ann's page has Bo's plan (the edit synced). */
async function synced(): Promise<void> {
  const want = JSON.stringify(await realPlan(bo.page));
  await vi.waitFor(async () => expect(JSON.stringify(await realPlan(ann.page))).toBe(want), {
    timeout: 8_000,
    interval: 20,
  });
}

function fill(text: string, plan: ToldTask[]): string {
  return text.replace(/\{n:([^}]+)\}/g, (_, title: string) => {
    const task = plan.find((t) => t.title === title);
    if (!task) throw new Error(`the script names "${title}", which the plan does not have`);
    return String(task.num);
  });
}

const idle = (page: Page) => page.locator('.chat-busy').waitFor({ state: 'hidden' });

describe('the agent over a 40-turn session with a real endpoint', () => {
  it('is told the real plan on every request, in valid roles, and keeps the prefix on 90% of requests', async () => {
    const script = sessionScript();
    const editedTurns: Array<{ request: number; said: string }> = [];
    for (const [i, turn] of script.entries()) {
      for (const change of turn.before ?? []) await edit(bo.page, change);
      if (turn.before) await synced();
      const said = fill(turn.say, await realPlan(ann.page));
      if (turn.before) editedTurns.push({ request: endpoint.requests.length, said });
      await say(ann.page, said);
      await agentReplies(ann.page, i + 1);
      await idle(ann.page);
    }
    const { requests, realPlans } = endpoint;
    expect(requests.length).toBeGreaterThanOrEqual(60);

    const wrong = requests.flatMap((request, i) => {
      const told = [...toldPlan(request).values()].sort((a, b) => a.num - b.num);
      return JSON.stringify(told) === JSON.stringify(realPlans[i])
        ? []
        : [{ request: i, told, real: realPlans[i] }];
    });
    expect(wrong).toEqual([]);
    expect(requests.flatMap((r, i) => roleProblems(r).map((p) => `request ${i}: ${p}`))).toEqual([]);

    const kept = requests.slice(1).filter((r, i) => keepsPrefix(requests[i]!, r)).length;
    expect(kept / (requests.length - 1)).toBeGreaterThanOrEqual(0.9);

    // A change made before a message is told ahead of it, in the message itself, by name (unless that request
    // rendered the plan afresh, with the change in it, as a trim of the history does).
    const told = editedTurns.filter(
      ({ request }) =>
        requests[request]!.messages[0]!.content === requests[request - 1]!.messages[0]!.content,
    );
    expect(told.length).toBeGreaterThanOrEqual(editedTurns.length - 3);
    for (const { request, said } of told) {
      const last = requests[request]!.messages.at(-1)!;
      expect(last.role).toBe('user');
      const text = last.content ?? '';
      expect(text.indexOf('<plan_changes>')).toBeGreaterThanOrEqual(0);
      expect(text.indexOf('</plan_changes>')).toBeLessThan(text.lastIndexOf(said));
      expect(text).toMatch(/ by Bo\b/);
    }
    // The model sees names, as the page shows them, never actor ids, in what it is told about the plan.
    for (const request of requests) {
      const told = request.messages
        .map((m) => m.content ?? '')
        .join('\n')
        .match(/<plan_changes>[\s\S]*?<\/plan_changes>/g);
      expect(`${request.messages[0]!.content}${told?.join('') ?? ''}`).not.toMatch(
        /(user|agent):(ann001|bo0002)/,
      );
    }
    // Task numbers are in the plan text, so "done 1" means one task.
    expect(requests.at(-1)!.messages[0]!.content).toMatch(/- \[.\] \d+\. /);
  }, 240_000);

  it('stops a hung call when the person cancels it, says so, and answers the message that waited', async () => {
    endpoint.hang = true;
    const replies = await ann.page.locator('li.msg-assistant .msg-text, li.msg-system .msg-text').count();
    const sent = endpoint.requests.length;
    await say(ann.page, 'hello?');
    await vi.waitFor(() => expect(endpoint.requests.length).toBe(sent + 1));
    const busy = ann.page.locator('.chat-busy');
    await busy.getByText('is working').waitFor();

    await say(ann.page, 'are you there?');
    await busy.getByText('reads yours next (1 waiting)').waitFor();
    endpoint.hang = false; // the next call answers
    await busy.getByRole('button', { name: 'Cancel the model call' }).click();
    expect(await agentReplies(ann.page, replies + 1)).toContain('cancelled before it answered');
    expect(await agentReplies(ann.page, replies + 2)).toBe('You said: are you there?');
    await idle(ann.page);
    await vi.waitFor(() => expect(endpoint.abandoned).toBe(1));
    const after = endpoint.requests.at(-1)!;
    expect(roleProblems(after)).toEqual([]);
    // The cancelled turn is closed in the conversation, and the waiting message is the request's last.
    expect(after.messages.at(-1)).toMatchObject({ role: 'user', content: 'are you there?' });
    expect(after.messages.at(-2)).toMatchObject({ role: 'assistant' });
    expect(after.messages.at(-2)!.content).toContain('cancelled');
  });

  it('stops a hung call at the timeout set in Settings, with a notice that says so', async () => {
    await useEndpoint(ann.page, `http://127.0.0.1:${port}/v1`, 2);
    endpoint.hang = true;
    const replies = await ann.page.locator('li.msg-assistant .msg-text, li.msg-system .msg-text').count();
    await say(ann.page, 'still there?');
    const notice = await agentReplies(ann.page, replies + 1);
    expect(notice).toContain('did not answer within 2 s');
    expect(notice).toContain('timeout');
    await idle(ann.page);
    await vi.waitFor(() => expect(endpoint.abandoned).toBe(2));
    endpoint.hang = false;
  });

  it('explains a failed fetch from an endpoint without CORS headers', async () => {
    await useEndpoint(ann.page, `http://127.0.0.1:${port}/nocors/v1`);
    const replies = await ann.page.locator('li.msg-assistant .msg-text, li.msg-system .msg-text').count();
    await say(ann.page, 'anyone?');
    const notice = await agentReplies(ann.page, replies + 1);
    expect(notice).toContain(`no answer from http://127.0.0.1:${port}/nocors/v1/chat/completions`);
    expect(notice).toContain('CORS');
    expect(notice).toContain('Access-Control-Allow-Origin');
  });
});
