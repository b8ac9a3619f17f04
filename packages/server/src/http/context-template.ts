// A context template resolved over HTTP (seeds 000 and 002): the template in the request body, its sections
// resolved on the server's copy of the plan for the token's agent, as chat messages ready to send to a model.
import { ContextTemplateSchema, createPlan, cursorOf, readCursor, resolveContext } from '@cairn/core';
import * as z from 'zod';
import type { SyncHub } from '../hub/hub.js';
import {
  agentActor,
  type PlanRoutesOptions,
  parseBody,
  presenceOf,
  readBody,
  withPlanOrBlank,
} from './plans.js';
import { type Router, sendJson } from './router.js';
import { authorizeRequest } from './routes.js';

const BodySchema = z.strictObject({
  template: ContextTemplateSchema,
  identity: z
    .strictObject({ name: z.string().max(100).optional(), about: z.string().max(2000).optional() })
    .optional(),
  since: z.string().max(4096).optional(),
  maxTokens: z.int().min(1).max(1_000_000).optional(),
});
const BODY_SHAPE =
  '{ "template": [{ "section", "role": system | user | assistant, "content" | "tool", "skip_if_empty"? }], ' +
  '"identity"?: { "name"?, "about"? }, "since"?: cursor, "maxTokens"?: integer }';

export function registerContextTemplateRoute(router: Router, hub: SyncHub, options: PlanRoutesOptions): void {
  const now = options.now ?? Date.now;
  router.add('POST', '/api/plans/:plan/context', async ({ req, res, url, params }) => {
    const planId = params.plan!;
    const grant = await authorizeRequest(hub, req, planId, 'read');
    const body = parseBody(BodySchema, await readBody(req, false), BODY_SHAPE);
    const actor = agentActor(hub, grant, url.searchParams.get('as'));
    const since = body.since !== undefined ? readCursor(body.since) : undefined;
    await withPlanOrBlank(hub, options, planId, async (doc) => {
      const plan = createPlan({ doc, actor });
      const warnings: string[] = [];
      try {
        const messages = await resolveContext(body.template, {
          plan,
          identity: { actor, ...body.identity },
          presence: presenceOf(hub, planId),
          now: now(),
          onWarning: (warning) => warnings.push(warning),
          ...(since ? { since } : {}),
          ...(body.maxTokens !== undefined ? { maxTokens: body.maxTokens } : {}),
        });
        sendJson(res, 200, { plan: planId, messages, warnings, cursor: cursorOf(doc) });
      } finally {
        plan.destroy();
      }
    });
  });
}
