// The tool dispatcher: one toolkit per actor over a plan, offering the chosen families' tools as definitions
// for a client and running the model's calls. A call never throws: a refusal comes back as { error } and the
// plan is left exactly as it was.
import type * as z from 'zod/mini';
import { CairnError, type CairnErrorJSON, type ErrorCode, toCairnError } from '../errors.js';
import type { Plan } from '../plan.js';
import type { Actor } from '../schema.js';
import { describeIssues, parseActor } from '../validate.js';
import { aliasNumbering, errorInAliases } from './aliases.js';
import {
  acceptsNull,
  DEFINITION_FORMATS,
  type DefinitionFormat,
  type DefinitionOptions,
  type DefinitionsByFormat,
  describeShape,
  fieldList,
  schemaAt,
  toDefinition,
  toolJsonSchema,
} from './definitions.js';
import { observeCalls, type ToolCallObserver } from './observe.js';
import type { FamilyName, ToolContext, ToolFamily, ToolSpec } from './tool.js';

/** Who writes and which families are offered: the options of `createToolkit`. */
export interface ToolkitOptions {
  /** Who every write is attributed to. Default: the plan's actor. */
  actor?: Actor;
  /** The families whose tools are offered. Default `['cairn']`. Their tool names never collide. */
  families?: readonly FamilyName[];
  /** Clock for times in results (the age of an ongoing task). Default `Date.now`. */
  now?: () => number;
  /** Told of every call once it has run (the trace of learned procedures); never changes a call's result. */
  onCall?: ToolCallObserver;
  /** Tools offered beside the families' (e.g. `learnedProcedureTool`); they name tasks by id. */
  extraTools?: ReadonlyArray<ToolSpec<unknown>>;
}

/** A refused tool call as the model reads it: the code, what was wrong and what is valid. */
export interface ToolError extends CairnErrorJSON {
  code: ErrorCode;
  message: string;
}

/** A JSON-serialisable tool result; a refused call is `{ error }`. */
export type ToolResult = unknown;

/**
 * A plan's tools for a model: their definitions in each API's format, and `dispatch`, which runs a call and
 * returns its result or a `ToolError`, never throwing.
 */
export interface Toolkit {
  readonly actor: Actor;
  /** The plan as this toolkit writes it (attributed to `actor`). */
  readonly plan: Plan;
  readonly families: readonly FamilyName[];
  /** The offered tools' names, in definition order. */
  readonly names: readonly string[];
  /** The offered tools' definitions in a client's shape; `strict` gives OpenAI's strict-mode form. */
  definitions<F extends DefinitionFormat>(
    format: F,
    options?: DefinitionOptions,
  ): Array<DefinitionsByFormat[F]>;
  /**
   * Runs one tool call. `args` is the arguments object, or the raw JSON string a model produced. Never throws
   * or rejects: bad input, an unknown tool or id, or a refused change resolve to `{ error: { code, message } }`
   * with the plan unchanged.
   */
  dispatch(name: string, args?: unknown): Promise<ToolResult>;
  /** Stops the toolkit's own view of the plan (when it made one for its actor). The plan itself stays. */
  destroy(): void;
}

/** Whether a dispatch result is a refusal (`{ error: ToolError }`). */
export function isToolError(result: unknown): result is { error: ToolError } {
  return (
    typeof result === 'object' &&
    result !== null &&
    'error' in result &&
    typeof (result as { error: unknown }).error === 'object'
  );
}

/** The options of `createToolkitOf`: those of `createToolkit` but the families, which it is given. */
export type ToolkitOfOptions = Omit<ToolkitOptions, 'families'>;

/**
 * The tools of the given families over a plan (docs/TOOLS.md): each call validated, written as `options.actor`,
 * answered with a result or an error the model can act on. A page that imports only the families it offers
 * ships only their code; `createToolkit` takes families by name and so carries all six.
 */
export function createToolkitOf(
  plan: Plan,
  families: readonly ToolFamily[],
  options: ToolkitOfOptions = {},
): Toolkit {
  const actor = parseActor(options.actor ?? plan.actor, 'toolkit actor');
  for (const family of families) {
    if (!Array.isArray(family?.tools)) {
      throw new CairnError(
        'invalid_argument',
        `createToolkitOf takes tool families (such as cairnFamily from @cairn/core/tools), not ${JSON.stringify(family)}.`,
      );
    }
  }
  const familyNames = families.map((family) => family.name);
  // A Plan of its own when the actor differs, so every write (and undo step) is the toolkit's actor's.
  const own = actor === plan.actor ? plan : plan.withActor(actor);
  const ctx: ToolContext = { plan: own, actor, now: options.now ?? Date.now };
  const tools = new Map<string, { tool: ToolSpec<unknown>; family: ToolFamily }>();
  for (const family of new Set(families)) {
    for (const tool of family.tools) {
      if (tools.has(tool.name)) {
        throw new CairnError('invalid_argument', `Two families define the tool "${tool.name}".`);
      }
      tools.set(tool.name, { tool, family });
    }
  }
  for (const tool of options.extraTools ?? []) {
    if (tools.has(tool.name)) {
      throw new CairnError('invalid_argument', `An extra tool is named like a family's: "${tool.name}".`);
    }
    tools.set(tool.name, { tool, family: { name: familyNames[0] ?? 'cairn', ids: 'id', tools: [] } });
  }
  const names = [...tools.keys()];

  const fail = (error: unknown, family?: ToolFamily): { error: ToolError } => {
    const json = toCairnError(error).toJSON() as ToolError;
    return { error: (family?.ids === 'num' ? errorInAliases(own, json, family.numbers) : json) as ToolError };
  };

  const toolkit: Toolkit = {
    actor,
    plan: own,
    families: familyNames,
    names,
    definitions<F extends DefinitionFormat>(
      format: F,
      options: DefinitionOptions = {},
    ): Array<DefinitionsByFormat[F]> {
      if (!DEFINITION_FORMATS.includes(format)) {
        throw new CairnError(
          'invalid_argument',
          `Unknown definition format "${String(format)}"; formats: ${DEFINITION_FORMATS.join(', ')}.`,
          { valid: [...DEFINITION_FORMATS] },
        );
      }
      if (options.strict && format !== 'openai') {
        throw new CairnError(
          'invalid_argument',
          `Strict definitions are OpenAI's form; ask for format "openai", not "${format}".`,
          { valid: ['openai'] },
        );
      }
      return [...tools.values()].map(({ tool }) => toDefinition(tool, format, options));
    },
    async dispatch(name: string, args?: unknown): Promise<ToolResult> {
      const entry = typeof name === 'string' ? tools.get(name) : undefined;
      if (!entry) {
        return fail(
          new CairnError(
            'unknown_tool',
            `There is no tool ${JSON.stringify(name)}. Tools: ${names.join(', ')}.`,
            {
              valid: names,
            },
          ),
        );
      }
      try {
        const input = readArguments(entry.tool, args);
        return await entry.tool.run(input, ctx);
      } catch (error) {
        return fail(error, entry.family);
      }
    },
    destroy(): void {
      if (own !== plan) own.destroy();
    },
  };
  if (!options.onCall) return toolkit;
  // A call's integers name tasks in its family's numbering (seed 001 counts conversation tasks, not aliases).
  return observeCalls(toolkit, options.onCall, ctx.now, (name) => {
    const family = tools.get(name)?.family;
    return family?.ids === 'num' ? (family.numbers ?? aliasNumbering)(own) : null;
  });
}

/**
 * Parses raw arguments (object or JSON text) against the tool's schema, with a message naming the shape: what a
 * dispatch runs with, and how a trace's recorded arguments are checked before they are learned from.
 */
export function readArguments(tool: ToolSpec<unknown>, raw: unknown): unknown {
  let value = raw;
  if (typeof value === 'string') {
    const text = value.trim();
    if (text === '') value = {};
    else {
      try {
        value = JSON.parse(text);
      } catch (error) {
        throw invalid(tool, `The arguments are not valid JSON (${(error as Error).message}).`);
      }
    }
  }
  // Models send nothing, null or {} for tools without parameters; all mean "no arguments".
  if (value === undefined || value === null) value = {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw invalid(
      tool,
      `The arguments must be a JSON object, not ${Array.isArray(value) ? 'an array' : typeof value}.`,
    );
  }
  const result = tool.input.safeParse(
    withoutNulls(value, toolJsonSchema(tool)),
  ) as z.core.util.SafeParseResult<unknown>;
  if (result.success) return result.data;
  const schema = toolJsonSchema(tool);
  const { text, issues } = describeIssues(result.error, {
    root: '(arguments)',
    explain: (issue) => explain(issue, schema),
  });
  // A problem at the top (a missing or unknown argument) means the model has the wrong shape in mind: show it.
  const atRoot = result.error.issues.some((i) => i.path.length <= 1 && i.code !== 'invalid_value');
  throw invalid(tool, `Invalid arguments: ${text}.`, issues, atRoot);
}

/**
 * Models with structured or strict tool calling send every optional field, null for those they do not use. A
 * null where the schema does not take one is dropped, so it means "absent"; where null has a meaning (clearing
 * a field, "first", "top level"), the schema takes it and it is kept. A required field's null is kept too, to be
 * refused as missing. Copies only the objects it changes.
 */
function withoutNulls(value: unknown, schema: unknown): unknown {
  if (typeof value !== 'object' || value === null || typeof schema !== 'object' || schema === null)
    return value;
  const s = schema as Record<string, unknown>;
  if (Array.isArray(s['anyOf'])) {
    const branch = (s['anyOf'] as Array<Record<string, unknown>>).find(
      (b) => b['type'] === (Array.isArray(value) ? 'array' : 'object'),
    );
    return branch ? withoutNulls(value, branch) : value;
  }
  if (Array.isArray(value)) {
    const items = s['items'];
    let out: unknown[] | null = null;
    value.forEach((item, i) => {
      const next = withoutNulls(item, items);
      if (next === item) return;
      out ??= [...value];
      out[i] = next;
    });
    return out ?? value;
  }
  const properties = s['properties'] as Record<string, unknown> | undefined;
  if (!properties) return value;
  const required = (s['required'] as string[] | undefined) ?? [];
  let out: Record<string, unknown> | null = null;
  for (const [key, inner] of Object.entries(value)) {
    const prop = properties[key];
    if (inner === null) {
      if (prop !== undefined && !required.includes(key) && !acceptsNull(prop)) {
        out ??= { ...(value as Record<string, unknown>) };
        delete out[key];
      }
      continue;
    }
    const next = withoutNulls(inner, prop);
    if (next === inner) continue;
    out ??= { ...(value as Record<string, unknown>) };
    out[key] = next;
  }
  return out ?? value;
}

function invalid(tool: ToolSpec<unknown>, message: string, issues?: unknown[], withShape = true): CairnError {
  const shape = withShape ? ` Expected: ${tool.name}(${describeShape(toolJsonSchema(tool))})` : '';
  return new CairnError('invalid_argument', `${message}${shape}`, {
    tool: tool.name,
    ...(issues ? { issues } : {}),
  });
}

/** zod's messages, reworded where they would puzzle a model. */
function explain(issue: z.core.$ZodIssue, schema: unknown): string {
  switch (issue.code) {
    case 'unrecognized_keys': {
      const here = schemaAt(schema, issue.path as Array<string | number>);
      const keys = issue.keys.map((k) => JSON.stringify(k)).join(', ');
      const fields = here ? fieldList(here) : '';
      const valid = fields
        ? `; the fields here are ${fields}`
        : issue.path.length === 0
          ? '; this tool takes no arguments (send {})'
          : '; nothing is allowed here';
      return `unknown field${issue.keys.length > 1 ? 's' : ''} ${keys}${valid}`;
    }
    case 'invalid_type': {
      const integer =
        issue.expected === 'int' ||
        schemaAt(schema, issue.path as Array<string | number>)?.['type'] === 'integer';
      const expected = integer ? 'an integer' : issue.expected;
      if (/received undefined$/.test(issue.message)) return `required (${expected})`;
      return `expected ${expected}, ${issue.message.replace(/^.*?(received \S+)$/, '$1')}`;
    }
    case 'invalid_union': {
      const here = schemaAt(schema, issue.path as Array<string | number>, false);
      return here ? `expected ${describeShape(here)}` : issue.message;
    }
    default:
      return issue.message.replace(/^Invalid input: /, '');
  }
}
