// Shared helpers for the tool and render tests: a reproducible plan (seeded ids, a clock that ticks a minute per
// write) and a check that a refused tool call left the document byte for byte as it was.
import { expect } from 'vitest';
import * as Y from 'yjs';
import { createPlan, type Plan, type Toolkit } from '../src/index.js';

export const T0 = Date.parse('2026-12-02T09:00:00Z');

export function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A clock that stands still until a test moves it. */
export class TestClock {
  ms = T0;
  readonly now = (): number => this.ms;
  advance(minutes: number): void {
    this.ms += minutes * 60_000;
  }
}

/** A plan whose ids come from `seed` and whose time is `clock` (T0 unless moved). */
export function fixedPlan(
  actor = 'agent:a',
  seed = 1,
  options: { doc?: Y.Doc; clock?: TestClock } = {},
): Plan {
  const clock = options.clock ?? new TestClock();
  return createPlan({
    actor,
    random: seeded(seed),
    now: clock.now,
    ...(options.doc ? { doc: options.doc } : {}),
  });
}

export function sync(a: Y.Doc, b: Y.Doc): void {
  Y.applyUpdate(b, Y.encodeStateAsUpdate(a, Y.encodeStateVector(b)));
  Y.applyUpdate(a, Y.encodeStateAsUpdate(b, Y.encodeStateVector(a)));
}

/** Dispatches a call that must be refused: checks the error's code and message and that the doc is unchanged. */
export async function refused(
  toolkit: Toolkit,
  name: string,
  args: unknown,
  code: string,
): Promise<{ code: string; message: string; [k: string]: unknown }> {
  const before = Y.encodeStateAsUpdate(toolkit.plan.doc);
  const result = (await toolkit.dispatch(name, args)) as { error?: { code: string; message: string } };
  expect(result.error, `expected ${name} to be refused`).toBeDefined();
  expect(result.error!.code).toBe(code);
  expect(result.error!.message.length).toBeGreaterThan(10);
  expect(Y.encodeStateAsUpdate(toolkit.plan.doc)).toEqual(before);
  return result.error!;
}
