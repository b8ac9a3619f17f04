// The plan's conversation over HTTP, for agents without a Yjs client: read the chat since a cursor (wake-up
// notices included), append attributed turns (the exchange auto-close judges), and read auto-close's decision log.

import { type ChatInput, createChat } from '@cairn/core';
import { CHAT_ROLES, cursorOf, readCursor } from '@cairn/core/protocol';
import type { Hono } from 'hono';
import * as z from 'zod';
import type { PlanHandle } from '../hub/extension.js';
import type { SyncHub } from '../hub/hub.js';
import { jsonResponse } from './app.js';
import {
  agentActor,
  jsonBytes,
  type PlanRoutesOptions,
  parseBody,
  readBody,
  subjectOf,
  userActor,
  withPlan,
} from './plans.js';
import { authorizeRequest } from './routes.js';

const TurnSchema = z.strictObject({
  role: z.enum(CHAT_ROLES),
  text: z.string().min(1).max(20_000),
});
const TURN_SHAPE = `{ "role": ${CHAT_ROLES.join(' | ')}, "text": string (1 to 20000 characters) }`;

export function registerConversationRoutes(app: Hono, hub: SyncHub, options: PlanRoutesOptions): void {
  app.get('/api/plans/:plan/chat', async (c) => {
    const planId = c.req.param('plan');
    await authorizeRequest(hub, c.req.raw, planId, 'read');
    const since = new URL(c.req.url).searchParams.get('since');
    const point = since ? readCursor(since) : null;
    return withPlan(hub, options, planId, (handle) => {
      const chat = createChat(handle.doc, { actor: 'system' });
      try {
        const messages = point ? chat.since(point) : chat.list();
        return jsonResponse({ plan: planId, messages, cursor: cursorOf(handle.doc) });
      } finally {
        chat.destroy();
      }
    });
  });

  // A user turn is the token's person; an assistant turn its agent (or ?as=); a system turn, which a model
  // trusts most, needs an admin token and is attributed to its agent actor all the same.
  app.post('/api/plans/:plan/chat', async (c) => {
    const planId = c.req.param('plan');
    const turn: ChatInput = parseBody(TurnSchema, await readBody(c.req.raw, false), TURN_SHAPE, {
      what: 'turn',
      valid: { role: [...CHAT_ROLES] },
    });
    const grant = await authorizeRequest(hub, c.req.raw, planId, turn.role === 'system' ? 'admin' : 'write');
    const actor =
      turn.role === 'user'
        ? userActor(subjectOf(hub, grant))
        : agentActor(hub, grant, new URL(c.req.url).searchParams.get('as'));
    const handle: PlanHandle = await hub.openPlan(planId);
    const chat = createChat(handle.doc, { actor });
    try {
      hub.assertFits(planId, jsonBytes(turn));
      const message = chat.append(turn);
      await handle.flush();
      return jsonResponse({ plan: planId, message, cursor: cursorOf(handle.doc) }, 201);
    } finally {
      chat.destroy();
      handle.release();
    }
  });

  app.get('/api/plans/:plan/decisions', async (c) => {
    const planId = c.req.param('plan');
    await authorizeRequest(hub, c.req.raw, planId, 'read');
    const autoClose = options.autoClose ?? null;
    return jsonResponse({
      plan: planId,
      judge: autoClose?.judgeName ?? null,
      decisions: autoClose?.decisionsOf(planId) ?? [],
    });
  });
}
