// Argument schemas more than one family uses, so their wording and limits are the same everywhere.
import * as z from 'zod';

function isJson(value: unknown, depth = 0): boolean {
  if (depth > 32) return false;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every((v) => isJson(v, depth + 1));
  if (typeof value === 'object') return Object.values(value).every((v) => isJson(v, depth + 1));
  return false;
}

/**
 * Scratch data merged into a task's context. Published as a plain object schema (a recursive JSON type would
 * need `$ref`, which some clients reject); the values are checked to be JSON here.
 */
export const ContextArg = z.record(z.string(), z.unknown()).refine((value) => isJson(value), {
  message: 'context values must be JSON: strings, finite numbers, booleans, null, arrays or objects',
});
