// Learning from finished work against a real server, a real temp dir and a model that is a small local HTTP
// server speaking the OpenAI chat-completions protocol: traces of tool calls, one queued distillation per task
// closed as done, skills with versions and success rates, retirement, the offline distiller, retries of bad model
// output, the trace's bound, and isolation between scopes over HTTP and WebSocket.
import * as fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPlan, createToolkit, resolveContext } from '@cairn/core';
import {
  readCalls,
  readSkills,
  type Skill,
  skillsDocId,
  traceDocId,
  traceRecorder,
} from '@cairn/core/learning';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import {
  type CairnServerOptions,
  chatCompletionsDistiller,
  listDiskDocuments,
  listDiskPlans,
  signToken,
} from '../src/index.js';
import { cairnClient, rawClient, startServer, type TestServer } from './helpers.js';

// ------------------------------------------------------------------ the model

/** What the model is asked: the traces of the kind and the procedure worked out from them. */
interface ModelCall {
  tasks: Array<{ goal: string; calls: Array<{ tool: string; args: unknown; outcome: string }> }>;
  procedure: { steps: string[]; pitfalls: string[] };
}
type Reply = { content: string } | { status: number; body: string } | { hang: true };

let model: Server;
let modelUrl: string;
const modelCalls: ModelCall[] = [];
let reply: (call: ModelCall) => Reply;

/** What a good model answers: the prose of the procedure it was shown, a note per step and a fix per pitfall. */
function goodSkill(call: ModelCall): Reply {
  return {
    content: JSON.stringify({
      name: 'Book a restaurant table',
      triggers: ['book table', 'reserve table'],
      notes: call.procedure.steps.map((_, i) => `step ${i + 1} of the booking`),
      fixes: call.procedure.pitfalls.map(() => 'use a valid status'),
    }),
  };
}

beforeAll(async () => {
  model = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
      model: string;
      messages: Array<{ content: string }>;
    };
    const call = JSON.parse(body.messages.at(-1)!.content) as ModelCall;
    modelCalls.push(call);
    const answer = reply(call);
    if ('hang' in answer) return; // never answers: the distiller's deadline must end the call
    if ('status' in answer) {
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(answer.body);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'chatcmpl-1',
        object: 'chat.completion',
        model: body.model,
        choices: [
          { index: 0, message: { role: 'assistant', content: answer.content }, finish_reason: 'stop' },
        ],
      }),
    );
  });
  await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
  modelUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;
});

afterAll(() => {
  model.closeAllConnections();
  return new Promise<void>((resolve) => model.close(() => resolve()));
});

// ------------------------------------------------------------------ helpers

// biome-ignore lint/suspicious/noExplicitAny: JSON answers, read field by field in the assertions
type Answer = any;

/** Resolves once `test` holds (polled: the server works in the background). */
function until(test: () => boolean | Promise<boolean>): Promise<void> {
  return vi.waitFor(
    async () => {
      if (!(await test())) throw new Error('not yet');
    },
    { timeout: 20_000, interval: 20 },
  );
}

/** A clock the test moves, so retries with backoff come due without waiting. */
function testClock() {
  let offset = 0;
  return { now: () => Date.now() + offset, advance: (ms: number) => (offset += ms) };
}

async function learningServer(options: CairnServerOptions = {}, clock = testClock()) {
  const server = await startServer({
    ...options,
    learning: {
      timer: false,
      now: clock.now,
      retry: { baseMs: 1000 },
      timeoutMs: 500,
      settleMs: 50,
      ...options.learning,
    },
  });
  return { ...server, clock };
}

async function api(
  server: TestServer,
  method: string,
  path: string,
  body?: unknown,
  token?: string,
): Promise<{ status: number; json: Answer }> {
  const response = await fetch(`${server.http}${path}`, {
    method,
    headers: {
      ...(method !== 'GET' ? { 'content-type': 'application/json' } : {}),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, json: await response.json() };
}

const tool = (server: TestServer, planId: string, name: string, args: unknown, token?: string) =>
  api(
    server,
    'POST',
    `/api/plans/${encodeURIComponent(planId)}/tools/${name}?families=ongoing_task`,
    args,
    token,
  );

/** An agent works a booking through the HTTP tool route, with one refused call, and closes it as `outcome`. */
async function workTask(server: TestServer, planId: string, goal: string, outcome = 'done', token?: string) {
  const created = await tool(
    server,
    planId,
    'set_ongoing_task',
    { task: goal, status: 'in_progress', steps: [{ title: 'Find a slot', status: 'pending' }] },
    token,
  );
  expect(created.status).toBe(200);
  const taskId = created.json.taskId as number;
  expect(
    (await tool(server, planId, 'set_ongoing_task', { task: goal, status: 'asleep', taskId }, token)).status,
  ).toBe(400);
  const waiting = { task: goal, status: 'waiting_user', taskId, nextStep: 'Ask for the time' };
  expect((await tool(server, planId, 'set_ongoing_task', waiting, token)).status).toBe(200);
  expect((await tool(server, planId, 'clear_ongoing_task', { outcome, taskId }, token)).status).toBe(200);
  return taskId;
}

const USED = ['set_ongoing_task', 'set_ongoing_task', 'clear_ongoing_task'];

async function skillsOf(server: TestServer, scope: string, token?: string): Promise<Answer[]> {
  const listed = await api(server, 'GET', `/api/scopes/${scope}/skills`, undefined, token);
  expect(listed.status).toBe(200);
  return listed.json.skills;
}

/** The procedure the server learns, in scope acme, from one booking worked on acme:conv:1. */
async function learnedFromABooking(s: TestServer): Promise<Answer> {
  await workTask(s, 'acme:conv:1', 'Book a table for 4 at Luigi’s');
  await until(async () => (await s.server.learner!.pending('acme:conv:1')).length === 1);
  expect(await s.server.learner!.sweep()).toEqual({ learned: 1, retried: 0 });
  const [skill] = await skillsOf(s, 'acme');
  return skill!;
}

/** The agent's context on a plan, as a client that synced the scope's skills and the plan's trace would build it. */
async function agentContext(server: TestServer, planId: string, skills: Skill[]): Promise<string> {
  const handle = await server.server.hub.openPlan(planId);
  const trace = await server.server.hub.openPlan(traceDocId(planId));
  try {
    const plan = createPlan({ doc: handle.doc, actor: 'agent:bot' });
    const messages = await resolveContext(
      [
        { section: 'tasks', role: 'system', content: '{{open_tasks}}' },
        { section: 'learned', role: 'system', content: '{{learned_procedures}}', skip_if_empty: true },
      ],
      { plan, learned: { skills, traces: trace.doc } },
    );
    plan.destroy();
    await trace.flush();
    return messages.map((m) => m.content).join('\n---\n');
  } finally {
    trace.release();
    handle.release();
  }
}

// ------------------------------------------------------------------ tests

describe('learning with a model', () => {
  it('learns one skill per task closed as done, offers it, counts outcomes, retires it and relearns it', async () => {
    reply = goodSkill;
    const s = await learningServer({
      distiller: chatCompletionsDistiller({ baseUrl: modelUrl, model: 'skill-m' }),
    });
    const learner = s.server.learner!;
    const queued: string[] = [];
    learner.on('queued', (job) => queued.push(job.id));

    await workTask(s, 'acme:conv:1', 'Book a table for 4 at Luigi’s on Friday');
    await until(() => queued.length === 1);
    expect(await learner.pending('acme:conv:1')).toHaveLength(1);
    // The trace holds every call, the refused one with its code.
    const trace = await api(s, 'GET', '/api/plans/acme%3Aconv%3A1/traces');
    expect(trace.json.calls.map((c: Answer) => `${c.tool}:${c.outcome}`)).toEqual([
      'set_ongoing_task:ok',
      'set_ongoing_task:invalid_argument',
      'set_ongoing_task:ok',
      'clear_ongoing_task:ok',
    ]);
    expect(trace.json.calls[0].actor).toBe('agent:local');

    expect(await learner.sweep()).toEqual({ learned: 1, retried: 0 });
    expect(queued).toHaveLength(1);
    expect(modelCalls.at(-1)!.tasks.map((t) => t.goal)).toEqual(['Book a table for 4 at Luigi’s on Friday']);
    expect(modelCalls.at(-1)!.procedure.steps[0]).toMatch(/^1\. set_ongoing_task \{ status: "in_progress"/);
    const [skill, ...others] = await skillsOf(s, 'acme');
    expect(others).toEqual([]);
    expect(skill.versions[0].steps.map((x: Answer) => x.tool)).toEqual(USED);
    expect(skill).toMatchObject({ version: 1, status: 'active', writtenByModel: true, successRate: null });
    expect(skill.versions[0].steps[0].note).toBe('step 1 of the booking');
    expect(skill.versions[0].pitfalls).toEqual([
      {
        tool: 'set_ongoing_task',
        error: 'invalid_argument',
        message: expect.stringContaining('status'),
        fix: 'use a valid status',
      },
    ]);
    expect(await learner.pending('acme:conv:1')).toEqual([]);

    // A second, similar request: the agent's context offers the skill.
    const skills = readSkills((await s.server.hub.openPlan('acme#skills')).doc);
    const second = await tool(s, 'acme:conv:2', 'set_ongoing_task', {
      task: 'Book a table for 2 at Mario’s',
      status: 'in_progress',
    });
    expect(second.status).toBe(200);
    const context = await agentContext(s, 'acme:conv:2', skills);
    expect(context).toContain('Learned procedures');
    expect(context).toContain(`Book a restaurant table [skill ${skill.id}, version 1; not yet used]`);
    await tool(s, 'acme:conv:9', 'set_ongoing_task', { task: 'Cancel my newsletter', status: 'in_progress' });
    expect(await agentContext(s, 'acme:conv:9', skills)).not.toContain('Learned procedures');

    // Three tasks on which it was offered fail in a row: retired, and no longer offered.
    const outcomes: string[] = [];
    learner.on('outcome', (e) => outcomes.push(`${e.taskId}:${e.outcome}`));
    await api(s, 'PATCH', `/api/plans/acme%3Aconv%3A2/tasks/${planTaskId(s, 'acme:conv:2')}`, {
      status: 'failed',
    });
    for (const n of [3, 4]) {
      const planId = `acme:conv:${n}`;
      await tool(s, planId, 'set_ongoing_task', {
        task: 'Reserve a table for 6 tonight',
        status: 'in_progress',
      });
      // An agent over HTTP reads the learned procedures beside its context; the offer is noted on its task.
      const learned = await fetch(`${s.http}/api/plans/${encodeURIComponent(planId)}/learned`);
      expect(await learned.text()).toContain('Book a restaurant table');
      const patched = await api(
        s,
        'PATCH',
        `/api/plans/${encodeURIComponent(planId)}/tasks/${planTaskId(s, planId)}`,
        {
          status: 'failed',
        },
      );
      expect(patched.status).toBe(200);
    }
    await until(() => outcomes.length === 3);
    const retired = await api(s, 'GET', `/api/scopes/acme/skills/${skill.id}`);
    expect(retired.json.skill).toMatchObject({ status: 'retired', statusReason: '3 failures in a row' });
    expect(retired.json.skill.versions[0].stats).toEqual({ done: 0, failed: 3, consecutiveFailures: 3 });
    expect(retired.json.changes.map((c: Answer) => `${c.change}:${c.by}`)).toEqual([
      'learned:learning',
      'outcome:learning',
      'outcome:learning',
      'outcome:learning',
      'retired:learning',
    ]);
    const now = readSkills((await s.server.hub.openPlan('acme#skills')).doc);
    await tool(s, 'acme:conv:5', 'set_ongoing_task', { task: 'Book a table for 3', status: 'in_progress' });
    expect(await agentContext(s, 'acme:conv:5', now)).not.toContain('Learned procedures');

    // Learned again from another booking with the same calls: the same skill and version, active again (a new
    // version only when the calls differ, issue 30).
    await workTask(s, 'acme:conv:6', 'Book a table for 2 at Nonna’s on Sunday');
    await until(() => queued.length === 2);
    expect(await learner.sweep()).toEqual({ learned: 1, retried: 0 });
    const [relearned, ...more] = await skillsOf(s, 'acme');
    expect(more).toEqual([]);
    expect(relearned).toMatchObject({
      id: skill.id,
      version: 1,
      status: 'active',
      statusReason: 'learned again',
    });
    expect(relearned.versions.map((v: Answer) => v.version)).toEqual([1]);

    // Other calls for the same kind of task (the same tools, a key more): version 2.
    const goal = 'Book a table for 5 at Nonna’s on Monday';
    const made = await tool(s, 'acme:conv:8', 'set_ongoing_task', {
      task: goal,
      status: 'in_progress',
      steps: [{ title: 'Find a slot', status: 'pending' }],
      context: { party: 5 },
    });
    const waiting = {
      task: goal,
      status: 'waiting_user',
      taskId: made.json.taskId,
      nextStep: 'Ask for the time',
    };
    await tool(s, 'acme:conv:8', 'set_ongoing_task', waiting);
    await tool(s, 'acme:conv:8', 'clear_ongoing_task', { outcome: 'done', taskId: made.json.taskId });
    await until(() => queued.length === 3);
    expect(await learner.sweep()).toEqual({ learned: 1, retried: 0 });
    const [changed] = await skillsOf(s, 'acme');
    expect(changed).toMatchObject({ id: skill.id, version: 2, successRate: null });
    expect(changed.versions[1].steps[0].args).toMatchObject({ context: { party: '<number>' } });
  });

  it('keeps the offline procedure when the model answers garbage, saying so; retries with backoff when it cannot be asked', async () => {
    const warnings: Array<{ message: string; fields: Answer }> = [];
    const logger = {
      info() {},
      warn: (message: string, fields?: Answer) => warnings.push({ message, fields }),
      error() {},
    };
    const s = await learningServer({
      distiller: chatCompletionsDistiller({ baseUrl: modelUrl, model: 'skill-m' }),
      logger,
    });
    const learner = s.server.learner!;
    // Unreachable in effect: nothing is stored, the job waits 1, then 2 s.
    const down: Reply[] = [{ status: 500, body: '{"error":"overloaded"}' }, { hang: true }];
    await workTask(s, 'acme:conv:1', 'Book a table for 4');
    await until(async () => (await learner.pending('acme:conv:1')).length === 1);
    const delays: number[] = [];
    for (const [i, answer] of down.entries()) {
      reply = () => answer;
      expect(await learner.sweep()).toEqual({ learned: 0, retried: 1 });
      expect(await skillsOf(s, 'acme')).toEqual([]);
      const [job] = await learner.pending('acme:conv:1');
      expect(job!.attempts).toBe(i + 1);
      expect(job!.lastError).toBeTruthy();
      delays.push(job!.nextAt - s.clock.now());
      // Not due yet: a sweep now does nothing.
      expect(await learner.sweep()).toEqual({ learned: 0, retried: 0 });
      s.clock.advance(1000 * 2 ** i);
    }
    for (const [i, delay] of delays.entries()) {
      expect(delay).toBeLessThanOrEqual(1000 * 2 ** i);
      expect(delay).toBeGreaterThan(1000 * 2 ** i - 1000);
    }
    // Garbage, each kind of it: the offline procedure is learned at once, and the log says why.
    const garbage: Array<[Reply, RegExp]> = [
      [{ content: 'Sure! Here is the procedure you asked for.' }, /not JSON/],
      [{ content: JSON.stringify({ name: 'Book', triggers: ['book table'] }) }, /notes|fixes/],
      [
        { content: JSON.stringify({ name: 'Book a table', triggers: ['book'], notes: ['one'], fixes: [] }) },
        /1 notes and 0 fixes; the procedure has 3 steps and 1 pitfalls/,
      ],
    ];
    for (const [n, [answer, why]] of garbage.entries()) {
      reply = () => answer;
      const planId = `acme:conv:g${n}`;
      await workTask(s, planId, 'Book a table for 4');
      await until(async () => (await learner.pending(planId)).length === 1);
      if (n === 0) s.clock.advance(10_000); // the first job's retry is due too
      const swept = await learner.sweep();
      expect(swept.learned).toBeGreaterThanOrEqual(1);
      expect(swept.retried).toBe(0);
      const warned = warnings.at(-1)!;
      expect(warned.message).toBe(
        "the model's answer was not a usable procedure; the offline procedure stays",
      );
      expect(warned.fields).toMatchObject({
        plan: planId,
        model: 'skill-m',
        error: expect.stringMatching(why),
      });
      const [skill] = await skillsOf(s, 'acme');
      expect(skill).toMatchObject({ writtenByModel: false });
      expect(skill.versions.at(-1).author).toEqual({ kind: 'offline' });
      expect(skill.versions.at(-1).steps.map((x: Answer) => x.tool)).toEqual(USED);
    }
    expect(await learner.pending('acme:conv:1')).toEqual([]);
  });
});

describe('learning without a model', () => {
  it('writes a usable procedure offline, labelled as such; a conversation can be learned on demand', async () => {
    const s = await learningServer();
    const skill = await learnedFromABooking(s);
    expect(skill).toMatchObject({
      writtenByModel: false,
      version: 1,
      triggers: ['book table', 'book table luigi'],
    });
    expect(skill.versions[0].author).toEqual({ kind: 'offline' });
    expect(skill.versions[0].steps.map((x: Answer) => x.tool)).toEqual(USED);
    expect(skill.versions[0].steps[0].args).toMatchObject({ status: 'in_progress', task: '<string>' });
    const one = await api(s, 'GET', `/api/scopes/acme/skills/${skill.id}`);
    expect(one.json.text).toContain('recorded from the tool calls, not written by a model');
    expect(one.json.text).toContain('1. set_ongoing_task');

    // On demand, from a conversation without a task: its first user message is the goal.
    const handle = await s.server.hub.openPlan('acme:conv:7');
    const { createChat } = await import('@cairn/core');
    createChat(handle.doc, { actor: 'user:ann' }).append({
      role: 'user',
      text: 'Find me the opening hours of the museum',
    });
    handle.release();
    await tool(s, 'acme:conv:7', 'get_ongoing_task', {});
    const learned = await api(s, 'POST', '/api/plans/acme%3Aconv%3A7/distill');
    expect(learned.status).toBe(200);
    expect(learned.json).toMatchObject({
      status: 'learned',
      created: true,
      skill: { name: 'Find me the opening hours of the museum', writtenByModel: false },
    });
    expect((await skillsOf(s, 'acme')).map((x) => x.versions.at(-1).source.taskId)).toContain(null);
    const empty = await api(s, 'POST', '/api/plans/acme%3Aconv%3A1/distill', { taskId: 'nope' });
    expect(empty.status).toBe(404);
    const patch = await api(s, 'PATCH', `/api/scopes/acme/skills/${skill.id}`, { status: 'gone' });
    expect(patch.status).toBe(400);
    expect(patch.json.error.message).toMatch(/"status": active \| retired/);
    const retired = await api(s, 'PATCH', `/api/scopes/acme/skills/${skill.id}`, {
      status: 'retired',
      reason: 'outdated',
    });
    expect(retired.json.skill).toMatchObject({
      status: 'retired',
      statusReason: 'outdated',
      updatedBy: 'user:local',
    });
    const history = await api(s, 'GET', `/api/scopes/acme/skills/${skill.id}`);
    expect(history.json.changes.map((c: Answer) => `${c.change}:${c.by}:${c.detail}`)).toEqual([
      'learned:learning:the offline distiller, from acme:conv:1 task ' + skill.versions[0].source.taskId,
      'retired:user:local:outdated',
    ]);
    // A retired skill is restored by a person, attributed to them.
    const restored = await api(s, 'PATCH', `/api/scopes/acme/skills/${skill.id}`, { status: 'active' });
    expect(restored.json.skill).toMatchObject({ status: 'active', updatedBy: 'user:local' });
  });
});

describe('skills of a scope', () => {
  it('read as empty for a scope that never learned anything, without creating its document', async () => {
    const s = await learningServer();
    const listed = await api(s, 'GET', '/api/scopes/quiet/skills');
    expect(listed.status).toBe(200);
    expect(listed.json).toEqual({ scope: 'quiet', skills: [] });
    const one = await api(s, 'GET', '/api/scopes/quiet/skills/k1');
    expect(one.status).toBe(404);
    expect(one.json.error.message).toContain('There is no skill "k1" in scope "quiet"');
    expect(s.server.hub.isLoaded(skillsDocId('quiet'))).toBe(false);
    expect(fs.readdirSync(s.dir).some((f) => f.includes('quiet'))).toBe(false);
  });
});

describe('traces', () => {
  it('never hold more than their bound, and reading a plan does not load them', async () => {
    const s = await learningServer({ learning: { traceBound: { maxCalls: 5, maxAgeMs: 3_600_000 } } });
    await tool(s, 'acme:conv:1', 'set_ongoing_task', { task: 'Look up an order', status: 'in_progress' });
    for (let i = 0; i < 11; i++) await tool(s, 'acme:conv:1', 'get_ongoing_task', {});
    const trace = await api(s, 'GET', '/api/plans/acme%3Aconv%3A1/traces');
    expect(trace.json.calls).toHaveLength(5);
    expect(trace.json.bound).toEqual({ maxCalls: 5, maxAgeMs: 3_600_000 });

    // A client recording with a looser bound of its own is trimmed back by the server.
    const traceDoc = new Y.Doc();
    const conn = cairnClient(s.url, traceDocId('acme:conv:1'), traceDoc);
    await conn.whenSynced();
    const plan = createPlan({ actor: 'agent:x' });
    const toolkit = createToolkit(plan, {
      onCall: traceRecorder(traceDoc, { bound: { maxCalls: 1000, maxAgeMs: 3_600_000 } }),
    });
    for (let i = 0; i < 20; i++) await toolkit.dispatch('list_tasks', {});
    await until(() => readCalls(traceDoc).length <= 5 && traceDoc.getArray('calls').length > 0);
    await until(
      async () => (await api(s, 'GET', '/api/plans/acme%3Aconv%3A1/traces')).json.calls.length === 5,
    );
    conn.destroy();

    // After a restart, a client syncing the plan and the HTTP API reading it never load the trace document.
    await s.server.close();
    const again = await learningServer({ dataDir: s.dir });
    const planDoc = new Y.Doc();
    const client = cairnClient(again.url, 'acme:conv:1', planDoc);
    await client.whenSynced();
    expect((await api(again, 'GET', '/api/plans/acme%3Aconv%3A1/tasks')).json.tasks).toHaveLength(1);
    expect(again.server.hub.isLoaded('acme:conv:1')).toBe(true);
    expect(again.server.hub.isLoaded(traceDocId('acme:conv:1'))).toBe(false);
    expect([...planDoc.share.keys()]).not.toContain('calls');
  });
  it('of calls over HTTP are written in batches through a room unloaded after: K plans keep K rooms, not 2K', async () => {
    const s = await learningServer({ learning: { traceBatch: { maxDelayMs: 100 } } });
    const plans = ['acme:conv:1', 'acme:conv:2', 'acme:conv:3'];
    for (const planId of plans) {
      await tool(s, planId, 'set_ongoing_task', { task: `Look up order ${planId}`, status: 'in_progress' });
      for (let i = 0; i < 3; i++) await tool(s, planId, 'get_ongoing_task', {});
    }
    const hub = s.server.hub;
    // Written once the batch is due, each trace loaded for its write and unloaded right after.
    await until(async () => {
      const stored = await listDiskDocuments(s.dir);
      return plans.every((p) => stored.includes(traceDocId(p)));
    });
    await until(() => hub.roomCount === plans.length);
    for (const planId of plans) {
      expect(hub.isLoaded(planId)).toBe(true);
      expect(hub.isLoaded(traceDocId(planId))).toBe(false);
      const trace = await api(s, 'GET', `/api/plans/${encodeURIComponent(planId)}/traces`);
      expect(trace.json.calls.map((c: Answer) => c.tool)).toEqual([
        'set_ongoing_task',
        'get_ongoing_task',
        'get_ongoing_task',
        'get_ongoing_task',
      ]);
    }
    await until(() => hub.roomCount === plans.length);
    expect(plans.every((p) => hub.isLoaded(p))).toBe(true);
  });
  it('of calls over HTTP are written at once when a batch is full, and none is lost on a graceful close', async () => {
    const s = await learningServer({ learning: { traceBatch: { maxCalls: 4, maxDelayMs: 600_000 } } });
    await tool(s, 'acme:conv:1', 'set_ongoing_task', { task: 'Look up an order', status: 'in_progress' });
    for (let i = 0; i < 3; i++) await tool(s, 'acme:conv:1', 'get_ongoing_task', {});
    await until(async () => (await listDiskDocuments(s.dir)).includes(traceDocId('acme:conv:1')));
    // Two plans' calls wait in memory (fewer than a batch, long before it is due) when the server closes.
    await tool(s, 'acme:conv:1', 'get_ongoing_task', {});
    await tool(s, 'acme:conv:2', 'set_ongoing_task', { task: 'Refund an order', status: 'in_progress' });
    expect(s.server.learner!.hasUnwrittenCalls('acme:conv:1')).toBe(true);
    expect(s.server.learner!.hasUnwrittenCalls('acme:conv:2')).toBe(true);
    expect(await listDiskDocuments(s.dir)).not.toContain(traceDocId('acme:conv:2'));
    await s.server.close();

    const again = await learningServer({ dataDir: s.dir });
    const one = await api(again, 'GET', '/api/plans/acme%3Aconv%3A1/traces');
    expect(one.json.calls).toHaveLength(5);
    const two = await api(again, 'GET', '/api/plans/acme%3Aconv%3A2/traces');
    expect(two.json.calls.map((c: Answer) => c.tool)).toEqual(['set_ongoing_task']);
  });
  it('are not plans: the plan listing leaves them out, and the plan routes refuse their ids, naming the plan', async () => {
    const s = await learningServer();
    await tool(s, 'acme:conv:2', 'set_ongoing_task', { task: 'Look up an order', status: 'in_progress' });
    const skills = await s.server.hub.openPlan(skillsDocId('acme'));
    skills.doc.getMap('probe').set('written', true);
    await skills.flush();
    skills.release();
    await until(async () => (await listDiskDocuments(s.dir)).includes(traceDocId('acme:conv:2')));
    expect(await listDiskDocuments(s.dir)).toEqual(
      expect.arrayContaining(['acme:conv:2', traceDocId('acme:conv:2'), skillsDocId('acme')]),
    );
    expect(await listDiskPlans(s.dir)).toEqual(['acme:conv:2']);

    const trace = encodeURIComponent(traceDocId('acme:conv:2'));
    for (const [method, path, body] of [
      ['GET', `/api/plans/${trace}/tasks`, undefined],
      ['GET', `/api/plans/${trace}/context`, undefined],
      ['GET', `/api/plans/${trace}/tools`, undefined],
      [
        'POST',
        `/api/plans/${trace}/tools/set_ongoing_task?families=ongoing_task`,
        { task: 'x', status: 'pending' },
      ],
    ] as const) {
      const answer = await api(s, method, path, body);
      expect(answer.status, `${method} ${path}`).toBe(400);
      expect(answer.json.error.code).toBe('invalid_argument');
      expect(answer.json.error.message).toContain('is the trace document of plan "acme:conv:2", not a plan');
    }
    const library = await api(s, 'GET', `/api/plans/${encodeURIComponent(skillsDocId('acme'))}/tasks`);
    expect(library.status).toBe(400);
    expect(library.json.error.message).toContain('GET /api/scopes/acme/skills');
    // Nothing was written into the trace: it holds the one call made on the plan.
    expect((await api(s, 'GET', '/api/plans/acme%3Aconv%3A2/traces')).json.calls).toHaveLength(1);
  });
});

describe('isolation', () => {
  it('a token for other:* can neither list nor read acme’s skills or traces, over HTTP and WebSocket', async () => {
    const secret = 'x'.repeat(32);
    const s = await learningServer({ secret });
    const acme = await signToken(secret, { plan: 'acme:*', role: 'write', sub: 'ann' });
    const conv = await signToken(secret, { plan: 'acme:conv:1', role: 'write', sub: 'bot' });
    const other = await signToken(secret, { plan: 'other:*', role: 'admin', sub: 'eve' });
    await workTask(s, 'acme:conv:1', 'Book a table for 4', 'done', acme);
    await until(async () => (await s.server.learner!.pending('acme:conv:1')).length === 1);
    await s.server.learner!.sweep();
    const [skill] = await skillsOf(s, 'acme', acme);
    expect(skill).toBeTruthy();

    // HTTP
    for (const [method, path, body] of [
      ['GET', '/api/scopes/acme/skills'],
      ['GET', `/api/scopes/acme/skills/${skill.id}`],
      ['PATCH', `/api/scopes/acme/skills/${skill.id}`, { status: 'retired' }],
      ['GET', '/api/plans/acme%3Aconv%3A1/traces'],
      ['GET', '/api/plans/acme%3Aconv%3A1/learned'],
      ['POST', '/api/plans/acme%3Aconv%3A1/distill'],
      ['GET', `/api/plans/${encodeURIComponent(traceDocId('acme:conv:1'))}/tasks`],
    ] as Array<[string, string, unknown?]>) {
      const refused = await api(s, method, path, body, other);
      expect([path, refused.status]).toEqual([path, 403]);
    }
    expect((await api(s, 'GET', '/api/scopes/acme/skills')).status).toBe(401);
    expect(await skillsOf(s, 'other', other)).toEqual([]);
    // A token for one conversation reads its scope's skills and its own trace, not another conversation's.
    expect(await skillsOf(s, 'acme', conv)).toHaveLength(1);
    expect((await api(s, 'GET', '/api/plans/acme%3Aconv%3A1/traces', undefined, conv)).status).toBe(200);
    expect((await api(s, 'GET', '/api/plans/acme%3Aconv%3A2/traces', undefined, conv)).status).toBe(403);

    // WebSocket
    for (const room of ['acme#skills', traceDocId('acme:conv:1')]) {
      const refused = rawClient(s.url, room, { token: other });
      expect((await refused.closed).code).toBe(4403);
    }
    expect((await rawClient(s.url, traceDocId('acme:conv:2'), { token: conv }).closed).code).toBe(4403);
    // A writer of the plan writes its trace, but cannot queue a job of its own: the server undoes it.
    const traceDoc = new Y.Doc();
    const writer = cairnClient(s.url, traceDocId('acme:conv:1'), traceDoc, { token: conv });
    await writer.whenSynced();
    traceDoc
      .getMap('pending')
      .set('forged', { id: 'forged', planId: 'acme:conv:1', taskId: null, goal: 'x' });
    await writer.whenAcknowledged();
    await until(() => !traceDoc.getMap('pending').has('forged'));
    expect(await s.server.learner!.pending('acme:conv:1')).toEqual([]);
    // The skills document syncs read-only to the scope's tokens: a write is refused and never stored.
    const skillsDoc = new Y.Doc();
    const reader = cairnClient(s.url, 'acme#skills', skillsDoc, { token: conv });
    await reader.whenSynced();
    expect(readSkills(skillsDoc).map((x) => x.id)).toEqual([skill.id]);
    skillsDoc.getMap('skills').set(skill.id, { forged: true });
    await expect(reader.whenAcknowledged(5000)).rejects.toThrow(/read-only/);
    const stored = await s.server.hub.openPlan('acme#skills');
    expect(readSkills(stored.doc)).toHaveLength(1);
    stored.release();
  });
});

/** The id of the one top-level task of a plan on the server. */
function planTaskId(s: TestServer, planId: string): string {
  const room = s.server.hub.loadedRoom(planId)!;
  const plan = createPlan({ doc: room.doc });
  const [task] = plan.children(null);
  plan.destroy();
  return task!.id;
}

describe('issue 30: learned procedures wherever they are offered', () => {
  it('POST .../context fills learned_procedures as GET .../learned does, and get_learned_procedure is a tool over HTTP', async () => {
    const s = await learningServer();
    const skill = await learnedFromABooking(s);

    await tool(s, 'acme:conv:2', 'set_ongoing_task', {
      task: 'Book a table for 2 on Friday',
      status: 'in_progress',
    });
    const learned = await fetch(`${s.http}/api/plans/acme%3Aconv%3A2/learned`);
    const text = await learned.text();
    expect(text).toContain(`skill ${skill.id}`);
    const context = await api(s, 'POST', '/api/plans/acme%3Aconv%3A2/context', {
      template: [
        { section: 'learned', role: 'system', content: '{{learned_procedures}}', skip_if_empty: true },
      ],
    });
    expect(context.status).toBe(200);
    expect(context.json.messages).toEqual([{ role: 'system', content: text }]);

    const byQuery = await api(s, 'POST', '/api/plans/acme%3Aconv%3A2/tools/get_learned_procedure', {
      query: 'book table',
    });
    expect(byQuery.status).toBe(200);
    expect(byQuery.json.procedures.map((p: Answer) => p.skillId)).toEqual([skill.id]);
    const unknown = await api(s, 'POST', '/api/plans/acme%3Aconv%3A2/tools/get_learned_procedure', {
      skillId: 'nope',
    });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.message).toContain(skill.id);
  });
});

describe('issue 30: using an offered procedure', () => {
  it('counts a task done with its calls for the version used, without a new version', async () => {
    const s = await learningServer();
    const learner = s.server.learner!;
    const skill = await learnedFromABooking(s);

    // The next booking is offered the procedure (GET .../learned notes the offer) and follows it to done.
    const outcomes: string[] = [];
    learner.on('outcome', (e) => outcomes.push(`${e.outcome}`));
    const planId = 'acme:conv:2';
    const goal = 'Book a table for 2 at Mario’s';
    const created = await tool(s, planId, 'set_ongoing_task', {
      task: goal,
      status: 'in_progress',
      steps: [{ title: 'Find a slot', status: 'pending' }],
    });
    const taskId = created.json.taskId;
    expect(await (await fetch(`${s.http}/api/plans/acme%3Aconv%3A2/learned`)).text()).toContain(skill.id);
    await tool(s, planId, 'set_ongoing_task', {
      task: goal,
      status: 'waiting_user',
      taskId,
      nextStep: 'Ask',
    });
    await tool(s, planId, 'clear_ongoing_task', { outcome: 'done', taskId });
    await until(() => outcomes.length === 1);
    await until(async () => (await learner.pending(planId)).length === 1);
    expect(await learner.sweep()).toEqual({ learned: 1, retried: 0 });

    const [used, ...others] = await skillsOf(s, 'acme');
    expect(others).toEqual([]);
    expect(used).toMatchObject({ id: skill.id, version: 1, successRate: 1 });
    expect(used.versions.map((v: Answer) => [v.version, v.stats.done])).toEqual([[1, 1]]);
  });
});
