// Argument shapes: a tool call's arguments with the values generalised (`"<string>"`, `"<number>"`), so a learned
// step says how to call a tool without repeating one conversation's names, dates and ids.
import * as z from 'zod/mini';
import { isJson, type Json, STATUSES } from '../schema.js';

/** A JSON value (at most 32 levels deep): arguments in traces, argument shapes in skills. */
export const JsonValueSchema = z.unknown().check(
  z.refine((value) => isJson(value), {
    message: 'a JSON value: strings, finite numbers, booleans, null, arrays or objects',
  }),
) as unknown as z.ZodMiniType<Json>;

/** Values kept as they are: statuses and other vocabulary a procedure depends on (`"status": "done"`). */
const KEPT: ReadonlySet<string> = new Set<string>([
  ...STATUSES,
  'done',
  'failed',
  'cancelled',
  'list',
  'add',
  'update',
  'remove',
  'clear',
  'replace',
  'create',
]);

/** The shape of a JSON value, at most `depth` levels deep. Arrays keep the shape of their first item. */
export function argumentShape(value: unknown, depth = 6): Json {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return KEPT.has(value) ? value : '<string>';
  if (typeof value === 'number') return '<number>';
  if (typeof value === 'boolean') return '<boolean>';
  if (depth <= 0) return '<…>';
  if (Array.isArray(value)) return value.length === 0 ? [] : [argumentShape(value[0], depth - 1)];
  if (typeof value === 'object') {
    const out: Record<string, Json> = {};
    for (const key of Object.keys(value).sort().slice(0, 50)) {
      out[key] = argumentShape((value as Record<string, unknown>)[key], depth - 1);
    }
    return out;
  }
  return '<…>';
}

/** Compact text of a shape for a model's context: `{ status: "done", task: <string> }`. */
export function shapeText(shape: Json): string {
  if (typeof shape === 'string') return shape.startsWith('<') ? shape : JSON.stringify(shape);
  if (shape === null || typeof shape !== 'object') return JSON.stringify(shape);
  if (Array.isArray(shape)) return `[${shape.map(shapeText).join(', ')}]`;
  const entries = Object.entries(shape).map(([k, v]) => `${k}: ${shapeText(v)}`);
  return entries.length === 0 ? '{}' : `{ ${entries.join(', ')} }`;
}
