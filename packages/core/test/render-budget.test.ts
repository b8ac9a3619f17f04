// The token budget: finished tasks go first, then finished steps, then step lists collapse, and open tasks are
// dropped last and always counted, so no open task disappears silently.

import { describe, expect, it } from 'vitest';
import { CairnError, isOpenStatus, RENDER_FORMATS, renderPlan, type Tokenizer } from '../src/index.js';
import { approximateTokenizer, defaultTokenizer } from '../src/protocol-entry.js';
import { cl100kTokenizer } from '../src/tokenizers/cl100k.js';
import { fixedPlan, TestClock } from './tools-fixtures.js';

function bigPlan() {
  const clock = new TestClock();
  const plan = fixedPlan('agent:a', 3, { clock });
  for (let i = 1; i <= 30; i++) {
    clock.advance(1);
    plan.add({
      title: `Task number ${i} with a reasonably descriptive title`,
      status: i % 3 === 0 ? 'done' : i % 5 === 0 ? 'in_progress' : 'pending',
      ...(i % 4 === 0 ? { steps: [{ title: `step ${i}.1`, status: 'done' }, { title: `step ${i}.2` }] } : {}),
    });
  }
  return plan;
}

describe('render budget', () => {
  it('estimates by default, counts real tokens with cl100k, and takes an injected one', () => {
    expect(cl100kTokenizer.count('hello world')).toBe(2);
    expect(cl100kTokenizer.count('')).toBe(0);
    expect(defaultTokenizer).toBe(approximateTokenizer);
    expect(approximateTokenizer.count('12345678')).toBe(4);
    // The estimate errs high on plan text, so a budget it enforces holds under the real tokenizer.
    const sample = '- [x] 1. Query admin relay list to find active relays (id 7fk2m9q, blocked by 3, 4)';
    expect(approximateTokenizer.count(sample)).toBeGreaterThanOrEqual(cl100kTokenizer.count(sample));
    const seen: string[] = [];
    const counting: Tokenizer = {
      count: (text) => {
        seen.push(text);
        return text.length;
      },
    };
    const text = renderPlan(bigPlan(), { format: 'checklist', maxTokens: 600, tokenizer: counting });
    expect(text.length).toBeLessThanOrEqual(600);
    expect(seen.length).toBeGreaterThan(1);
  });

  it('fits every budget, never dropping an open task without counting it', () => {
    const plan = bigPlan();
    const open = plan.children(null).filter((t) => isOpenStatus(t.status));
    for (const format of RENDER_FORMATS) {
      const full = defaultTokenizer.count(renderPlan(plan, { format }));
      for (const maxTokens of [
        full,
        Math.floor(full * 0.8),
        Math.floor(full / 2),
        Math.floor(full / 4),
        60,
        1,
      ]) {
        const text = renderPlan(plan, { format, maxTokens });
        const minimal = renderPlan(plan, { format, maxTokens: 1 });
        expect(
          defaultTokenizer.count(text) <= maxTokens || text === minimal,
          `${format} @ ${maxTokens}`,
        ).toBe(true);
        const hidden = Number(/(\d+) open tasks?/.exec(text)?.[1] ?? 0);
        const shown = open.filter((t) => text.includes(t.title)).length;
        expect(shown + hidden, `${format} @ ${maxTokens}`).toBe(open.length);
      }
    }
  });

  it('gives up finished tasks first, oldest first, before touching open ones', () => {
    const plan = bigPlan();
    const full = renderPlan(plan, { format: 'checklist' });
    const text = renderPlan(plan, { format: 'checklist', maxTokens: defaultTokenizer.count(full) - 30 });
    const done = plan.children(null).filter((t) => t.status === 'done');
    expect(text).toMatch(/\(Not shown: \d+ finished tasks?\.\)$/);
    expect(text).not.toContain(`${done[0]!.num}. ${done[0]!.title}`);
    expect(text).toContain(`${done[done.length - 1]!.num}. ${done[done.length - 1]!.title}`);
    for (const t of plan.children(null).filter((x) => isOpenStatus(x.status)))
      expect(text).toContain(t.title);
  });

  it('collapses step lists before dropping open tasks', () => {
    const plan = bigPlan();
    const noDone = renderPlan(plan, { format: 'native', done: { keep: 0 } });
    const budget = defaultTokenizer.count(noDone) - 20;
    const text = renderPlan(plan, { format: 'native', maxTokens: budget, done: { keep: 0 } });
    // Finished steps go before whole step lists; either way, no open task is dropped for 20 tokens.
    expect(text).toMatch(/finished steps|\(1 of 2 steps done\)/);
    expect(text).not.toContain('open task');
    const tight = renderPlan(plan, {
      format: 'native',
      maxTokens: Math.floor(budget * 0.85),
      done: { keep: 0 },
    });
    expect(tight).toMatch(/\(1 of 2 steps done\)/);
  });

  it('keeps finished tasks by count and age with the done policy', () => {
    const clock = new TestClock();
    const plan = fixedPlan('agent:a', 1, { clock });
    plan.add({ title: 'old', status: 'done' });
    clock.advance(120);
    plan.add({ title: 'recent', status: 'done' });
    plan.add({ title: 'open' });
    const within = renderPlan(plan, { format: 'reminder', now: clock.ms, done: { withinMs: 3_600_000 } });
    expect(within).toBe('✓ recent\n☐ open\n(Not shown: 1 finished task.)');
    expect(renderPlan(plan, { format: 'reminder', now: clock.ms, done: { keep: 2 } })).toBe(
      '✓ old\n✓ recent\n☐ open',
    );
  });

  it('holds the budget as cl100k, or any tokenizer counting piece by piece, counts it', () => {
    const plan = bigPlan();
    const open = plan.children(null).filter((t) => isOpenStatus(t.status));
    // Rounds up each piece it is given, so its pieces add up to more than the whole.
    const perPiece: Tokenizer = { count: (text) => approximateTokenizer.count(text) };
    for (const tokenizer of [cl100kTokenizer, perPiece]) {
      for (const format of RENDER_FORMATS) {
        const full = tokenizer.count(renderPlan(plan, { format }));
        for (const maxTokens of [full, full - 1, Math.floor(full * 0.7), Math.floor(full / 3), 40]) {
          const text = renderPlan(plan, { format, maxTokens, tokenizer });
          const minimal = renderPlan(plan, { format, maxTokens: 1, tokenizer });
          expect(tokenizer.count(text) <= maxTokens || text === minimal, `${format} @ ${maxTokens}`).toBe(
            true,
          );
          const hidden = Number(/(\d+) open tasks?/.exec(text)?.[1] ?? 0);
          const shown = open.filter((t) => text.includes(t.title)).length;
          expect(shown + hidden, `${format} @ ${maxTokens}`).toBe(open.length);
        }
      }
    }
  });

  it('reads only about what fits of a large plan', () => {
    const plan = fixedPlan('agent:a', 5);
    // In calls of 100 tasks (500 with their steps): one call adds at most PLAN_LIMITS.tasksPerCall.
    for (const start of [0, 100]) {
      plan.addMany(
        Array.from({ length: 100 }, (_, k) => {
          const i = start + k;
          return {
            title: `Task ${i} with a title of a usual length for a plan`,
            status: i < 40 ? ('done' as const) : ('pending' as const),
            steps: Array.from({ length: 4 }, (_, s) => ({
              title: `Step ${s} of task ${i}, also of a usual length`,
            })),
          };
        }),
      );
    }
    for (const format of RENDER_FORMATS) {
      const full = renderPlan(plan, { format }).length;
      let counted = 0;
      const perPiece: Tokenizer = {
        count: (text) => {
          counted += text.length;
          return approximateTokenizer.count(text);
        },
      };
      const text = renderPlan(plan, { format, maxTokens: 1_000, tokenizer: perPiece });
      expect(text.length).toBeLessThan(full / 10);
      expect(counted, format).toBeLessThan(full / 3);
      let wholeTexts = 0;
      const byLength: Tokenizer = {
        ...approximateTokenizer,
        count: (t) => {
          wholeTexts++;
          return approximateTokenizer.count(t);
        },
      };
      expect(renderPlan(plan, { format, maxTokens: 1_000, tokenizer: byLength })).toBe(text);
      expect(wholeTexts, format).toBeLessThanOrEqual(2);
    }
  });

  it('reads the steps of only the tasks it can show, however long the plan', () => {
    // Top-level tasks of 4 steps, each with 1 step of its own (9 tasks each), added in calls of 50 (450 tasks).
    const plan = fixedPlan('agent:a', 7);
    const addTops = (from: number, to: number) => {
      for (let start = from; start < to; start += 50)
        plan.addMany(
          Array.from({ length: 50 }, (_, k) => k + start).map((i) => ({
            title: `Task ${i} with a title of a usual length for a plan`,
            status: i < 40 ? ('done' as const) : ('pending' as const),
            steps: Array.from({ length: 4 }, (_, s) => ({
              title: `Step ${s} of task ${i}, also of a usual length`,
              status: s === 0 ? ('done' as const) : ('pending' as const),
              steps: [{ title: `Detail of step ${s} of task ${i}` }],
            })),
          })),
        );
    };
    const read = new Set<string>();
    const children = plan.children.bind(plan);
    plan.children = (parent) => {
      if (parent !== null && plan.get(parent)?.parent !== null) read.add(parent);
      return children(parent);
    };
    /** How many steps' own step lists one render of each format reads. */
    const stepListsRead = () =>
      RENDER_FORMATS.map((format) => {
        read.clear();
        expect(renderPlan(plan, { format, maxTokens: 1_000 })).toContain('open task');
        return read.size;
      });
    addTops(0, 200);
    const at200 = stepListsRead();
    addTops(200, 400);
    const at400 = stepListsRead();
    RENDER_FORMATS.forEach((format, i) => {
      // Of the 800 steps of 200 tasks, about what is shown (34 lines). The native format groups an open task by
      // where its open steps are, so it reads every open step's own steps: that part grows with the plan.
      if (format === 'native') return;
      expect(at200[i], format).toBeLessThan(400);
      expect(at400[i], format).toBe(at200[i]);
    });
  });

  it('refuses a budget that is not a positive integer and an unknown format', () => {
    expect(() => renderPlan(fixedPlan(), { format: 'checklist', maxTokens: 0 })).toThrow(CairnError);
    expect(() => renderPlan(fixedPlan(), { format: 'markdown' as never })).toThrow(
      /formats: checklist, reminder/,
    );
  });
});

describe('render budget, collapsing', () => {
  it('collapses only the step lists that the summary makes shorter', () => {
    const plan = fixedPlan('agent:a', 5);
    plan.add({
      title: 'Long task',
      steps: Array.from({ length: 8 }, (_, i) => ({ title: `a long step description number ${i} to do` })),
    });
    plan.add({ title: 'Short task', steps: [{ title: 'x' }] });
    const whole = renderPlan(plan, { format: 'checklist' });
    // Room for everything once the long list is summarised, not before.
    const budget = Math.ceil((whole.length - 250) / 2.5);
    const text = renderPlan(plan, { format: 'checklist', maxTokens: budget });
    expect(text).toMatch(/Long task \(0 of 8 steps done\)/);
    // "x" is shorter than "(0 of 1 step done)": summarising it would have cost tokens.
    expect(text).toMatch(/\. x\n|\. x$/);
    expect(text).not.toMatch(/Short task \(0 of 1 step done\)/);
  });
});
