// Distillers turn a finished task's trace into a skill draft. `chatCompletionsDistiller` asks the model auto-close
// uses (same endpoint settings); without one the server uses the offline distiller of @cairn/core.
import { argumentShape, SKILL_DRAFT_SHAPE, type TraceSample } from '@cairn/core/learning';
import { askForJson, type ChatCompletionsEndpoint, endpointFromEnv } from '../chat-completions.js';

/**
 * Writes a skill from a trace. Resolves to a draft (`SkillDraft`, checked by the caller) or anything else, which
 * is refused; may reject. Either way the job is retried later and nothing is stored.
 */
export interface Distiller {
  /** For the skill's author and the log, e.g. the model's name. */
  readonly name: string;
  distill(sample: TraceSample, signal: AbortSignal): Promise<unknown>;
}

const DISTILL_PROMPT = [
  'You turn the tool calls an assistant made to finish a task into a reusable procedure.',
  'You get the goal and the calls in order, each with its arguments and outcome ("ok" or an error code).',
  'Write the procedure that worked: the steps in order, each naming a tool the calls used and its argument',
  'shape with the values generalised ("<string>", "<number>"; keep statuses and other fixed vocabulary).',
  'Leave out calls that were refused from the steps; list them as pitfalls with how they were fixed.',
  'Give 1 to 5 short trigger phrases a user would say when asking for this again (keywords, not sentences).',
  `Answer with one JSON object and nothing else: ${SKILL_DRAFT_SHAPE}.`,
].join('\n');

/** What the model is shown: the goal and the calls, arguments as sent (they are generalised in the answer). */
export function distillRequest(sample: TraceSample): string {
  return JSON.stringify({
    goal: sample.goal,
    calls: sample.calls.map((c) => ({
      tool: c.tool,
      args: JSON.stringify(c.args).length > 1500 ? argumentShape(c.args) : c.args,
      outcome: c.outcome,
    })),
  });
}

export function chatCompletionsDistiller(endpoint: ChatCompletionsEndpoint): Distiller {
  return {
    name: endpoint.model,
    distill(sample, signal) {
      return askForJson(
        endpoint,
        [
          { role: 'system', content: DISTILL_PROMPT },
          { role: 'user', content: distillRequest(sample) },
        ],
        SKILL_DRAFT_SHAPE,
        signal,
      );
    },
  };
}

/** The distiller of the environment: the auto-close judge's endpoint (CAIRN_JUDGE_URL, _MODEL, _KEY), or null. */
export function distillerFromEnv(env: Record<string, string | undefined>): Distiller | null {
  const endpoint = endpointFromEnv(env);
  return endpoint ? chatCompletionsDistiller(endpoint) : null;
}
