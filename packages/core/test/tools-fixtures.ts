// Shared helpers for the tool and render tests: a reproducible plan (seeded ids, a clock that ticks a minute per
// write), a check that a refused tool call left the document byte for byte as it was, and an arbiter that always
// says another agent holds the task.
import { expect } from 'vitest';
import * as Y from 'yjs';
import { createPlan, type Plan, type Toolkit } from '../src/index.js';
import type { ClaimArbiter } from '../src/protocol-entry.js';
import { seeded } from '../src/testing/seeded.js';

export const T0 = Date.parse('2026-12-02T09:00:00Z');

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

/**
 * Applies, as a peer's update would arrive, values no Cairn writer makes but any writer can: entries under
 * `tasks` that are not task maps, fields of the wrong type on `victim` (an existing task), impossible times and
 * broken tombstones. Returns the ids of the entries that are not tasks.
 */
export function damage(doc: Y.Doc, victim: string): string[] {
  const peer = new Y.Doc();
  Y.applyUpdate(peer, Y.encodeStateAsUpdate(doc));
  const tasks = peer.getMap<unknown>('tasks');
  peer.transact(() => {
    tasks.set('x1', 'a plain string');
    tasks.set('x2', 42);
    tasks.set('x3', new Y.Array());
    tasks.set('x4', null);
    const task = tasks.get(victim) as Y.Map<unknown>;
    task.set('updatedAt', -1e308);
    task.set('createdAt', Number.POSITIVE_INFINITY);
    task.set('num', 'seven');
    task.set('blockedBy', 'x1');
    task.set('context', 5);
    task.set('parent', 42);
    task.set('assignee', { who: 'agent:b' });
    task.set('wakeAt', 17);
    const removed = peer.getMap<unknown>('removed');
    removed.set('gone1', null);
    removed.set('gone2', { by: 7, num: 1e300 });
    removed.set('gone3', 'removed');
  }, 'user:mallory');
  Y.applyUpdate(doc, Y.encodeStateAsUpdate(peer, Y.encodeStateVector(doc)));
  peer.destroy();
  return ['x1', 'x2', 'x3', 'x4'];
}

/**
 * An arbiter that answers every claim `lost` to `holder` and records each as `<actor> <taskId>` in `asked`; the
 * other requests find nothing to do.
 */
export function arbiterHeldBy(holder: string, asked: string[]): ClaimArbiter {
  const nothing = { taskId: null, holder: null, arbitrated: true, message: '' };
  return {
    claim: async (id, actor) => {
      asked.push(`${actor} ${id}`);
      return { outcome: 'lost', taskId: id, holder, arbitrated: true, message: `held by ${holder}` };
    },
    claimNext: async () => ({ outcome: 'none', ...nothing }),
    release: async () => ({ outcome: 'won', ...nothing }),
    handOff: async () => ({ outcome: 'won', ...nothing }),
  };
}
