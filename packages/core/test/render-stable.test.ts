// Rendering an unchanged plan twice gives the same bytes, in every format, as long as the render clock (the time
// rounded down to its quarter hour) has not moved: a model provider's cached prompt prefix holds between turns.
import { describe, expect, it } from 'vitest';
import { type Plan, RENDER_FORMATS, renderPlan } from '../src/index.js';
import { RENDER_CLOCK_STEP_MS, renderClock } from '../src/protocol-entry.js';
import { fixedPlan, T0, TestClock } from './tools-fixtures.js';

const MINUTE = 60_000;

/** Tasks opened at odd minutes, one woken by the sweeper, finished ones: every piece of a render that has a time. */
function timedPlan(): Plan {
  const clock = new TestClock();
  const plan = fixedPlan('agent:a', 3, { clock });
  clock.advance(7);
  plan.add({ title: 'Book a table', status: 'waiting_user', wakeAt: '2026-12-02T10:00:00Z' });
  clock.advance(11);
  const [hotel] = plan.addMany([
    { title: 'Find a hotel', status: 'in_progress', steps: [{ title: 'Compare prices' }] },
    { title: 'Pay the deposit', status: 'done' },
  ]);
  clock.advance(23);
  plan.withActor('wake').update(hotel!.id, { status: 'in_progress', nextStep: 'Call them' });
  return plan;
}

describe('render clock', () => {
  it('rounds down to the quarter hour', () => {
    expect(renderClock(T0 + 14 * MINUTE + 59_999)).toBe(T0);
    expect(renderClock(T0 + 15 * MINUTE)).toBe(T0 + 15 * MINUTE);
    // The exported step is the one the clock moves by: the last instant before it reads as the start, it does not.
    expect(renderClock(T0 + RENDER_CLOCK_STEP_MS - 1)).toBe(T0);
    expect(renderClock(T0 + RENDER_CLOCK_STEP_MS)).toBe(T0 + RENDER_CLOCK_STEP_MS);
    expect(renderClock(renderClock(T0 + 7 * MINUTE))).toBe(T0);
  });

  it('an unchanged plan renders to identical bytes at close times within a quarter hour, in every format', () => {
    const plan = timedPlan();
    const start = T0 + 60 * MINUTE; // a quarter-hour boundary, 19 to 60 minutes after the tasks were opened
    for (const format of RENDER_FORMATS) {
      const first = renderPlan(plan, { format, now: start });
      for (const later of [1, 59_000, 7 * MINUTE + 31_000, 15 * MINUTE - 1]) {
        const again = renderPlan(plan, { format, now: start + later, done: {} });
        expect(again, `${format} at +${later} ms`).toBe(first);
      }
      // And with a budget and a done window, which also read the clock.
      const options = { format, maxTokens: 60, done: { withinMs: 30 * MINUTE } };
      expect(renderPlan(plan, { ...options, now: start + 14 * MINUTE })).toBe(
        renderPlan(plan, { ...options, now: start + 2 * MINUTE }),
      );
    }
  });

  it('ages move only when the clock crosses a quarter hour, as documented', () => {
    const plan = timedPlan();
    const at = (minutes: number) => renderPlan(plan, { format: 'open-tasks', now: T0 + minutes * MINUTE });
    // Opened at T0+7 and T0+18 min; woken at T0+41 min. At T0+44 the clock reads T0+30.
    expect(at(44)).toContain('- Status: waiting_user, opened 15 minutes ago');
    expect(at(44)).toContain('- Status: in_progress, woke up just now, opened just now');
    expect(at(30)).toBe(at(44));
    // Crossing :45 moves them all at once.
    expect(at(45)).toContain('- Status: waiting_user, opened 30 minutes ago');
    expect(at(45)).toContain('- Status: in_progress, woke up just now, opened 15 minutes ago');
    expect(at(60)).toContain('- Status: waiting_user, opened 45 minutes ago');
    expect(at(60)).toContain('- Status: in_progress, woke up 15 minutes ago, opened 30 minutes ago');
    expect(at(60)).not.toBe(at(44));
    expect(at(75)).toContain('- Status: waiting_user, opened 1 hour ago');
    expect(at(74)).toBe(at(60));
    expect(at(3 * 60 + 5)).toContain('opened 2 hours ago');
    expect(at(3 * 24 * 60)).toContain('opened 2 days ago');
  });

  it('a finished task leaves the done window when the clock crosses a quarter hour', () => {
    const plan = timedPlan(); // "Pay the deposit" closed at T0+18 min
    const at = (minutes: number) =>
      renderPlan(plan, { format: 'reminder', now: T0 + minutes * MINUTE, done: { withinMs: 30 * MINUTE } });
    // 30 minutes after the close is T0+48 min, but the clock reads T0+45 until T0+60.
    expect(at(50)).toContain('✓ Pay the deposit');
    expect(at(59)).toBe(at(50));
    expect(at(60)).not.toContain('✓ Pay the deposit');
  });
});
