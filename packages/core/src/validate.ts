// Turning zod failures into CairnErrors whose message lists every problem with its path, for the caller to fix.
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
