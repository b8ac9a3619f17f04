// The agents runner, headless, through a real server on disk: 8 agents on a 40-task graph do every task exactly
// once, never before its blockers are done, without a claim collision, and every replica and the disk end with the
// same plan. A second run works with a model: a local stand-in for an OpenAI-compatible endpoint.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPlan } from '@cairn/core';
import { openFilePersistence } from '@cairn/core/fs';
import { readCalls, traceDocId } from '@cairn/core/learning';
import { type AgentEvent, createCairnServer, runAgents, runAgentsCli, silentLogger } from '@cairn/server';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { onCleanup, tempDir } from './cleanup.js';

async function startServer() {
  const dir = await tempDir('cairn-agents-');
  const server = createCairnServer({ dataDir: dir, logger: silentLogger });
  const info = await server.listen(0, '127.0.0.1');
  let closed = false;
  const close = async () => {
    if (!closed) await server.close();
    closed = true;
  };
  onCleanup(close);
  return { dir, url: `ws://127.0.0.1:${info.port}`, close };
}

/** A seeded random source, so a failing graph can be replayed. */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

describe('cairn agents', () => {
  it('8 agents finish a 40-task graph: each task once, blockers first, one plan everywhere', async () => {
    const { dir, url, close } = await startServer();
    const report = await runAgents({
      url,
      planId: 'launch',
      count: 8,
      tasks: 40,
      goal: 'Launch the product',
      workMs: [1, 4],
      random: seeded(7),
      timeoutMs: 20_000,
    });
    const plan = report.agents[0]!.snapshot.tasks;
    const tops = plan.filter((t) => t.parent === null);
    expect(tops).toHaveLength(40);
    expect(plan.filter((t) => t.parent !== null)).toHaveLength(80);
    expect(plan.every((t) => t.status === 'done')).toBe(true);

    const of = (type: AgentEvent['type']) => report.events.filter((e) => e.type === type);
    const claimed = of('claimed');
    const done = of('done');
    // Every task claimed once and done once, by the agent that claimed it, which is its assignee.
    expect(claimed.map((e) => e.taskId).sort()).toEqual(tops.map((t) => t.id).sort());
    expect(done.map((e) => e.taskId).sort()).toEqual(tops.map((t) => t.id).sort());
    for (const task of tops) {
      const by = claimed.find((e) => e.taskId === task.id)!.agent;
      expect(done.find((e) => e.taskId === task.id)!.agent).toBe(by);
      expect(task.assignee).toBe(by);
    }
    // No task was started before each of its blockers was done.
    const doneAt = new Map(done.map((e) => [e.taskId!, e.seq]));
    let edges = 0;
    for (const task of tops) {
      const start = claimed.find((e) => e.taskId === task.id)!.seq;
      for (const blocker of task.blockedBy) {
        edges++;
        expect(doneAt.get(blocker)!, `${task.id} started before ${blocker} was done`).toBeLessThan(start);
      }
    }
    expect(edges).toBeGreaterThan(30);
    // The work was shared.
    expect(report.agents.filter((a) => a.done.length > 0).length).toBeGreaterThan(1);
    expect(report.agents.reduce((n, a) => n + a.done.length, 0)).toBe(40);

    // Every replica, and the server's disk, hold the same plan.
    const json = JSON.stringify(report.agents[0]!.snapshot);
    for (const agent of report.agents) {
      expect(JSON.stringify(agent.snapshot)).toBe(json);
      expect(agent.stateVector).toEqual(report.agents[0]!.stateVector);
    }
    await close();
    const doc = new Y.Doc();
    const stored = openFilePersistence(dir)('launch', doc);
    await stored.whenLoaded;
    const fromDisk = createPlan({ doc });
    expect(JSON.stringify(fromDisk.toJSON())).toBe(json);
    await stored.close();

    // Their progress went through the tools, so the plan's trace on disk has each agent's calls.
    const traceDoc = new Y.Doc();
    const storedTrace = openFilePersistence(dir)(traceDocId('launch'), traceDoc);
    await storedTrace.whenLoaded;
    const calls = readCalls(traceDoc);
    await storedTrace.close();
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.every((c) => c.tool === 'update_tasks' && c.outcome === 'ok')).toBe(true);
    const tracedActors = new Set(calls.map((c) => c.actor));
    for (const agent of report.agents.filter((a) => a.done.length > 0))
      expect(tracedActors).toContain(agent.actor);
  });

  it('plans with the add_tasks tool and writes step results when a model is configured', async () => {
    const { url } = await startServer();
    const requests: Array<{ tools?: unknown[]; messages: Array<{ content: string }> }> = [];
    const llm = createServer(async (req, res) => {
      const body = JSON.parse(await text(req)) as (typeof requests)[number];
      requests.push(body);
      const message = body.tools
        ? {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                id: 'call_1',
                type: 'function',
                function: {
                  name: 'add_tasks',
                  arguments: JSON.stringify({
                    tasks: [
                      { key: 'a', title: 'Write the announcement', steps: ['Draft it'] },
                      { key: 'b', title: 'Publish it', blockedBy: ['a'], steps: ['Post it'] },
                    ],
                  }),
                },
              },
            ],
          }
        : { role: 'assistant', content: `Done: ${body.messages[1]!.content.split('\n')[1]}` };
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ choices: [{ index: 0, message, finish_reason: 'stop' }] }));
    });
    await new Promise<void>((resolve) => llm.listen(0, '127.0.0.1', resolve));
    onCleanup(() => new Promise<void>((resolve) => llm.close(() => resolve())));
    const report = await runAgents({
      url,
      planId: 'with-model',
      count: 2,
      goal: 'Announce the launch',
      llm: { baseUrl: `http://127.0.0.1:${(llm.address() as AddressInfo).port}/v1`, model: 'stand-in' },
      timeoutMs: 20_000,
    });
    const tasks = report.agents[0]!.snapshot.tasks;
    expect(tasks.map((t) => [t.title, t.status])).toEqual([
      ['Write the announcement', 'done'],
      ['Draft it', 'done'],
      ['Publish it', 'done'],
      ['Post it', 'done'],
    ]);
    expect(tasks.find((t) => t.title === 'Draft it')!.note).toBe('Done: Step: Draft it');
    expect(requests[0]!.messages[1]!.content).toBe('Announce the launch');
    expect(requests).toHaveLength(3);
  });
});

describe('the cairn agents command', () => {
  it('starts a server of its own when given none, runs the plan to the end and prints what happens', async () => {
    const dir = await tempDir('cairn-agents-cli-');
    let out = '';
    const code = await runAgentsCli(
      [
        '--plan',
        'cli',
        '--count',
        '3',
        '--tasks',
        '6',
        '--work-ms',
        '1-2',
        '--data',
        dir,
        '--goal',
        'Ship it',
      ],
      { stdout: (t) => (out += t), stderr: () => undefined, env: {} },
    );
    expect(code).toBe(0);
    expect(out).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+\n3 agents on plan "cli"/);
    expect(out).toContain('planned 6 tasks for "Ship it"');
    expect(out.match(/ done /g)).toHaveLength(6);
    expect(out).toMatch(/plan done: agent:worker-1 \d, agent:worker-2 \d, agent:worker-3 \d\n$/);
  });

  it('refuses bad arguments, saying what is valid', async () => {
    const io = { stdout: () => undefined, stderr: () => undefined, env: {} };
    await expect(runAgentsCli(['--plan', 'x'], io)).rejects.toThrow('--count is required');
    await expect(runAgentsCli(['--plan', 'x', '--count', '99'], io)).rejects.toThrow('from 1 to 64');
    await expect(runAgentsCli(['--plan', 'x', '--count', '2', '--work-ms', '9-1'], io)).rejects.toThrow(
      'MIN-MAX',
    );
    await expect(runAgentsCli(['--plan', 'x', '--count', '2', '--token', 't'], io)).rejects.toThrow(
      '--token goes with --server',
    );
  });
});

function text(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => resolve(body));
  });
}
