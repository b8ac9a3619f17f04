// What a tool and a tool family are: a name, a description written for the model, a zod schema for the
// arguments, and a function that maps the family's vocabulary onto the Plan API.
import type * as z from 'zod';
import type { Plan } from '../plan.js';
import type { Actor } from '../schema.js';
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

/** Hints for clients (MCP `annotations`): whether a tool only reads, or can destroy data. */
export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
}

export interface ToolSpec<Args = unknown> {
  name: string;
  description: string;
  /** The arguments' schema; its JSON Schema is what `definitions()` emits, so they cannot drift apart. */
  input: z.ZodType<Args>;
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

/** Types a tool's `run` from its schema. */
export function defineTool<S extends z.ZodType>(spec: {
  name: string;
  description: string;
  input: S;
  annotations?: ToolAnnotations;
  run(args: z.output<S>, ctx: ToolContext): unknown | Promise<unknown>;
}): ToolSpec<z.output<S>> {
  return spec as ToolSpec<z.output<S>>;
}
