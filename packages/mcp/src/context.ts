// Context reads for an MCP client: `resolve_context` (a context template of seeds 000 and 002 resolved on the live
// plan, as the chat messages to put before the model) and `plan_changes` (only what others changed since a cursor).

import { type Plan, resolveContext } from '@cairn/core';
import {
  ContextTemplateSchema,
  CURSOR_NOTES,
  changesOrWhole,
  cursorOf,
  defineTool,
  type Presence,
  readCursor,
  type ToolSpec,
} from '@cairn/core/protocol';
import * as z from 'zod';

export function contextTool(plan: Plan, presence?: () => Presence[]): ToolSpec<unknown> {
  return defineTool({
    name: 'resolve_context',
    description:
      'Resolve a context template on this plan: sections { section, role, content with {{variables}} or tool, ' +
      'skip_if_empty }, e.g. { "section": "tasks", "role": "system", "tool": "task_list", "skip_if_empty": true }. ' +
      'Returns the messages, warnings for sections left out, and a cursor; pass it as since next time for ' +
      'plan_changes.',
    annotations: { readOnlyHint: true },
    input: z.strictObject({
      template: ContextTemplateSchema,
      since: z.string().max(4096).optional().describe('The cursor a previous resolve_context returned.'),
    }),
    async run({ template, since }) {
      const warnings: string[] = [];
      const messages = await resolveContext(template, {
        plan,
        presence: presence?.() ?? null,
        onWarning: (warning) => warnings.push(warning),
        ...(since !== undefined ? { since: readCursor(since) } : {}),
      });
      return { messages, warnings, cursor: cursorOf(plan.doc) };
    },
  }) as ToolSpec<unknown>;
}

/**
 * `ids`: how the offered tool families name tasks (string ids, or integer aliases), so the lines match them.
 * `whole`: the plan as the plan resource renders it, given instead of the changes when the cursor is not this
 * plan's or so old that its changes are longer (the HTTP context route's rule, `changesOrWhole`).
 */
export function planChangesTool(plan: Plan, ids: 'id' | 'num', whole: () => string): ToolSpec<unknown> {
  return defineTool({
    name: 'plan_changes',
    description:
      'What others changed in the plan since a cursor, as attributed lines ("task 3 "Deploy" done by agent:b"), ' +
      'much shorter than the whole plan. Without since it returns only a cursor to start from. When the whole ' +
      "plan is shorter than the changes (or the cursor is not this plan's), kind says so and changes is the plan.",
    annotations: { readOnlyHint: true },
    input: z.strictObject({
      since: z
        .string()
        .max(4096)
        .optional()
        .describe('The cursor a previous call (or resolve_context) returned.'),
    }),
    run({ since }) {
      if (since === undefined) return { changes: '', cursor: cursorOf(plan.doc) };
      const { kind, text } = changesOrWhole(plan, {
        since: readCursor(since),
        whole,
        exclude: plan.actor,
        ids,
      });
      return { kind, changes: `${CURSOR_NOTES[kind] ?? ''}${text}`, cursor: cursorOf(plan.doc) };
    },
  }) as ToolSpec<unknown>;
}
