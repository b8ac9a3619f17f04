// Turning zod failures into CairnErrors whose message lists every problem with its path, for the caller to fix;
// and validating once: a value built at an edge from input already parsed there is not parsed again.
import type * as z from 'zod';
import { CairnError } from './errors.js';

export function parseOrThrow<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) => {
    const path = issue.path.length > 0 ? issue.path.join('.') : '(root)';
    return `${path}: ${issue.message}`;
  });
  throw new CairnError('invalid_argument', `Invalid ${what}: ${issues.join('; ')}`, {
    issues: result.error.issues.map((i) => ({ path: i.path.map(String), message: i.message })),
  });
}

/** Values built from input parsed at an edge (a tool call) against schemas at least as strict as the plan's. */
const parsedAtEdge = new WeakSet<object>();

/**
 * Marks `value` as built from input already validated at an edge, so the plan API does not parse it again.
 * Only for values made from zod output of the plan's own field schemas (the tool families'); never for raw input.
 */
export function markParsed<T extends object>(value: T): T {
  parsedAtEdge.add(value);
  return value;
}

/** `parseOrThrow`, unless `value` was marked as parsed at the edge: the plan API's one validation pass. */
export function parseOnce<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  if (typeof value === 'object' && value !== null && parsedAtEdge.has(value)) return value as T;
  return parseOrThrow(schema, value, what);
}
