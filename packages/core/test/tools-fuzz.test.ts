// Random and malformed arguments for every tool of every family: dispatch never throws or rejects, every result
// is JSON, every failure has a code and a message, a failed call leaves the document byte for byte unchanged, and
// every change a successful call makes is attributed to the toolkit's actor.
// CAIRN_FUZZ_RUNS sets the calls per tool (default 300); CAIRN_FUZZ_SEED replays a run.
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { createPlan, createToolkit, FAMILY_NAMES, type Plan, type Toolkit } from '../src/index.js';
import { ERROR_CODES, type JsonSchemaObject } from '../src/protocol-entry.js';
import { seeded } from '../src/testing/seeded.js';
import { damage } from './tools-fixtures.js';

const RUNS = Number(process.env['CAIRN_FUZZ_RUNS'] ?? 300);
const SEED = Number(process.env['CAIRN_FUZZ_SEED'] ?? 20261202);

type Rand = () => number;

/** `damaged`: the document also holds what a careless or malicious writer can put there (see `damage`). */
function world(rand: Rand, damaged = false): { plan: Plan; tk: Toolkit } {
  const plan = createPlan({ actor: 'user:ann', random: rand });
  const [a] = plan.addMany([
    { title: 'Read the code', key: 'a', status: 'done' },
    {
      title: 'Write it',
      key: 'b',
      blockedBy: ['a'],
      steps: [{ title: 'sketch' }, { title: 'type', status: 'done' }],
    },
    { title: 'Wait for review', status: 'waiting_user', wakeAt: '2026-12-04T09:00:00Z' },
    { title: 'Ship', blockedBy: ['b'], assignee: 'agent:other' },
  ]);
  plan.update(a!.id, { note: 'done early' });
  if (damaged) damage(plan.doc, plan.list()[1]!.id);
  return { plan, tk: createToolkit(plan, { actor: 'agent:fuzz', families: [...FAMILY_NAMES] }) };
}

function pick<T>(rand: Rand, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)]!;
}

function strings(plan: Plan): string[] {
  const ids = plan.list().map((t) => t.id);
  return [
    ...ids,
    ...ids.map((id) => id.toUpperCase()),
    '',
    ' ',
    'x',
    'Write it',
    'agent:b',
    'user:ann',
    'bob',
    '2026-12-04T09:00:00Z',
    'tomorrow',
    'done',
    'pending',
    'active',
    'completed',
    '{}',
    '1',
    '-1',
    'null',
    '\u0000',
    '😀 ünïcode',
    'x'.repeat(600),
    '__proto__',
    'constructor',
  ];
}

/** Any value at all, including ones JSON cannot carry. */
function anything(rand: Rand, plan: Plan, depth = 0): unknown {
  const r = rand();
  if (r < 0.1) return null;
  if (r < 0.15) return undefined;
  if (r < 0.25) return rand() < 0.5;
  if (r < 0.45)
    return pick(rand, [0, 1, 2, 3, 7, -1, 1.5, 1e21, Number.NaN, Number.POSITIVE_INFINITY, -0, 2 ** 53]);
  if (r < 0.7) return pick(rand, strings(plan));
  if (depth > 2) return {};
  if (r < 0.85) return Array.from({ length: Math.floor(rand() * 4) }, () => anything(rand, plan, depth + 1));
  const obj: Record<string, unknown> = {};
  for (let i = Math.floor(rand() * 4); i > 0; i--)
    obj[pick(rand, ['title', 'id', 'status', 'a', 'todos', 'x'])] = anything(rand, plan, depth + 1);
  return obj;
}

/** A value shaped by the schema most of the time, so calls get past the first check and reach the plan. */
function shaped(rand: Rand, plan: Plan, schema: unknown, depth = 0): unknown {
  if (rand() < 0.12 || depth > 4 || typeof schema !== 'object' || schema === null)
    return anything(rand, plan, depth);
  const s = schema as Record<string, unknown>;
  if (Array.isArray(s['anyOf'])) return shaped(rand, plan, pick(rand, s['anyOf'] as unknown[]), depth);
  if (Array.isArray(s['enum'])) return pick(rand, s['enum'] as unknown[]);
  const type = Array.isArray(s['type']) ? pick(rand, s['type'] as string[]) : s['type'];
  switch (type) {
    case 'null':
      return null;
    case 'boolean':
      return rand() < 0.5;
    case 'integer':
      return pick(rand, [1, 2, 3, 4, 5, 6, 9, 0, -2, 100]);
    case 'number':
      return rand() * 10;
    case 'string':
      return pick(rand, strings(plan));
    case 'array':
      return Array.from({ length: Math.floor(rand() * 4) }, () => shaped(rand, plan, s['items'], depth + 1));
    case 'object': {
      const props = (s['properties'] as Record<string, unknown> | undefined) ?? {};
      const obj: Record<string, unknown> = {};
      for (const [key, inner] of Object.entries(props)) {
        const required = ((s['required'] as string[] | undefined) ?? []).includes(key);
        if (required ? rand() < 0.9 : rand() < 0.4) obj[key] = shaped(rand, plan, inner, depth + 1);
      }
      if (rand() < 0.08) obj[pick(rand, ['extra', 'txt', 'taskId', 'ID'])] = anything(rand, plan, depth + 1);
      return obj;
    }
    default:
      return anything(rand, plan, depth);
  }
}

/**
 * The call as a strict-mode model sends it: every optional property the schema names and the call left out is
 * there as null, at every level. Anything that is not an object shaped by the schema is returned as it is.
 */
function nullFilled(args: unknown, schema: unknown): unknown {
  if (typeof args !== 'object' || args === null || typeof schema !== 'object' || schema === null) return args;
  const s = schema as Record<string, unknown>;
  if (Array.isArray(s['anyOf'])) {
    const branch = (s['anyOf'] as Array<Record<string, unknown>>).find(
      (b) => b['type'] === (Array.isArray(args) ? 'array' : 'object'),
    );
    return branch ? nullFilled(args, branch) : args;
  }
  if (Array.isArray(args)) return args.map((item) => nullFilled(item, s['items']));
  const props = s['properties'] as Record<string, unknown> | undefined;
  if (!props) return args;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args)) out[key] = nullFilled(value, props[key]);
  for (const key of Object.keys(props)) if (!(key in out)) out[key] = null;
  return out;
}

function argumentsFor(rand: Rand, plan: Plan, schema: JsonSchemaObject): unknown {
  const r = rand();
  if (r < 0.6) return shaped(rand, plan, schema);
  if (r < 0.75) return anything(rand, plan);
  const text = JSON.stringify(shaped(rand, plan, schema)) ?? 'undefined';
  if (r < 0.85) return text;
  if (r < 0.95) return text.slice(0, Math.floor(rand() * text.length));
  return pick(rand, ['', '   ', '{', '}', '[]', 'null', 'true', '{"a":', '\u0000', '{}{}']);
}

async function fuzz(runs: number, seed: number, damaged: boolean): Promise<void> {
  const RUNS = runs;
  const rand = seeded(seed);
  let { plan, tk } = world(rand, damaged);
  const schemas = new Map(tk.definitions('mcp').map((d) => [d.name, d.inputSchema]));
  const codes = new Set<string>(ERROR_CODES);
  let failures = 0;
  let successes = 0;
  // Every change a successful call makes must be the toolkit's actor's.
  const actors = new Set<string>();
  let watched: Plan | null = null;
  const watch = () => {
    if (watched === plan) return;
    watched = plan;
    plan.onChange((e) => {
      for (const c of e.changes) actors.add(c.actor);
    });
  };
  for (let run = 0; run < RUNS; run++) {
    for (const name of tk.names) {
      const shapedArgs = argumentsFor(rand, plan, schemas.get(name)!);
      // Each call, then its null-filled form: every optional field a strict model would send as null.
      for (const args of [shapedArgs, nullFilled(shapedArgs, schemas.get(name)!)]) {
        let before = Y.encodeStateAsUpdate(plan.doc);
        // Successful calls grow the document; start over now and then so each check stays cheap.
        if (before.length > 8_000) {
          ({ plan, tk } = world(rand, damaged));
          before = Y.encodeStateAsUpdate(plan.doc);
        }
        watch();
        actors.clear();
        let result: unknown;
        try {
          result = await tk.dispatch(name, args);
        } catch (error) {
          throw new Error(`${name}(${String(JSON.stringify(args))}) threw: ${String(error)}`);
        }
        const json = JSON.stringify(result);
        expect(json, `${name} returned nothing`).toBeTypeOf('string');
        const error = (result as { error?: { code: unknown; message: unknown } } | null)?.error;
        if (error) {
          failures++;
          if (
            !codes.has(String(error.code)) ||
            typeof error.message !== 'string' ||
            error.message.length < 10
          ) {
            throw new Error(`${name}(${JSON.stringify(args)}) gave a poor error: ${json}`);
          }
          if (error.code === 'internal')
            throw new Error(`${name}(${JSON.stringify(args)}) hit a bug: ${json}`);
          if (Buffer.compare(before, Y.encodeStateAsUpdate(plan.doc)) !== 0) {
            throw new Error(`${name}(${JSON.stringify(args)}) failed but changed the document: ${json}`);
          }
        } else {
          successes++;
          for (const actor of actors) expect(actor, `${name}(${JSON.stringify(args)})`).toBe('agent:fuzz');
        }
      }
    }
  }
  // Both paths were exercised.
  expect(failures).toBeGreaterThan(RUNS);
  expect(successes).toBeGreaterThan(RUNS / 2);
}

describe('dispatch under fuzzing', () => {
  // Thousands of calls: generous for a loaded 2-core machine (a few seconds on an idle one).
  const timeout = 180_000;
  it(`survives ${RUNS} random calls per tool (seed ${SEED})`, { timeout }, () => fuzz(RUNS, SEED, false));
  it(
    `survives random calls on a document holding values that are not tasks (seed ${SEED})`,
    { timeout },
    () => fuzz(Math.ceil(RUNS / 3), SEED + 1, true),
  );
});
