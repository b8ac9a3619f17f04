// Tool definitions in the shapes each client expects (OpenAI chat completions, Anthropic, MCP), all from a
// tool's JSON Schema (its zod schema's, generated ahead for the families: json-schema.ts), plus a compact
// one-line rendering of a schema for error messages.
import type { JsonSchemaObject, ToolSpec } from './tool.js';

export type { JsonSchemaObject } from './tool.js';

/** The tool-definition shapes a toolkit can give: OpenAI's, Anthropic's, MCP's. */
export type DefinitionFormat = 'openai' | 'anthropic' | 'mcp';
export const DEFINITION_FORMATS: readonly DefinitionFormat[] = ['openai', 'anthropic', 'mcp'];

export interface OpenAIToolDefinition {
  type: 'function';
  function: { name: string; description: string; parameters: JsonSchemaObject; strict?: boolean };
}

export interface DefinitionOptions {
  /**
   * OpenAI's strict mode (`strict: true`): every property required, optional ones nullable (the toolkit takes a
   * null in an optional argument as absent), every object closed. A property strict mode cannot express (a
   * free-form object such as `context`) is left out. Only for the `openai` format. Default false.
   */
  strict?: boolean;
}

export interface AnthropicToolDefinition {
  name: string;
  description: string;
  input_schema: JsonSchemaObject;
}

export interface McpToolDefinition {
  name: string;
  description: string;
  inputSchema: JsonSchemaObject;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean };
}

/** A tool's definition in one of the `DefinitionFormat`s, ready to hand to that API. */
export type ToolDefinition = OpenAIToolDefinition | AnthropicToolDefinition | McpToolDefinition;

export interface DefinitionsByFormat {
  openai: OpenAIToolDefinition;
  anthropic: AnthropicToolDefinition;
  mcp: McpToolDefinition;
}

/** The JSON Schema (draft 2020-12, without `$schema`) of a tool's arguments, as the model sees it. */
export function toolJsonSchema(tool: ToolSpec<unknown>): JsonSchemaObject {
  return tool.parameters;
}

export function toDefinition<F extends DefinitionFormat>(
  tool: ToolSpec<unknown>,
  format: F,
  options: DefinitionOptions = {},
): DefinitionsByFormat[F] {
  // A copy, so a caller that edits a definition cannot change what every later call emits.
  const schema = structuredClone(toolJsonSchema(tool));
  const { name, description } = tool;
  switch (format) {
    case 'openai':
      return {
        type: 'function',
        function: options.strict
          ? { name, description, parameters: strictSchema(schema) as JsonSchemaObject, strict: true }
          : { name, description, parameters: schema },
      } as DefinitionsByFormat[F];
    case 'anthropic':
      return { name, description, input_schema: schema } as DefinitionsByFormat[F];
    default: {
      const def: McpToolDefinition = { name, description, inputSchema: schema };
      if (tool.annotations) def.annotations = { ...tool.annotations };
      return def as DefinitionsByFormat[F];
    }
  }
}

type Schema = Record<string, unknown>;

/** Whether a schema lets `null` through (its type, or one branch of its union). */
export function acceptsNull(schema: unknown): boolean {
  if (typeof schema !== 'object' || schema === null) return false;
  const s = schema as Schema;
  if (s['type'] === 'null' || (Array.isArray(s['type']) && s['type'].includes('null'))) return true;
  return Array.isArray(s['anyOf']) && s['anyOf'].some(acceptsNull);
}

/**
 * A schema in OpenAI's strict form, or null when strict mode cannot express it (an object open to any keys).
 * Optional properties become required and nullable; a property that cannot be expressed is left out.
 */
function strictSchema(schema: unknown): unknown {
  if (typeof schema !== 'object' || schema === null) return schema;
  const s = schema as Schema;
  if (Array.isArray(s['anyOf'])) {
    const branches = s['anyOf'].map(strictSchema).filter((b) => b !== null);
    return branches.length === 0 ? null : { ...s, anyOf: branches };
  }
  if (s['type'] === 'array' && s['items'] !== undefined) {
    const items = strictSchema(s['items']);
    return items === null ? null : { ...s, items };
  }
  if (s['type'] !== 'object') return s;
  if (s['additionalProperties'] !== false) return null;
  const required = new Set((s['required'] as string[] | undefined) ?? []);
  const properties: Schema = {};
  for (const [key, inner] of Object.entries((s['properties'] as Schema | undefined) ?? {})) {
    const strict = strictSchema(inner);
    if (strict === null) continue;
    properties[key] = required.has(key) || acceptsNull(strict) ? strict : nullable(strict as Schema);
  }
  return { ...s, properties, required: Object.keys(properties), additionalProperties: false };
}

/** `schema` or null; the description stays on the outside, where a model reads it. */
function nullable(schema: Schema): Schema {
  const { description, ...rest } = schema;
  return {
    ...(description !== undefined ? { description } : {}),
    anyOf: [rest, { type: 'null' }],
  };
}

/**
 * A one-line, TypeScript-like rendering of a schema, for error messages:
 * `{ action: "list"|"add", id?: integer, tasks?: string[] }`.
 */
export function describeShape(schema: unknown): string {
  if (typeof schema !== 'object' || schema === null) return 'any';
  const s = schema as Record<string, unknown>;
  if (Array.isArray(s['enum'])) return s['enum'].map((v) => JSON.stringify(v)).join('|');
  if (s['const'] !== undefined) return JSON.stringify(s['const']);
  if (Array.isArray(s['anyOf'])) return s['anyOf'].map(describeShape).join(' | ');
  const type = s['type'];
  if (Array.isArray(type)) return type.map((t) => describeShape({ ...s, type: t })).join(' | ');
  if (type === 'array') {
    const item = describeShape(s['items']);
    return item.includes(' ') && !item.startsWith('{') ? `(${item})[]` : `${item}[]`;
  }
  if (type === 'object') {
    const props = s['properties'] as Record<string, unknown> | undefined;
    if (!props || Object.keys(props).length === 0)
      return s['additionalProperties'] === false ? '{}' : 'object';
    const required = new Set((s['required'] as string[] | undefined) ?? []);
    const fields = Object.entries(props).map(
      ([key, inner]) => `${key}${required.has(key) ? '' : '?'}: ${describeShape(inner)}`,
    );
    return `{ ${fields.join(', ')} }`;
  }
  return typeof type === 'string' ? type : 'any';
}

/** The part of a JSON Schema that describes the value at `path` (object keys and array indexes), if any. */
export function schemaAt(
  schema: unknown,
  path: readonly (string | number)[],
  preferObject = true,
): Record<string, unknown> | null {
  let current = schema as Record<string, unknown> | undefined;
  for (const step of path) {
    if (!current) return null;
    const variants = Array.isArray(current['anyOf'])
      ? (current['anyOf'] as Record<string, unknown>[])
      : [current];
    let next: Record<string, unknown> | undefined;
    for (const variant of variants) {
      const props = variant['properties'] as Record<string, Record<string, unknown>> | undefined;
      if (typeof step === 'number' || /^\d+$/.test(String(step))) {
        if (variant['type'] === 'array') next = variant['items'] as Record<string, unknown>;
      } else if (props?.[step]) next = props[step];
      if (next) break;
    }
    current = next;
  }
  if (!current || !preferObject) return current ?? null;
  // At an object inside a union (a step given as a string or an object), the object variant is the one meant.
  const objects = Array.isArray(current['anyOf'])
    ? (current['anyOf'] as Record<string, unknown>[]).filter((v) => v['type'] === 'object')
    : [];
  return objects[0] ?? current;
}

/** "title, key?, status?" for the object schema at hand. */
export function fieldList(schema: Record<string, unknown>): string {
  const props = Object.keys((schema['properties'] as Record<string, unknown> | undefined) ?? {});
  const required = new Set((schema['required'] as string[] | undefined) ?? []);
  return props.map((p) => (required.has(p) ? p : `${p}?`)).join(', ');
}
