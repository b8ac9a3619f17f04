// The OpenAI Agents SDK's own loop (run(agent)) over Cairn's tools, instructions and input filter, driven by the
// SDK's scripted Model: see test/agents/script.ts for the session and its checks.
import { Agent, run, setTracingDisabled } from '@openai/agents';
import {
  assistantMessage,
  functionCall,
  modelResponder,
  type RecordedModelCall,
  ScriptedModel,
} from '@openai/agents/testing';
import { describe, expect, it } from 'vitest';
import { cairnAgentTools } from '../src/agents/openai-agents.js';
import { AGENT, FINAL_TEXT, type SeenCall, scriptedSession } from './agents/script.js';

setTracingDisabled(true);

type Item = Record<string, unknown>;

function textOf(item: Item): string {
  if (item['type'] === 'function_call_result')
    return JSON.stringify((item['output'] as Item)['text'] ?? item['output']);
  if (typeof item['content'] === 'string') return item['content'];
  return JSON.stringify(item);
}

describe('@cairn/core/openai-agents', () => {
  it('runs the scripted session in run(agent): strict tools, readable errors, the plan once and deltas after', async () => {
    const session = scriptedSession();
    const seen: SeenCall[] = [];
    const respond = (call: RecordedModelCall) => {
      const input = (Array.isArray(call.request.input) ? call.request.input : []) as Item[];
      seen.push({ system: call.request.systemInstructions ?? '', rest: input.map(textOf).join('\n') });
      const results = input.filter((i) => i['type'] === 'function_call_result');
      const last = results.at(-1);
      const move = session.next(seen.length - 1, last ? String((last['output'] as Item)['text']) : '');
      return typeof move === 'string'
        ? [assistantMessage(move)]
        : [functionCall(move.name, move.args, { callId: `c${seen.length}` })];
    };
    const model = new ScriptedModel(Array.from({ length: 5 }, () => modelResponder(respond)));
    const cairn = cairnAgentTools(session.plan, { actor: AGENT });
    const agent = new Agent({ name: 'planner', model, tools: cairn.tools, instructions: cairn.instructions });
    const result = await run(agent, 'Plan the blog post and start on it.', {
      maxTurns: 10,
      callModelInputFilter: cairn.callModelInputFilter,
    });
    expect(result.finalOutput).toBe(FINAL_TEXT);
    model.assertComplete();
    session.check(seen);
    // The tools reached the model in strict mode, with the toolkit's strict schemas.
    const sent = model.calls[0]!.request.tools.find((t) => t.name === 'add_tasks') as unknown as {
      strict: boolean;
      parameters: { additionalProperties: boolean };
    };
    expect(sent.strict).toBe(true);
    expect(sent.parameters.additionalProperties).toBe(false);
    cairn.session.destroy();
  });
});
