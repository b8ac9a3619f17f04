// A scope's skill library: one document per scope (`<scope>#skills`; the scope is what a plan id starts with,
// `acme` for `acme:conv:7`). Skills are written only by the server (learning, outcomes, retire / restore), each
// change in a transaction by its actor and listed in `changes` (docs/SCHEMA.md, "Skills").
import type * as Y from 'yjs';
import * as z from 'zod/mini';
import { CairnError } from '../errors.js';
import { newTaskId } from '../ids.js';
import { type Actor, ActorSchema, type Json } from '../schema.js';
import { validEntries } from '../validate.js';
import { MAX_EXAMPLES } from './kind.js';
import { contentWords } from './match.js';
import {
  currentVersion,
  SKILL_FORMAT,
  type Skill,
  type SkillAuthor,
  type SkillDraft,
  type SkillExample,
  type SkillExampleCall,
  SkillSchema,
  type SkillStatus,
  type SkillStep,
  type SkillVersion,
} from './skill.js';

export const SKILLS_SUFFIX = '#skills';

export const SKILL_KEYS = {
  /** Y.Map<skillId, Skill>: each skill as one JSON value, replaced whole by its single writer, the server. */
  skills: 'skills',
  /** Y.Array<SkillChange>: who changed which skill, how and when, oldest first (bounded). */
  changes: 'changes',
} as const;

/** The scope of a plan id: what comes before the first `:` (the whole id when it has none). */
export function scopeOf(planId: string): string {
  const colon = planId.indexOf(':');
  return colon > 0 ? planId.slice(0, colon) : planId;
}

export function skillsDocId(scope: string): string {
  return `${scope}${SKILLS_SUFFIX}`;
}

/** The scope a skills document belongs to, or null when `docId` is not one. */
export function scopeOfSkillsDoc(docId: string): string | null {
  if (!docId.endsWith(SKILLS_SUFFIX)) return null;
  const scope = docId.slice(0, -SKILLS_SUFFIX.length);
  return scope.length > 0 && !scope.includes(':') ? scope : null;
}

export const SKILL_CHANGES = ['learned', 'relearned', 'retired', 'restored', 'outcome'] as const;
export const SkillChangeSchema = z.object({
  at: z.number(),
  by: ActorSchema,
  skill: z.string(),
  version: z.int(),
  change: z.enum(SKILL_CHANGES),
  detail: z.string().check(z.maxLength(500)),
});
export type SkillChange = z.infer<typeof SkillChangeSchema>;

/** Versions kept per skill, and changes kept per library. */
export const SKILL_LIMITS = { versions: 20, changes: 1000 } as const;

function skillsMap(doc: Y.Doc): Y.Map<unknown> {
  return doc.getMap(SKILL_KEYS.skills);
}

/** Every stored skill (malformed entries skipped), newest change first. */
export function readSkills(doc: Y.Doc): Skill[] {
  return validEntries(SkillSchema, skillsMap(doc).values()).sort(
    (a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : 1),
  );
}

export function readSkill(doc: Y.Doc, id: string): Skill | null {
  const parsed = SkillSchema.safeParse(skillsMap(doc).get(id));
  return parsed.success ? parsed.data : null;
}

export function requireSkill(doc: Y.Doc, scope: string, id: string): Skill {
  const skill = readSkill(doc, id);
  if (skill) return skill;
  const known = readSkills(doc).map((s) => s.id);
  throw new CairnError(
    'not_found',
    `There is no skill "${id}" in scope "${scope}"; skills: ${known.length > 0 ? known.join(', ') : '(none)'}.`,
    { valid: known },
  );
}

/** The changes of one skill (or all), oldest first. */
export function readChanges(doc: Y.Doc, skillId?: string): SkillChange[] {
  const changes = validEntries(SkillChangeSchema, doc.getArray<unknown>(SKILL_KEYS.changes).toArray());
  return skillId === undefined ? changes : changes.filter((change) => change.skill === skillId);
}

/** The tools in order, each run of the same tool counted once: two procedures are the same only if these are. */
function signature(steps: ReadonlyArray<{ tool: string }>): string {
  return steps
    .map((s) => s.tool)
    .filter((tool, i, all) => tool !== all[i - 1])
    .join('>');
}

/** The same calls: each step's tool and argument shape, in order. */
function sameCalls(a: ReadonlyArray<SkillStep>, b: ReadonlyArray<SkillStep>): boolean {
  const calls = (steps: ReadonlyArray<SkillStep>) => JSON.stringify(steps.map((s) => [s.tool, s.args]));
  return calls(a) === calls(b);
}

const PLACEHOLDER = /^<[^<>]*>$/;

/**
 * Whether a task's successful calls are the steps' calls: one per step, in order, each naming its tool with the
 * same argument keys at every level, the same number of list items, and every value the step gives as such.
 */
export function followsSteps(
  steps: ReadonlyArray<SkillStep>,
  calls: ReadonlyArray<SkillExampleCall>,
): boolean {
  const ok = calls.filter((c) => c.outcome === 'ok');
  return (
    ok.length === steps.length &&
    ok.every((call, i) => call.tool === steps[i]!.tool && fits(steps[i]!.args, call.args))
  );
}

function fits(step: Json, call: Json): boolean {
  if (typeof step === 'string' && PLACEHOLDER.test(step)) return true;
  if (Array.isArray(step) || Array.isArray(call)) {
    return (
      Array.isArray(step) &&
      Array.isArray(call) &&
      step.length === call.length &&
      step.every((s, i) => fits(s, call[i]!))
    );
  }
  if (step !== null && typeof step === 'object') {
    if (call === null || typeof call !== 'object') return false;
    const keys = Object.keys(step).sort();
    return (
      keys.join('\n') === Object.keys(call).sort().join('\n') && keys.every((k) => fits(step[k]!, call[k]!))
    );
  }
  return JSON.stringify(step) === JSON.stringify(call);
}

function wordsKey(text: string): string {
  return [...new Set(contentWords(text))].sort().join(' ');
}

/**
 * Whether a draft re-learns a version's procedure: the same tool sequence, and the same name or a trigger phrase
 * in common (compared by their content words, so "Book a table" and "book table" are one phrase).
 */
export function sameProcedure(version: SkillVersion, draft: SkillDraft): boolean {
  if (signature(version.steps) !== signature(draft.steps)) return false;
  if (wordsKey(version.name) === wordsKey(draft.name)) return true;
  const known = new Set(version.triggers.map(wordsKey));
  return draft.triggers.some((t) => known.has(wordsKey(t)));
}

export interface LearnInput {
  scope: string;
  draft: SkillDraft;
  /** The skill of the trace's kind (`skillOfKind`): its next version, or its use counted. Default: found by procedure. */
  skillId?: string | null;
  /** The trace it was learned from, kept with the skill to learn the next one of its kind with. */
  example?: SkillExample | null;
  author: SkillAuthor;
  source: SkillVersion['source'];
  actor: Actor;
  now: number;
}

/**
 * Stores a learned draft: a new version of the skill with the same procedure (which becomes active again), or a
 * new skill. One transaction, so a reader never sees half of it.
 */
export function learnSkill(doc: Y.Doc, input: LearnInput): { skill: Skill; created: boolean } {
  const existing =
    (input.skillId ? readSkill(doc, input.skillId) : null) ??
    readSkills(doc).find((s) => sameProcedure(currentVersion(s), input.draft));
  const examples = [...(existing?.examples ?? []), ...(input.example ? [input.example] : [])].slice(
    -MAX_EXAMPLES,
  );
  const by = input.author.kind === 'model' ? `model ${input.author.model}` : 'the offline distiller';
  const from = `from ${input.source.planId}${input.source.taskId ? ` task ${input.source.taskId}` : ''}`;
  const current = existing ? currentVersion(existing) : null;
  const followed = input.example
    ? current !== null && followsSteps(current.steps, input.example.calls)
    : current !== null && sameCalls(current.steps, input.draft.steps);
  if (existing && current && followed) {
    // A task done with the calls of the current version (typically by following it) is counted as that version's
    // success; a new version would start its success rate over and hide it. What the traces of the kind now agree
    // on sharpens the version's text in place: every task counted for it made calls that fit the new text too.
    // Only a draft made with the skill's own examples (`skillId`) speaks for them all; any other keeps the text.
    const refined: SkillVersion =
      input.skillId === existing.id ? { ...current, ...input.draft, author: input.author } : current;
    const skill: Skill = {
      ...existing,
      versions: [...existing.versions.slice(0, -1), refined],
      examples,
      ...(existing.status === 'retired' ? { status: 'active' as const, statusReason: 'learned again' } : {}),
      updatedAt: input.now,
      updatedBy: input.actor,
    };
    write(doc, skill, input.actor, {
      change: 'relearned',
      detail: `${by}, ${from}: the calls of version ${current.version}, so no new version`,
    });
    return { skill, created: false };
  }
  const version = (n: number): SkillVersion => ({
    ...input.draft,
    version: n,
    author: input.author,
    learnedAt: input.now,
    learnedBy: input.actor,
    source: input.source,
    stats: { done: 0, failed: 0, consecutiveFailures: 0 },
  });
  const skill: Skill = existing
    ? {
        ...existing,
        status: 'active',
        statusReason: existing.status === 'retired' ? 'learned again' : existing.statusReason,
        versions: [...existing.versions, version(currentVersion(existing).version + 1)].slice(
          -SKILL_LIMITS.versions,
        ),
        examples,
        updatedAt: input.now,
        updatedBy: input.actor,
      }
    : {
        format: SKILL_FORMAT,
        id: newTaskId((id) => skillsMap(doc).has(id)),
        scope: input.scope,
        status: 'active',
        statusReason: null,
        versions: [version(1)],
        examples,
        updatedAt: input.now,
        updatedBy: input.actor,
      };
  write(doc, skill, input.actor, {
    change: existing ? 'relearned' : 'learned',
    detail: `${by}, ${from}`,
  });
  return { skill, created: !existing };
}

/** Retires or restores a skill; a retired skill is never offered. */
export function setSkillStatus(
  doc: Y.Doc,
  scope: string,
  id: string,
  status: SkillStatus,
  change: { actor: Actor; now: number; reason?: string | null },
): Skill {
  const before = requireSkill(doc, scope, id);
  const current = currentVersion(before);
  const skill: Skill = {
    ...before,
    status,
    statusReason: change.reason ?? null,
    // Restoring gives the skill a fresh run of chances.
    versions:
      status === 'active'
        ? [
            ...before.versions.slice(0, -1),
            { ...current, stats: { ...current.stats, consecutiveFailures: 0 } },
          ]
        : before.versions,
    updatedAt: change.now,
    updatedBy: change.actor,
  };
  write(doc, skill, change.actor, {
    change: status === 'retired' ? 'retired' : 'restored',
    detail: change.reason ?? '',
  });
  return skill;
}

/**
 * Counts a closed task on which `version` of the skill was offered. After `retireAfter` failures in a row the
 * skill is retired. An outcome for an older version counts for that version only. Null for an unknown skill.
 */
export function recordSkillOutcome(
  doc: Y.Doc,
  id: string,
  versionNumber: number,
  outcome: 'done' | 'failed',
  change: { actor: Actor; now: number; retireAfter: number; taskId: string },
): Skill | null {
  const before = readSkill(doc, id);
  if (!before) return null;
  const index = before.versions.findIndex((v) => v.version === versionNumber);
  if (index < 0) return null;
  const v = before.versions[index]!;
  const stats =
    outcome === 'done'
      ? { done: v.stats.done + 1, failed: v.stats.failed, consecutiveFailures: 0 }
      : {
          done: v.stats.done,
          failed: v.stats.failed + 1,
          consecutiveFailures: v.stats.consecutiveFailures + 1,
        };
  const versions = before.versions.map((x, i) => (i === index ? { ...x, stats } : x));
  const isCurrent = index === before.versions.length - 1;
  const retire = isCurrent && before.status === 'active' && stats.consecutiveFailures >= change.retireAfter;
  const skill: Skill = {
    ...before,
    versions,
    ...(retire
      ? { status: 'retired' as const, statusReason: `${stats.consecutiveFailures} failures in a row` }
      : {}),
    updatedAt: change.now,
    updatedBy: change.actor,
  };
  doc.transact(() => {
    write(doc, skill, change.actor, {
      change: 'outcome',
      detail: `task ${change.taskId} ${outcome} (version ${versionNumber})`,
      version: versionNumber,
    });
    if (retire) {
      appendChange(doc, {
        at: change.now,
        by: change.actor,
        skill: id,
        version: versionNumber,
        change: 'retired',
        detail: skill.statusReason ?? '',
      });
    }
  }, change.actor);
  return skill;
}

function write(
  doc: Y.Doc,
  skill: Skill,
  actor: Actor,
  change: { change: SkillChange['change']; detail: string; version?: number },
): void {
  doc.transact(() => {
    skillsMap(doc).set(skill.id, skill);
    appendChange(doc, {
      at: skill.updatedAt,
      by: actor,
      skill: skill.id,
      version: change.version ?? currentVersion(skill).version,
      change: change.change,
      detail: change.detail.slice(0, 500),
    });
  }, actor);
}

function appendChange(doc: Y.Doc, change: SkillChange): void {
  const changes = doc.getArray<unknown>(SKILL_KEYS.changes);
  changes.push([change]);
  if (changes.length > SKILL_LIMITS.changes) changes.delete(0, changes.length - SKILL_LIMITS.changes);
}
