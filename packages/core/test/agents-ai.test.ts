// The AI SDK's own loop (generateText with stopWhen) over Cairn's tools and prepareStep, driven by the SDK's
// mock model: see test/agents/script.ts for the session and its checks.
import { generateText, isStepCount } from 'ai';
import { describe, expect, it } from 'vitest';
import { cairnTools } from '../src/agents/ai.js';
import { scriptedModel } from './agents/mock-model.js';
import { AGENT, FINAL_TEXT, scriptedSession } from './agents/script.js';

describe('@cairn/core/ai', () => {
  it('runs the scripted session in generateText: tools, errors, the plan once and deltas after', async () => {
    const session = scriptedSession();
    const { model, seen } = scriptedModel(session);
    const cairn = cairnTools(session.plan, { actor: AGENT });
    const result = await generateText({
      model,
      prompt: 'Plan the blog post and start on it.',
      tools: cairn.tools,
      prepareStep: cairn.prepareStep,
      stopWhen: isStepCount(10),
    });
    expect(result.text).toBe(FINAL_TEXT);
    session.check(seen);
    // A refused call is the SDK's tool error: the model read it as error text.
    const errorPart = result.steps[1]!.content.find((part) => part.type === 'tool-error');
    expect(errorPart).toBeDefined();
    cairn.session.destroy();
  });
});
