// A zod schema's JSON Schema as a model reads it, and tools defined from a live schema. The families' schemas are
// generated ahead from theirs (parameters/, `pnpm tool-parameters`; a test keeps them equal), so a page that
// offers a family ships no JSON Schema generator; tools made at run time (MCP's, learned procedures) use this.
import * as z from 'zod/mini';
import { type JsonSchemaObject, type ToolInput, type ToolOf, type ToolSpec, toolSpec } from './tool.js';

/** The JSON Schema (draft 2020-12, without `$schema`) of a tool's arguments, as the model sees it. */
export function jsonSchemaOf(name: string, input: ToolInput): JsonSchemaObject {
  const raw = z.toJSONSchema(input, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  const cleaned = clean(raw) as JsonSchemaObject;
  if (cleaned.type !== 'object') throw new Error(`tool ${name}: arguments must be an object schema`);
  return cleaned;
}

/** A tool from its schema, its JSON Schema made now: for tools made at run time. Types `run` from the schema. */
export function defineTool<S extends ToolInput>(spec: ToolOf<S>): ToolSpec<z.output<S>> {
  return toolSpec({ ...spec, parameters: jsonSchemaOf(spec.name, spec.input) });
}

/**
 * Drops what zod adds but a model does not need: `$schema`, the safe-integer bounds of every integer, and
 * `propertyNames: { type: 'string' }` on records (object keys are always strings in JSON). Also the size limits
 * (string lengths, list lengths) and patterns: they guard the plan against abuse rather than guide a model, the
 * toolkit enforces them whatever the definition says and its refusal names the limit, and they cost every model
 * call a few tokens per field (the descriptions say the shape of an actor or a time in words).
 */
const SIZE_LIMITS = new Set(['minLength', 'maxLength', 'minItems', 'maxItems']);

function clean(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(clean);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key === '$schema') continue;
    if (key === 'maximum' && inner === Number.MAX_SAFE_INTEGER) continue;
    if (key === 'minimum' && inner === Number.MIN_SAFE_INTEGER) continue;
    if (key === 'propertyNames' && isStringType(inner)) continue;
    if (key === 'pattern' || SIZE_LIMITS.has(key)) continue;
    out[key] = clean(inner);
  }
  return out;
}

function isStringType(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    Object.keys(value).length === 1 &&
    (value as { type?: unknown }).type === 'string'
  );
}
