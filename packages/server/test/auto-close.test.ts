// Auto-close against a real server and a judge that is a small local HTTP server speaking the OpenAI
// chat-completions protocol: a finished turn gets every open task judged, tasks rated >= 0.75 close as
// `auto_close`, every judgement is logged, and a judge that fails or answers garbage changes nothing.
import { createChat, createPlan, type TaskInput } from '@cairn/core';
import { until } from '@cairn/core/testing';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { chatCompletionsJudge, type JudgeRun, judgeFromEnv, signToken } from '../src/index.js';
import { type ChatCall, type LlmReply, startFakeLlm } from './fake-llm.js';
import { cairnClient, seedPlan, serverState, startServer, type TestServer } from './helpers.js';

type JudgeCall = ChatCall;

/** What the judge answers next: the message content (JSON text or not), an error, or a raw HTTP status and body. */
type Reply = LlmReply;

const calls: JudgeCall[] = [];
let reply: (call: JudgeCall) => Reply = () => ({ content: '{"tasks":[]}' });

/** The tasks the judge was shown (from the user message of its last call). */
function shown(call: JudgeCall): {
  tasks: Array<{ id: string; title: string }>;
  exchange: Record<string, unknown>;
} {
  return JSON.parse(call.body.messages.at(-1)!.content);
}

/** The judge answers with these probabilities, by task title. */
function rate(ratings: Record<string, { completed: number; abandoned: number; reason?: string }>) {
  return (call: JudgeCall): Reply => ({
    content: JSON.stringify({
      tasks: shown(call).tasks.flatMap((t) => (ratings[t.title] ? [{ id: t.id, ...ratings[t.title] }] : [])),
    }),
  });
}

/** The judge's endpoint: records each call in `calls` and answers with `reply`. */
function judgeEndpoint() {
  return startFakeLlm((call) => {
    calls.push(call);
    return reply(call);
  });
}

async function judgedServer(options: { secret?: string } = {}): Promise<TestServer> {
  calls.length = 0;
  const judge = await judgeEndpoint();
  return startServer({
    ...options,
    judge: chatCompletionsJudge({ baseUrl: judge.url, model: 'judge-1', apiKey: 'sk-judge' }),
    autoClose: { settleMs: 0 },
    wake: false,
  });
}

/** An agent's client: its doc, plan view and chat, synced with the server. */
async function agent(server: TestServer, planId: string) {
  const doc = new Y.Doc();
  const conn = cairnClient(server.url, planId, doc);
  await conn.whenSynced();
  return {
    doc,
    plan: createPlan({ doc, actor: 'agent:scout' }),
    user: createChat(doc, { actor: 'user:ann' }),
    chat: createChat(doc, { actor: 'agent:scout' }),
  };
}

function nextRun(server: TestServer): Promise<JudgeRun> {
  return new Promise((resolve) => server.server.autoClose!.once('judged', resolve));
}

const TASKS: TaskInput[] = [
  {
    title: "Book a table at Luigi's",
    status: 'waiting_user',
    steps: [{ title: 'Pick a time', status: 'done' }],
  },
  { title: 'Find a hotel in Rome', status: 'in_progress' },
  { title: 'Check the weather', status: 'pending' },
];

describe('auto-close after a turn', () => {
  it('judges every open task against the latest exchange and closes those at >= 0.75 as auto_close', async () => {
    const server = await judgedServer();
    const [table, hotel, weather] = await seedPlan(server, 'acme:conv:1', TASKS);
    reply = rate({
      "Book a table at Luigi's": { completed: 0.92, abandoned: 0.02, reason: 'The booking was confirmed.' },
      'Find a hotel in Rome': { completed: 0.05, abandoned: 0.81, reason: 'The user no longer travels.' },
      'Check the weather': { completed: 0.5, abandoned: 0.1, reason: 'Not discussed.' },
    });
    const a = await agent(server, 'acme:conv:1');
    const run = nextRun(server);
    a.user.append({ role: 'user', text: "8 pm is fine. And forget the hotel, I'm not going to Rome." });
    // A step that calls tools does not end the turn; the final reply does.
    const step = a.chat.append({
      role: 'assistant',
      text: '',
      toolCalls: [{ name: 'update_tasks', arguments: `{"updates":[{"id":"${table}","note":"8 pm"}]}` }],
    });
    a.chat.setToolResult(step.id, step.toolCalls![0]!.id, '{"updated":[]}');
    a.chat.append({
      role: 'assistant',
      text: "Your table at Luigi's is booked for 8 pm. I dropped the hotel.",
    });

    const result = await run;
    expect(calls).toHaveLength(1);
    const call = calls[0]!;
    expect(call.headers.authorization).toBe('Bearer sk-judge');
    expect(call.body).toMatchObject({ model: 'judge-1', response_format: { type: 'json_object' } });
    expect(call.body.messages[0]!.content).toMatch(/completed[\s\S]*abandoned/);
    const request = shown(call);
    expect(request.tasks.map((t) => t.id).sort()).toEqual([table, hotel, weather].sort());
    expect(request.exchange).toEqual({
      user: "8 pm is fine. And forget the hotel, I'm not going to Rome.",
      assistant: ["Your table at Luigi's is booked for 8 pm. I dropped the hotel."],
      toolCalls: [
        {
          name: 'update_tasks',
          arguments: `{"updates":[{"id":"${table}","note":"8 pm"}]}`,
          result: '{"updated":[]}',
        },
      ],
    });

    expect(result).toMatchObject({ planId: 'acme:conv:1', error: null, problems: [] });
    expect(result.closed.sort()).toEqual([table, hotel].sort());
    await until(a.plan, (p) => p.get(table!)?.status === 'done' && p.get(hotel!)?.status === 'cancelled');
    expect(a.plan.get(table!)).toMatchObject({ updatedBy: 'auto_close' });
    expect(a.plan.get(table!)?.note).toMatch(
      /Closed as done by auto_close \(completed 0.92.*The booking was confirmed/,
    );
    expect(a.plan.get(weather!)?.status).toBe('pending');
    const logged = server.logger.lines.filter((l) => l.message === 'task_close');
    expect(logged.map((l) => [l.fields?.taskId, l.fields?.decision]).sort()).toEqual(
      [
        [table, 'done'],
        [hotel, 'cancelled'],
        [weather, 'open'],
      ].sort(),
    );
    expect(logged[0]!.fields).toMatchObject({ judge: 'judge-1', planId: 'acme:conv:1' });

    // The same turn is not judged again; the next one is.
    reply = rate({ 'Check the weather': { completed: 0.8, abandoned: 0 } });
    const second = nextRun(server);
    a.user.append({ role: 'user', text: 'How is the weather?' });
    a.chat.append({ role: 'assistant', text: 'Sunny, 24 degrees.' });
    expect((await second).closed).toEqual([weather]);
    expect(calls).toHaveLength(2);
    expect(shown(calls[1]!).tasks.map((t) => t.id)).toEqual([weather]);
  });

  it('ignores malformed judge output safely, logs it, and changes nothing', async () => {
    const server = await judgedServer({ secret: 'auto-close-secret-at-least-32-bytes!!' });
    const [table, hotel] = await seedPlan(server, 'acme:conv:2', TASKS);
    // A turn written on the server side ends too: the hook's run (told to judge nothing) comes first.
    reply = () => ({ content: '{"tasks":[]}' });
    const hooked = nextRun(server);
    const handle = await server.server.hub.openPlan('acme:conv:2');
    createChat(handle.doc, { actor: 'user:ann' }).append({ role: 'user', text: 'Done with the booking.' });
    createChat(handle.doc, { actor: 'agent:scout' }).append({ role: 'assistant', text: 'Great.' });
    await handle.flush();
    handle.release();
    expect((await hooked).closed).toEqual([]);
    const writer = await signToken('auto-close-secret-at-least-32-bytes!!', {
      plan: 'acme:conv:2',
      role: 'write',
      sub: 'ann',
    });
    const judgeNow = () =>
      fetch(`${server.http}/api/plans/acme%3Aconv%3A2/judge`, {
        method: 'POST',
        headers: { authorization: `Bearer ${writer}`, 'content-type': 'application/json' },
      });
    const before = await serverState(server, 'acme:conv:2');

    for (const [what, answer] of [
      ['prose', { content: 'I think the booking is probably done.' }],
      ['wrong shape', { content: '{"verdict": "done"}' }],
      ['an endpoint error', { error: 500 }],
      ['rate limited', { error: 429 }],
      ['no content', { status: 200, body: '{"choices":[]}' }],
      ['not JSON at all', { status: 200, body: '<html>' }],
    ] as const) {
      reply = () => answer;
      const response = await judgeNow();
      expect({ what, status: response.status }).toEqual({ what, status: 502 });
      const body = (await response.json()) as { error: { code: string; message: string; run: JudgeRun } };
      expect(body.error.code).toBe('internal');
      expect(body.error.message).toMatch(/No task was changed/);
      expect(body.error.run.closed).toEqual([]);
    }
    expect(await serverState(server, 'acme:conv:2')).toEqual(before);
    const warnings = server.logger.lines.filter(
      (l) => l.message === 'auto-close judge output ignored; tasks stay open',
    );
    expect(warnings).toHaveLength(6);
    expect(warnings[0]!.fields).toMatchObject({ plan: 'acme:conv:2', judge: 'judge-1' });
    expect(await server.server.hub.registry.render()).toContain(
      'cairn_auto_close_judgements_total{decision="error"} 6',
    );

    // Partly malformed: the good entry counts, the others are dropped and reported.
    reply = (call) => {
      const ids = shown(call).tasks.map((t) => t.id);
      return {
        content:
          'Here you go:\n```json\n' +
          JSON.stringify({
            tasks: [
              { id: table, completed: 'very likely', abandoned: 0 },
              { id: 'zzzzzzz', completed: 1, abandoned: 0 },
              { id: hotel, completed: 1.5, abandoned: 0 },
              { id: ids.find((id) => id !== table && id !== hotel), completed: 0.97, abandoned: 0 },
            ],
          }) +
          '\n```',
      };
    };
    const partial = await judgeNow();
    expect(partial.status).toBe(200);
    const run = (await partial.json()) as JudgeRun;
    expect(run.closed).toHaveLength(1);
    expect(run.problems).toEqual([
      expect.stringMatching(/^tasks\[0\]: completed/),
      'tasks[1]: "zzzzzzz" is not one of the judged tasks',
      expect.stringMatching(/^tasks\[2\]: completed/),
    ]);
    expect(server.logger.lines).toContainEqual(
      expect.objectContaining({ level: 'warn', message: 'parts of the judge output were ignored' }),
    );
  });

  it('answers POST /judge: 404 for an unknown plan, 403 for a reader, nothing to judge without open tasks', async () => {
    const secret = 'auto-close-secret-at-least-32-bytes!!';
    const server = await judgedServer({ secret });
    await seedPlan(server, 'acme:conv:3', [{ title: 'Closed already', status: 'done' }]);
    const post = async (planId: string, role: 'read' | 'write') =>
      fetch(`${server.http}/api/plans/${encodeURIComponent(planId)}/judge`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${await signToken(secret, { plan: 'acme:*', role })}`,
          'content-type': 'application/json',
        },
      });
    expect((await post('acme:none', 'write')).status).toBe(404);
    expect((await post('acme:conv:3', 'read')).status).toBe(403);
    const empty = await post('acme:conv:3', 'write');
    expect(await empty.json()).toMatchObject({ skipped: 'no_open_tasks', closed: [], error: null });
    expect(calls).toHaveLength(0);
  });
});

describe('without a judge', () => {
  it('leaves tasks open, and POST /judge says how to configure one', async () => {
    const server = await startServer();
    expect(server.server.autoClose).toBeNull();
    const [id] = await seedPlan(server, 'acme:conv:4', TASKS.slice(0, 1));
    const a = await agent(server, 'acme:conv:4');
    a.user.append({ role: 'user', text: 'Thanks, all done!' });
    a.chat.append({ role: 'assistant', text: 'Booked.' });
    const response = await fetch(`${server.http}/api/plans/acme%3Aconv%3A4/judge`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(409);
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(
      /CAIRN_JUDGE_URL and CAIRN_JUDGE_MODEL/,
    );
    expect(a.plan.get(id!)?.status).toBe('waiting_user');
  });

  it('is configured from CAIRN_JUDGE_URL, CAIRN_JUDGE_MODEL and CAIRN_JUDGE_KEY', async () => {
    const judgeUrl = (await judgeEndpoint()).url;
    expect(judgeFromEnv({})).toBeNull();
    expect(() => judgeFromEnv({ CAIRN_JUDGE_URL: judgeUrl })).toThrow(/CAIRN_JUDGE_MODEL/);
    expect(() => judgeFromEnv({ CAIRN_JUDGE_URL: 'not a url', CAIRN_JUDGE_MODEL: 'm' })).toThrow(/not a URL/);
    const fromEnv = judgeFromEnv({
      CAIRN_JUDGE_URL: judgeUrl,
      CAIRN_JUDGE_MODEL: 'm-2',
      CAIRN_JUDGE_KEY: 'k',
    })!;
    expect(fromEnv.name).toBe('m-2');
    calls.length = 0;
    reply = () => ({ content: '{"tasks":[]}' });
    await fromEnv.judge(
      { planId: 'p', tasks: [], exchange: { user: 'hi', assistant: [], toolCalls: [] } },
      AbortSignal.timeout(5000),
    );
    expect(calls[0]).toMatchObject({ headers: { authorization: 'Bearer k' }, body: { model: 'm-2' } });
  });
});
