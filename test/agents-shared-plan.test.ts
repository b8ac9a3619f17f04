// Two agents on two frameworks share one plan through a real `cairn serve`: an AI SDK agent holding the live
// plan (@cairn/core/websocket) and a LangChain agent over the HTTP API (createHttpToolkit). Each adds a task; each
// is told of the other's in its next model call, as a delta after a system prompt that stays byte-identical.
// Then the HTTP toolkit alone: its actor, its refusals, its families, and a server that does not answer.
import { createHttpToolkit, createPlan } from '@cairn/core';
import { cairnTools } from '@cairn/core/ai';
import { cairnLangChain } from '@cairn/core/langchain';
import { AIMessage, type BaseMessage, HumanMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { generateText, isStepCount } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { createAgent, createMiddleware } from 'langchain';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { messageText, seenCall } from '../packages/core/test/agents/langchain-messages.js';
import type { SeenCall } from '../packages/core/test/agents/script.js';
import { cairnClient, seedPlan, startServer } from '../packages/server/test/helpers.js';

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};
type Prompt = Array<{ role: string; content: unknown }>;
const promptText = (prompt: Prompt) =>
  prompt
    .filter((m) => m.role !== 'system')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
    .join('\n');

/** Resolves once `predicate` holds for the document, checked on each of its updates. */
function whenDoc(doc: Y.Doc, predicate: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    if (predicate()) return resolve();
    const on = () => {
      if (!predicate()) return;
      doc.off('update', on);
      resolve();
    };
    doc.on('update', on);
  });
}

describe('two agents, two frameworks, one live plan', () => {
  it('each sees the other’s change in its next step, over WebSocket and over HTTP', async () => {
    const server = await startServer();
    const planId = 'shared-blog';
    // A plan with work in it already (on an empty one, re-rendering it whole is as cheap as any delta).
    await seedPlan(server, planId, [{ title: 'Outline the post' }, { title: 'Collect sources' }]);
    // The AI SDK agent holds the plan live.
    const doc = new Y.Doc();
    const connection = cairnClient(server.url, planId, doc);
    await connection.whenSynced();
    const live = createPlan({ doc, actor: 'agent:writer' });
    const titles = () => live.list().map((t) => t.title);

    // The LangChain agent goes through the HTTP API only.
    const http = createHttpToolkit({ url: server.http, plan: planId, actor: 'agent:editor' });
    const editorSeen: SeenCall[] = [];
    let editorStarted: () => void = () => undefined;
    const editorFirstCall = new Promise<void>((resolve) => {
      editorStarted = resolve;
    });
    const editorScript = [
      () => {
        editorStarted();
        return new AIMessage({
          content: '',
          tool_calls: [{ name: 'add_tasks', args: { tasks: [{ title: 'Edit intro' }] }, id: 'e1' }],
        });
      },
      () => new AIMessage('Edited.'),
    ];
    let editorModel = fakeModel();
    for (const step of editorScript) {
      editorModel = editorModel.respond((messages: BaseMessage[]) => {
        editorSeen.push(seenCall(messages));
        return step();
      });
    }
    // The editor's second model call waits until the writer's task has reached the server (the fake model
    // cannot wait itself): a middleware of the test's, outside Cairn's, so Cairn prepares the call after it.
    const gate = createMiddleware({
      name: 'WaitForWriter',
      wrapModelCall: async (request, handler) => {
        if (editorSeen.length === 1) {
          await whenDoc(doc, () => titles().includes('Draft intro'));
          await connection.whenAcknowledged();
        }
        return handler(request);
      },
    });
    const editor = cairnLangChain(http);
    const editorAgent = createAgent({
      model: editorModel,
      tools: editor.tools,
      middleware: [gate, editor.middleware],
    });

    const writerSeen: Array<{ system: string; rest: string }> = [];
    const writerModel = new MockLanguageModelV4({
      doGenerate: async ({ prompt }) => {
        const p = prompt as Prompt;
        writerSeen.push({
          system: p.find((m) => m.role === 'system')?.content as string,
          rest: promptText(p),
        });
        const call = (name: string, args: unknown) => ({
          content: [
            {
              type: 'tool-call' as const,
              toolCallId: `w${writerSeen.length}`,
              toolName: name,
              input: JSON.stringify(args),
            },
          ],
          finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' },
          usage,
          warnings: [],
        });
        switch (writerSeen.length) {
          case 1:
            // The editor has read the plan before the writer changes it.
            await editorFirstCall;
            return call('add_tasks', { tasks: [{ title: 'Draft intro' }] });
          case 2:
            // Its next move waits until the editor's task has arrived; the call after it must be told of it.
            await whenDoc(doc, () => titles().includes('Edit intro'));
            return call('list_tasks', {});
          default:
            return {
              content: [{ type: 'text' as const, text: 'Written.' }],
              finishReason: { unified: 'stop' as const, raw: 'stop' },
              usage,
              warnings: [],
            };
        }
      },
    });
    const writer = cairnTools(live);

    const [written, edited] = await Promise.all([
      generateText({
        model: writerModel,
        prompt: 'Write the intro.',
        tools: writer.tools,
        prepareStep: writer.prepareStep,
        stopWhen: isStepCount(6),
      }),
      editorAgent.invoke({ messages: [new HumanMessage('Edit the intro.')] }, { recursionLimit: 10 }),
    ]);
    expect(written.text).toBe('Written.');
    expect(messageText(edited.messages.at(-1)!)).toBe('Edited.');

    // The editor's next call after the writer's change was told of it, as a delta.
    expect(editorSeen).toHaveLength(2);
    expect(editorSeen[1]!.system).toBe(editorSeen[0]!.system);
    expect(editorSeen[1]!.rest).toMatch(/Changes since your last turn:[\s\S]*Draft intro[\s\S]*agent:writer/);
    // The writer's next call after the editor's change was told of it, as a delta.
    expect(writerSeen).toHaveLength(3);
    for (const call of writerSeen) expect(call.system).toBe(writerSeen[0]!.system);
    expect(writerSeen[2]!.rest).toMatch(/Changes since your last turn:[\s\S]*Edit intro[\s\S]*agent:editor/);
    // Neither is told of its own change.
    expect(writerSeen[2]!.rest).not.toMatch(/Draft intro[^\n]*added by agent:writer/);

    // The server's plan holds both tasks, each written by its agent.
    await connection.whenAcknowledged();
    const handle = await server.server.hub.openPlan(planId);
    const onServer = createPlan({ doc: handle.doc, actor: 'agent:check' });
    const byTitle = new Map(onServer.list().map((t) => [t.title, t]));
    expect(byTitle.get('Draft intro')?.createdBy).toBe('agent:writer');
    expect(byTitle.get('Edit intro')?.createdBy).toBe('agent:editor');
    onServer.destroy();
    handle.release();
    writer.session.destroy();
    live.destroy();
  });
});

describe('createHttpToolkit', () => {
  it('runs calls as its actor, refuses a malformed one with the toolkit’s error, and offers cairn_compact', async () => {
    const server = await startServer();
    const planId = 'http-only';
    await seedPlan(server, planId, [{ title: 'Existing task' }]);
    const http = createHttpToolkit({
      url: server.http,
      plan: planId,
      actor: 'agent:remote',
      families: ['cairn_compact'],
    });
    expect(http.names).toEqual(['read_tasks', 'write_tasks', 'claim_task']);
    const added = (await http.dispatch('write_tasks', { tasks: [{ title: 'Over HTTP' }] })) as {
      added: Array<{ title: string }>;
    };
    expect(added.added[0]!.title).toBe('Over HTTP');
    const handle = await server.server.hub.openPlan(planId);
    const onServer = createPlan({ doc: handle.doc, actor: 'agent:check' });
    const count = onServer.list().length;
    // A malformed call (raw JSON text, as a model sends it) is the toolkit's refusal, and writes nothing.
    const refused = await http.dispatch('write_tasks', '{"tasks":[{"title":5}]}');
    expect(refused).toMatchObject({ error: { code: 'invalid_argument' } });
    expect((refused as { error: { message: string } }).error.message).toMatch(/tasks\.0\.title/);
    // A tool outside the families it was given is refused by the server.
    const outside = await http.dispatch('add_tasks', { tasks: [{ title: 'x' }] });
    expect(outside).toMatchObject({ error: { code: 'unknown_tool' } });
    expect(onServer.list()).toHaveLength(count);
    expect(onServer.list().find((t) => t.title === 'Over HTTP')?.createdBy).toBe('agent:remote');
    onServer.destroy();
    handle.release();
    // A server that does not answer is an error the model can read, never a throw.
    const gone = createHttpToolkit({ url: 'http://127.0.0.1:1', plan: planId, actor: 'agent:remote' });
    const unreachable = await gone.dispatch('list_tasks', {});
    expect(unreachable).toMatchObject({ error: { code: 'internal' } });
    expect((unreachable as { error: { message: string } }).error.message).toMatch(/did not answer/);
  });
});
