// The learned-skill format (docs/SCHEMA.md, "Skills", format 2): a procedure with trigger phrases, ordered steps
// naming tools and their arguments (values the traces agreed on, placeholders where they varied), and pitfalls,
// kept with its versions, its record of use and the traces it was learned from. A distiller's answer is a
// `SkillDraft`, checked here before anything is stored. Format 1 skills (without examples) still open.
import * as z from 'zod/mini';
import { CairnError } from '../errors.js';
import { ActorSchema } from '../schema.js';
import { describeIssues } from '../validate.js';
import { JsonValueSchema } from './shape.js';

/** Bumped when the stored skill layout changes incompatibly: 2 added `examples`. */
export const SKILL_FORMAT = 2;

export const SkillStepSchema = z.strictObject({
  tool: z.string().check(z.minLength(1), z.maxLength(100)),
  /**
   * The arguments: values every trace it was learned from agreed on kept, the others generalised (`"<string>"`);
   * learned from one trace, only vocabulary (`"done"`) is kept.
   */
  args: JsonValueSchema,
  note: z.optional(z.string().check(z.maxLength(500))),
});

export const SkillPitfallSchema = z.strictObject({
  tool: z.string().check(z.minLength(1), z.maxLength(100)),
  /** The error code the call was refused with. */
  error: z.string().check(z.minLength(1), z.maxLength(100)),
  /** How it was fixed (what worked next), or what to avoid. */
  fix: z.string().check(z.maxLength(500)),
  /** What the refusal said, as the agent was told it. */
  message: z.optional(z.string().check(z.maxLength(500))),
});

/** What a distiller produces. */
export const SkillDraftSchema = z.strictObject({
  name: z.string().check(z.trim(), z.minLength(3), z.maxLength(120)),
  triggers: z
    .array(z.string().check(z.trim(), z.minLength(2), z.maxLength(120)))
    .check(z.minLength(1), z.maxLength(10)),
  steps: z.array(SkillStepSchema).check(z.minLength(1), z.maxLength(50)),
  pitfalls: z.array(SkillPitfallSchema).check(z.maxLength(20)),
});
export type SkillDraft = z.infer<typeof SkillDraftSchema>;
export type SkillStep = z.infer<typeof SkillStepSchema>;
export type SkillPitfall = z.infer<typeof SkillPitfallSchema>;

export const SKILL_DRAFT_SHAPE =
  '{ "name": string, "triggers": string[] (1 to 10 short phrases), "steps": [{ "tool": string, "args": object ' +
  '(argument shape, values generalised as "<string>", "<number>"), "note"?: string }] (1 to 50, in order), ' +
  '"pitfalls": [{ "tool": string, "error": string (error code), "fix": string, "message"?: string (what the refusal said) }] }';

/** Who wrote a version: a model (its name), or the offline distiller from the tool sequence alone. */
export const SkillAuthorSchema = z.union([
  z.strictObject({ kind: z.literal('model'), model: z.string().check(z.minLength(1), z.maxLength(200)) }),
  z.strictObject({ kind: z.literal('offline') }),
]);
export type SkillAuthor = z.infer<typeof SkillAuthorSchema>;

export const SkillStatsSchema = z.strictObject({
  /** Tasks on which this version was offered and that have closed. */
  done: z.int().check(z.minimum(0)),
  failed: z.int().check(z.minimum(0)),
  consecutiveFailures: z.int().check(z.minimum(0)),
});
export type SkillStats = z.infer<typeof SkillStatsSchema>;

export const SkillVersionSchema = z.extend(SkillDraftSchema, {
  version: z.int().check(z.minimum(1)),
  author: SkillAuthorSchema,
  learnedAt: z.number(),
  learnedBy: ActorSchema,
  /** The task (or conversation) it was learned from. */
  source: z.strictObject({
    planId: z.string().check(z.minLength(1), z.maxLength(256)),
    taskId: z.nullable(z.string().check(z.maxLength(64))),
    goal: z.string().check(z.maxLength(2000)),
  }),
  stats: SkillStatsSchema,
});
export type SkillVersion = z.infer<typeof SkillVersionSchema>;

export const SKILL_STATUSES = ['active', 'retired'] as const;
export type SkillStatus = (typeof SKILL_STATUSES)[number];

/** One call of a trace a skill was learned from, as it was made. */
export const SkillExampleCallSchema = z.strictObject({
  tool: z.string().check(z.minLength(1), z.maxLength(100)),
  args: JsonValueSchema,
  /** `ok`, or the error code of the refusal. */
  outcome: z.string().check(z.minLength(1), z.maxLength(100)),
  error: z.optional(z.string().check(z.maxLength(500))),
});
export type SkillExampleCall = z.infer<typeof SkillExampleCallSchema>;

/** A trace a skill was learned from: the goal and its calls. The next trace of the kind is distilled with these. */
export const SkillExampleSchema = z.strictObject({
  planId: z.string().check(z.minLength(1), z.maxLength(256)),
  taskId: z.nullable(z.string().check(z.maxLength(64))),
  goal: z.string().check(z.maxLength(2000)),
  calls: z.array(SkillExampleCallSchema).check(z.maxLength(50)),
});
export type SkillExample = z.infer<typeof SkillExampleSchema>;

/** What a distiller learns from: a goal and the calls made for it, in order (a finished task's trace, or a kept example). */
export interface TraceSample {
  planId: string;
  /** The task that closed as done, or null when learning from a whole conversation. */
  taskId: string | null;
  goal: string;
  calls: ReadonlyArray<SkillExampleCall>;
}

const SkillFields = {
  id: z.string().check(z.minLength(1), z.maxLength(64)),
  scope: z.string().check(z.minLength(1), z.maxLength(256)),
  status: z.enum(SKILL_STATUSES),
  /** Why it was retired or restored, and by whom (in `updatedBy`). */
  statusReason: z.nullable(z.string().check(z.maxLength(500))),
  /** Every version, oldest first; the last is the one offered. */
  versions: z.array(SkillVersionSchema).check(z.minLength(1)),
  updatedAt: z.number(),
  updatedBy: ActorSchema,
};

const SkillFormat2Schema = z.strictObject({
  format: z.literal(SKILL_FORMAT),
  ...SkillFields,
  /** The traces of this kind it was learned from, oldest first (the last `SKILL_LIMITS.examples`). */
  examples: z.array(SkillExampleSchema).check(z.maxLength(20)),
});

/** Format 1, before examples were kept: it opens as format 2 with none. */
const SkillFormat1Schema = z.pipe(
  z.strictObject({ format: z.literal(1), ...SkillFields }),
  z.transform((skill) => ({
    ...skill,
    format: SKILL_FORMAT as typeof SKILL_FORMAT,
    examples: [] as SkillExample[],
  })),
);

/** A stored skill, of this format or format 1 (read as this format). */
export const SkillSchema = z.union([SkillFormat2Schema, SkillFormat1Schema]);
export type Skill = z.infer<typeof SkillFormat2Schema>;

/** The version a skill offers now. */
export function currentVersion(skill: Skill): SkillVersion {
  return skill.versions.at(-1)!;
}

/** done / (done + failed) of the current version, or null before any outcome. */
export function successRate(version: SkillVersion): number | null {
  const total = version.stats.done + version.stats.failed;
  return total === 0 ? null : version.stats.done / total;
}

/**
 * Checks a distiller's answer: the draft, or CairnError `invalid_argument` saying what is wrong. Steps may only
 * name tools the trace used (`tools`), so a model cannot invent a procedure.
 */
export function parseSkillDraft(output: unknown, tools: ReadonlySet<string>): SkillDraft {
  const parsed = SkillDraftSchema.safeParse(output);
  if (!parsed.success) {
    const { text } = describeIssues(parsed.error, { root: 'answer', max: 5 });
    throw new CairnError('invalid_argument', `The skill is not ${SKILL_DRAFT_SHAPE}: ${text}.`, {
      valid: SKILL_DRAFT_SHAPE,
    });
  }
  const invented = parsed.data.steps.map((s) => s.tool).filter((tool) => !tools.has(tool));
  if (invented.length > 0) {
    throw new CairnError(
      'invalid_argument',
      `The skill names tools the trace never used: ${[...new Set(invented)].join(', ')}; ` +
        `the trace used ${[...tools].join(', ')}.`,
      { valid: [...tools] },
    );
  }
  return parsed.data;
}
