// Mastra's own Agent over Cairn's tools, instructions and prepareStep, driven by the AI SDK's mock model (which
// Mastra takes as a model): see test/agents/script.ts for the session and its checks.
import { Agent } from '@mastra/core/agent';
import { describe, expect, it } from 'vitest';
import { cairnMastra } from '../src/agents/mastra.js';
import { scriptedModel } from './agents/mock-model.js';
import { AGENT, FINAL_TEXT, scriptedSession } from './agents/script.js';

describe('@cairn/core/mastra', () => {
  it('runs the scripted session in Agent.generate: tools, errors, the plan once and deltas after', async () => {
    const session = scriptedSession();
    const { model, seen } = scriptedModel(session);
    const cairn = cairnMastra(session.plan, { actor: AGENT });
    const agent = new Agent({
      id: 'planner',
      name: 'planner',
      instructions: cairn.instructions,
      // The AI SDK's mock, which Mastra runs; its types come from Mastra's own copy of the provider interface.
      model: model as never,
      tools: cairn.tools,
    });
    const result = await agent.generate('Plan the blog post and start on it.', { maxSteps: 10 });
    expect(result.text).toBe(FINAL_TEXT);
    // Mastra checks a JSON Schema before the tool runs, and tells the model in its own words.
    session.check(seen, /Tool input validation failed for add_tasks/);
    cairn.session.destroy();
  });
});
