// The one way a zod failure becomes words a caller (often a model) reads: every problem with its path, what is
// wrong and, in the schemas' messages, what is valid; and validating once: a value built at an edge from input
// already parsed there is not parsed again.
import type * as z from 'zod/mini';
import { CairnError } from './errors.js';
import { ACTOR_PATTERN, type Actor, ActorSchema } from './schema.js';

/** A schema that parses, zod/mini's or classic zod's: what the plan API and the toolkit validate with. */
export type Parser<T> = z.core.$ZodType<T> & { safeParse(data: unknown): unknown };

/** One problem of a failed parse: where (the path's keys and indexes) and what is wrong. */
export interface IssueText {
  path: string[];
  message: string;
}

export interface DescribeOptions {
  /** What a problem at the top is called ("(root)", "body", "presence"). Default "(root)". */
  root?: string;
  /** Rewords an issue (the tool dispatcher names the fields a tool takes). Default: zod's message. */
  explain?: (issue: z.core.$ZodIssue) => string;
  /** List at most this many problems (the rest are left out of the text). Default: all. */
  max?: number;
}

/** A failed parse's problems, each as `path: message`, joined by "; ", and as data for the error's details. */
export function describeIssues(
  error: z.core.$ZodError,
  options: DescribeOptions = {},
): { text: string; issues: IssueText[] } {
  const { root = '(root)', explain = (issue) => issue.message, max = Number.POSITIVE_INFINITY } = options;
  const issues = error.issues.map((issue) => ({ path: issue.path.map(String), message: explain(issue) }));
  const text = issues
    .slice(0, max)
    .map((i) => `${i.path.length > 0 ? i.path.join('.') : root}: ${i.message}`)
    .join('; ');
  return { text, issues };
}

/** `value` as `schema` says, or a CairnError `invalid_argument`: "Invalid <what>: <path>: <problem>; ...". */
export function parseOrThrow<T>(schema: Parser<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value) as z.core.util.SafeParseResult<T>;
  if (result.success) return result.data;
  const { text, issues } = describeIssues(result.error);
  throw new CairnError('invalid_argument', `Invalid ${what}: ${text}`, { issues });
}

/**
 * The values `schema` accepts, as it parses them; the others are left out: for entries of a shared document,
 * where a malformed one (another writer's, another version's) must not hide the rest.
 */
export function validEntries<T>(schema: Parser<T>, values: Iterable<unknown>): T[] {
  const out: T[] = [];
  for (const value of values) {
    const result = schema.safeParse(value) as z.core.util.SafeParseResult<T>;
    if (result.success) out.push(result.data);
  }
  return out;
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

/** Whether `value` was marked as parsed at the edge. */
export function isParsed(value: unknown): boolean {
  return typeof value === 'object' && value !== null && parsedAtEdge.has(value);
}

/** `parseOrThrow`, unless `value` was marked as parsed at the edge: the plan API's one validation pass. */
export function parseOnce<T>(schema: Parser<T>, value: unknown, what: string): T {
  if (isParsed(value)) return value as T;
  return parseOrThrow(schema, value, what);
}

/**
 * An actor (`ActorSchema`): its whole rule is one pattern, so a value that matches is taken as it is and zod runs
 * only to word a refusal. A Plan made for a dry run or a hand-off to an actor then costs no second parse.
 */
export function parseActor(value: unknown, what: string): Actor {
  if (typeof value === 'string' && ACTOR_PATTERN.test(value)) return value;
  return parseOrThrow(ActorSchema, value, what);
}
