// `resolve_context` for an MCP client: a context template (seeds 000 and 002) resolved on the live plan, for the
// server's actor, as the chat messages to put before the model; with `since`, what others changed meanwhile.
import {
  ContextTemplateSchema,
  cursorOf,
  defineTool,
  type Plan,
  type Presence,
  readCursor,
  resolveContext,
  type ToolSpec,
} from '@cairn/core';
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
