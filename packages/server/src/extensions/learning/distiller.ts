// Distillers put a learned procedure into words. The offline distiller of @cairn/core works out the procedure
// itself (steps, agreed values, pitfalls) from the traces of a kind; a model configured (`chatCompletionsDistiller`,
// the endpoint auto-close uses) is given the same material and writes the prose: the name, the trigger phrases, a
// note per step and the fix of each pitfall. Its steps and tools stay the offline ones, so it cannot invent a call.
import { CairnError } from '@cairn/core';
import { argumentShape, type SkillDraft, shapeText, type TraceSample } from '@cairn/core/learning';
import { toCairnError } from '@cairn/core/protocol';
import * as z from 'zod';
import { askForJson, type ChatCompletionsEndpoint, endpointFromEnv } from '../../chat-completions.js';
import type { Logger } from '../../log.js';

/** What a model writes the prose from: the traces of the kind (the last is the newest) and the offline procedure. */
export interface DistillMaterial {
  samples: readonly TraceSample[];
  draft: SkillDraft;
}

/**
 * Writes a procedure's prose. Resolves to the model's answer (checked by `withProse`) or rejects when the model
 * could not be asked (unreachable, an HTTP error, past its deadline): the job is then retried later.
 */
export interface Distiller {
  /** For the skill's author and the log, e.g. the model's name. */
  readonly name: string;
  distill(material: DistillMaterial, signal: AbortSignal): Promise<unknown>;
}

export const PROSE_SHAPE =
  '{ "name": string (the kind of task, varying parts as <slots>), "triggers": string[] (1 to 10 short ' +
  'phrases), "notes": string[] (one per step, in order), "fixes": string[] (one per pitfall, in order) }';

const DISTILL_PROMPT = [
  'You describe a procedure an assistant followed to finish tasks of one kind, so it can be followed again.',
  'You get the goals of the tasks, the tool calls made for each (arguments and outcome: "ok" or an error code),',
  'and the procedure already worked out from them: its steps (tool and arguments; "<string>" marks a value that',
  'varied between tasks) and its pitfalls (refused calls and what worked instead). Do not change the steps.',
  'Write: a name for the kind of task (the words its goals share, the parts that vary as <slots>, e.g.',
  '"Book a table for <party> at <restaurant>"); 1 to 5 short trigger phrases a user would say (keywords);',
  'one short note per step saying what it is for; one fix per pitfall saying how to avoid the refusal.',
  `Answer with one JSON object and nothing else: ${PROSE_SHAPE}.`,
].join('\n');

/** What the model is shown: goals and calls (large arguments as their shape), and the offline procedure. */
export function distillRequest(material: DistillMaterial): string {
  return JSON.stringify({
    tasks: material.samples.map((sample) => ({
      goal: sample.goal,
      calls: sample.calls.map((c) => ({
        tool: c.tool,
        args: JSON.stringify(c.args).length > 1500 ? argumentShape(c.args) : c.args,
        outcome: c.outcome,
        ...(c.error ? { error: c.error } : {}),
      })),
    })),
    procedure: {
      steps: material.draft.steps.map((s, i) => `${i + 1}. ${s.tool} ${shapeText(s.args)}`),
      pitfalls: material.draft.pitfalls.map(
        (p) => `${p.tool} refused (${p.error}${p.message ? `: ${p.message}` : ''}); ${p.fix}`,
      ),
    },
  });
}

const ProseSchema = z.strictObject({
  name: z.string().trim().min(3).max(120),
  triggers: z.array(z.string().trim().min(2).max(120)).min(1).max(10),
  notes: z.array(z.string().trim().max(500)),
  fixes: z.array(z.string().trim().min(1).max(500)),
});

/**
 * The offline draft with the model's prose, or CairnError `invalid_argument` saying what is wrong with the answer
 * (not the shape, or a note or fix too many or too few).
 */
export function withProse(draft: SkillDraft, answer: unknown): SkillDraft {
  const parsed = ProseSchema.safeParse(answer);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || 'answer'}: ${i.message}`);
    throw new CairnError(
      'invalid_argument',
      `The answer is not ${PROSE_SHAPE}: ${issues.slice(0, 5).join('; ')}.`,
      {
        valid: PROSE_SHAPE,
      },
    );
  }
  const prose = parsed.data;
  if (prose.notes.length !== draft.steps.length || prose.fixes.length !== draft.pitfalls.length) {
    throw new CairnError(
      'invalid_argument',
      `The answer has ${prose.notes.length} notes and ${prose.fixes.length} fixes; the procedure has ` +
        `${draft.steps.length} steps and ${draft.pitfalls.length} pitfalls.`,
      { valid: PROSE_SHAPE },
    );
  }
  return {
    name: prose.name,
    triggers: prose.triggers,
    steps: draft.steps.map((s, i) => (prose.notes[i] ? { ...s, note: prose.notes[i] } : s)),
    pitfalls: draft.pitfalls.map((p, i) => ({ ...p, fix: prose.fixes[i]! })),
  };
}

/**
 * The procedure with the model's prose; when the model answered but not usably (not JSON, not the shape), the
 * offline procedure as it is, with a log line saying why. Rejects only when the model could not be asked.
 */
export async function writeProse(
  distiller: Distiller,
  material: DistillMaterial,
  signal: AbortSignal,
  logger: Logger,
  where: Record<string, unknown>,
): Promise<{ draft: SkillDraft; byModel: boolean }> {
  try {
    return { draft: withProse(material.draft, await distiller.distill(material, signal)), byModel: true };
  } catch (error) {
    const refused = toCairnError(error);
    // An answer that is not usable would be as unusable on a retry: the offline procedure stays.
    if (!(error instanceof CairnError) || refused.code !== 'invalid_argument') throw error;
    logger.warn("the model's answer was not a usable procedure; the offline procedure stays", {
      ...where,
      model: distiller.name,
      error: refused.message.slice(0, 500),
    });
    return { draft: material.draft, byModel: false };
  }
}

export function chatCompletionsDistiller(endpoint: ChatCompletionsEndpoint): Distiller {
  return {
    name: endpoint.model,
    distill(material, signal) {
      return askForJson(
        endpoint,
        [
          { role: 'system', content: DISTILL_PROMPT },
          { role: 'user', content: distillRequest(material) },
        ],
        PROSE_SHAPE,
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
