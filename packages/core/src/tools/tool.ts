// What a tool and a tool family are: a name, a description written for the model, a zod schema for the
// arguments, and a function that maps the family's vocabulary onto the Plan API.
import * as z from 'zod/mini';
import type { Plan } from '../plan.js';
import type { Actor } from '../schema.js';
import type { Parser } from '../validate.js';
import type { Numbering } from './aliases.js';

/** The tool families a toolkit offers, each a vocabulary of its own (docs/TOOLS.md). */
export const FAMILY_NAMES = [
  'cairn',
  'task_manage',
  'todo',
  'task_graph',
  'ongoing_task',
  'cairn_compact',
] as const;
/** One of `FAMILY_NAMES`. */
export type FamilyName = (typeof FAMILY_NAMES)[number];

export interface ToolContext {
  /** The plan, with every write attributed to the toolkit's actor. */
  plan: Plan;
  actor: Actor;
  now: () => number;
}

/** A JSON Schema for a tool's arguments: always an object schema, with no `$ref`s (some clients reject them). */
export interface JsonSchemaObject {
  type: 'object';
  properties?: Record<string, unknown>;
  required?: string[];
  [keyword: string]: unknown;
}

/** Hints for clients (MCP `annotations`): whether a tool only reads, or can destroy data. */
export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
}

export interface ToolSpec<Args = unknown> {
  name: string;
  description: string;
  /** The arguments' schema: what a call is validated with. */
  input: ToolInput<Args>;
  /** The JSON Schema of `input` as the model reads it: what `definitions()` emits. */
  parameters: JsonSchemaObject;
  annotations?: ToolAnnotations;
  /** Runs a validated call. Throws a CairnError for refused calls, before any write. */
  run(args: Args, ctx: ToolContext): unknown | Promise<unknown>;
}

/** A vocabulary of tools over the Plan API: its name, how it names tasks, its tools. */
export interface ToolFamily {
  name: FamilyName;
  /** How the family names tasks: the plan's string ids, or the integer aliases (`num`). */
  ids: 'id' | 'num';
  /**
   * For an integer family whose numbers are not the plan's aliases: its numbering, both ways (errors speak it,
   * traces resolve a call's numbers with it). Default: the plan's aliases.
   */
  numbers?: (plan: Plan) => Numbering;
  tools: ReadonlyArray<ToolSpec<unknown>>;
}

/** A tool's argument schema: zod/mini's (the families') or classic zod's. */
export type ToolInput<Args = unknown> = Parser<Args>;

/** `schema` with the words a model reads about it (its JSON Schema's `description`). */
export function about<T extends z.ZodMiniType>(schema: T, description: string): T {
  return schema.check(z.describe(description));
}

/** A list of `item`s, at least `min` and at most `max` of them. */
export function bounded<T extends z.core.SomeType>(item: T, min: number, max: number): z.ZodMiniArray<T> {
  const list = z.array(item);
  return min > 0 ? list.check(z.minLength(min), z.maxLength(max)) : list.check(z.maxLength(max));
}

/** A tool as it is written, but for its JSON Schema: `run` typed from what `input` parses to. */
export interface ToolOf<S extends ToolInput> {
  name: string;
  description: string;
  input: S;
  annotations?: ToolAnnotations;
  run(args: z.output<S>, ctx: ToolContext): unknown | Promise<unknown>;
}

/**
 * A tool from its schema and that schema's JSON Schema, given ready (the families', generated ahead:
 * json-schema.ts). Types `run` from the schema.
 */
export function toolSpec<S extends ToolInput>(
  spec: ToolOf<S> & { parameters: JsonSchemaObject },
): ToolSpec<z.output<S>> {
  return spec as ToolSpec<z.output<S>>;
}
