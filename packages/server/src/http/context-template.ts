// A context template resolved over HTTP (seeds 000 and 002): the template in the request body, its sections
// resolved on the server's copy of the plan for the token's agent, as chat messages ready to send to a model.

import { createPlan, resolveContext } from '@cairn/core';
import type { LearnedContext } from '@cairn/core/learning';
import { ContextTemplateSchema, cursorOf, readCursor } from '@cairn/core/protocol';
import type { Hono } from 'hono';
import * as z from 'zod';
import type { SyncHub } from '../hub/hub.js';
import { jsonResponse } from './app.js';
import {
  agentActor,
  type PlanRoutesOptions,
  parseBody,
  presenceOf,
  readBody,
  withPlanOrBlank,
} from './plans.js';
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

export function registerContextTemplateRoute(app: Hono, hub: SyncHub, options: PlanRoutesOptions): void {
  const now = options.now ?? Date.now;
  app.post('/api/plans/:plan/context', async (c) => {
    const planId = c.req.param('plan');
    const grant = await authorizeRequest(hub, c.req.raw, planId, 'read');
    const body = parseBody(BodySchema, await readBody(c.req.raw, false), BODY_SHAPE);
    const actor = agentActor(hub, grant, new URL(c.req.url).searchParams.get('as'));
    const since = body.since !== undefined ? readCursor(body.since) : undefined;
    // The learned procedures are read (and their offer noted in the trace) only when a section asks for them.
    const learning = options.learning && JSON.stringify(body.template).includes('learned_procedures');
    return withPlanOrBlank(hub, options, planId, async (doc) => {
      const plan = createPlan({ doc, actor });
      const warnings: string[] = [];
      const resolve = (learned?: LearnedContext) =>
        resolveContext(body.template, {
          plan,
          identity: { actor, ...body.identity },
          presence: presenceOf(hub, planId),
          now: now(),
          onWarning: (warning) => warnings.push(warning),
          ...(since ? { since } : {}),
          ...(body.maxTokens !== undefined ? { maxTokens: body.maxTokens } : {}),
          ...(learned ? { learned } : {}),
        });
      try {
        // A plan nobody wrote to has no task to offer them on, and gets no trace.
        const messages =
          learning && options.learning && doc.store.clients.size > 0
            ? await options.learning.withLearned(planId, resolve)
            : await resolve();
        return jsonResponse({ plan: planId, messages, warnings, cursor: cursorOf(doc) });
      } finally {
        plan.destroy();
      }
    });
  });
}
