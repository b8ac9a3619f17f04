// The learning API over HTTP: a scope's skills (list with versions and success rates, one skill with its
// changes, retire / restore), a plan's trace, and learning from a conversation on demand (docs/PROTOCOL.md).
import { CairnError } from '@cairn/core';
import {
  currentVersion,
  readChanges,
  readSkills,
  renderSkill,
  requireSkill,
  SKILL_STATUSES,
  type Skill,
  setSkillStatus,
  skillsDocId,
  successRate,
  traceDocId,
} from '@cairn/core/learning';
import type { Hono } from 'hono';
import * as z from 'zod';
import { type Grant, type Role, scopeWhollyCovered } from '../../auth.js';
import { jsonResponse, textResponse } from '../../http/app.js';
import {
  type PlanRoutesOptions,
  parseBody,
  readBody,
  subjectOf,
  userActor,
  withPlan,
  withPlanOrBlank,
} from '../../http/plans.js';
import { authorizeRequest, requestToken } from '../../http/routes.js';
import type { SyncHub } from '../../hub/hub.js';
import type { Learner } from './learner.js';

export interface LearningRoutesOptions {
  /** Whether the store holds a document, asked before loading it so a read creates nothing. */
  planExists?: PlanRoutesOptions['planExists'];
  /** Clock for the time of a retire / restore. Default `Date.now`. */
  now?: () => number;
}

export function registerLearningRoutes(
  app: Hono,
  hub: SyncHub,
  learner: Learner,
  options: LearningRoutesOptions = {},
): void {
  const now = options.now ?? Date.now;

  app.get('/api/scopes/:scope/skills', async (c) => {
    const scope = c.req.param('scope');
    await authorizeScope(hub, c.req.raw, scope, 'read');
    // A scope that never learned anything reads as empty.
    const skills = await withPlanOrBlank(hub, options, skillsDocId(scope), (doc) => readSkills(doc));
    return jsonResponse({ scope, skills: skills.map(skillView) });
  });

  app.get('/api/scopes/:scope/skills/:skillId', async (c) => {
    const scope = c.req.param('scope');
    const skillId = c.req.param('skillId');
    await authorizeScope(hub, c.req.raw, scope, 'read');
    const { skill, changes } = await withPlanOrBlank(hub, options, skillsDocId(scope), (doc) => ({
      skill: requireSkill(doc, scope, skillId),
      changes: readChanges(doc, skillId),
    }));
    return jsonResponse({ skill: skillView(skill), text: renderSkill(skill), changes });
  });

  app.patch('/api/scopes/:scope/skills/:skillId', async (c) => {
    const scope = c.req.param('scope');
    const grant = await authorizeScope(hub, c.req.raw, scope, 'write');
    // Retiring or restoring changes what every plan of the scope is offered: a token for one plan may not.
    if (!scopeWhollyCovered(grant.pattern, scope)) {
      throw new CairnError(
        'forbidden',
        `Changing the skills of scope "${scope}" needs a token for the whole scope (plan "${scope}:*" or ` +
          `a pattern covering it), role write or admin; this token is for "${grant.pattern}".`,
        { plan: grant.pattern, needs: `${scope}:*` },
      );
    }
    const actor = userActor(subjectOf(hub, grant));
    const body = parseSkillPatch(await readBody(c.req.raw, false));
    const handle = await hub.openPlan(skillsDocId(scope));
    try {
      const skill = setSkillStatus(handle.doc, scope, c.req.param('skillId'), body.status, {
        actor,
        now: now(),
        reason: body.reason ?? null,
      });
      await handle.flush();
      return jsonResponse({ skill: skillView(skill) });
    } finally {
      handle.release();
    }
  });

  app.get('/api/plans/:plan/traces', async (c) => {
    const planId = c.req.param('plan');
    await authorizeRequest(hub, c.req.raw, planId, 'read');
    const exists =
      learner.hasUnwrittenCalls(planId) ||
      hub.isLoaded(traceDocId(planId)) ||
      (options.planExists?.(traceDocId(planId)) ?? true);
    const calls = exists ? await learner.readTrace(planId) : [];
    return jsonResponse({ plan: planId, bound: learner.bound, calls });
  });

  app.get('/api/plans/:plan/learned', async (c) => {
    const planId = c.req.param('plan');
    await authorizeRequest(hub, c.req.raw, planId, 'read');
    const message = new URL(c.req.url).searchParams.get('message');
    return withPlan(hub, options, planId, async () =>
      textResponse(await learner.learnedFor(planId, message), 200, {
        'content-type': 'text/plain; charset=utf-8',
        'cache-control': 'no-store',
      }),
    );
  });

  app.post('/api/plans/:plan/distill', async (c) => {
    const planId = c.req.param('plan');
    const grant = await authorizeRequest(hub, c.req.raw, planId, 'write');
    const actor = userActor(subjectOf(hub, grant));
    const body = parseDistill(await readBody(c.req.raw, true));
    return withPlan(hub, options, planId, async () => {
      const result = await learner.distill(planId, { taskId: body.taskId ?? null, actor });
      if (result.status === 'learned') return jsonResponse({ ...result, skill: skillView(result.skill) });
      const { job } = result;
      // Accepted: the sweep retries it; the answer says why it did not work now.
      return jsonResponse(
        {
          status: 'queued',
          job: { id: job.id, attempts: job.attempts, nextAt: job.nextAt, lastError: job.lastError },
        },
        202,
      );
    });
  });
}

/** A skill as the API shows it: the stored skill with its current version's name, triggers and success rate. */
export function skillView(skill: Skill) {
  const current = currentVersion(skill);
  return {
    ...skill,
    name: current.name,
    triggers: current.triggers,
    version: current.version,
    successRate: successRate(current),
    writtenByModel: current.author.kind === 'model',
    versions: skill.versions.map((v) => ({ ...v, successRate: successRate(v) })),
  };
}

/** The grant on a scope's skills, with the HTTP way to pass a token in its refusal. */
async function authorizeScope(hub: SyncHub, request: Request, scope: string, needs: Role): Promise<Grant> {
  if (scope.includes(':')) {
    throw new CairnError(
      'invalid_argument',
      `"${scope}" is not a scope: a scope is what a plan id starts with, before its first ":" (acme for acme:conv:7).`,
      { field: 'scope' },
    );
  }
  hub.validatePlanId(skillsDocId(scope));
  return hub.auth.authorizeScope(requestToken(hub, request), scope, needs);
}

const SkillPatchSchema = z.strictObject({
  status: z.enum(SKILL_STATUSES),
  reason: z.string().trim().min(1).max(500).optional(),
});
const SKILL_PATCH_SHAPE = `{ "status": ${SKILL_STATUSES.join(' | ')}, "reason"?: string (at most 500 characters) }`;

function parseSkillPatch(body: unknown): z.infer<typeof SkillPatchSchema> {
  return parseBody(SkillPatchSchema, body, SKILL_PATCH_SHAPE, { valid: { status: [...SKILL_STATUSES] } });
}

const DistillSchema = z.strictObject({ taskId: z.string().min(1).max(64).optional() });

function parseDistill(body: unknown): z.infer<typeof DistillSchema> {
  if (body === undefined) return {};
  const parsed = DistillSchema.safeParse(body);
  if (parsed.success) return parsed.data;
  throw new CairnError(
    'invalid_argument',
    'Invalid body: expected nothing (learn from the whole conversation) or { "taskId"?: string } (one task).',
    { field: 'body' },
  );
}
