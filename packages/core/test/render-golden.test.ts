// Every render format, byte for byte against golden files (CAIRN_UPDATE_GOLDEN=1 rewrites them), the empty
// plan included: nothing to show renders as '' so a context section costs zero tokens.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import {
  type Plan,
  RENDER_FORMATS,
  type RenderFormat,
  type RenderOptions,
  renderPlan,
} from '../src/index.js';
import {
  type FormatOptions,
  renderChecklist,
  renderNative,
  renderOpenTasks,
  renderReminder,
} from '../src/render/index.js';
import { cl100kTokenizer } from '../src/tokenizers/cl100k.js';
import { fixedPlan, T0, TestClock } from './tools-fixtures.js';

const GOLDEN = new URL('./golden/', import.meta.url);
const NOW = T0 + 3 * 3_600_000;

function golden(name: string, text: string): void {
  const file = new URL(name, GOLDEN);
  if (process.env['CAIRN_UPDATE_GOLDEN']) writeFileSync(file, text);
  // A missing file fails: writing it here would make a test that can never fail on its first run (or in CI).
  if (!existsSync(file)) {
    throw new Error(`The golden file ${name} is missing. Write it with CAIRN_UPDATE_GOLDEN=1 and review it.`);
  }
  expect(text).toBe(readFileSync(file, 'utf8'));
}

/** Seed 000's three tasks plus what the other seeds add: steps, dependencies, waiting, claims, a failure. */
function samplePlan(): Plan {
  const clock = new TestClock();
  const plan = fixedPlan('agent:a', 7, { clock });
  const [query] = plan.addMany([
    { key: 'q', title: 'Query admin relay list to find active relays', status: 'done' },
    {
      key: 'd',
      title: 'Draft long-form article about Nostr relay setup',
      status: 'in_progress',
      activeForm: 'Drafting the article',
      blockedBy: ['q'],
      steps: [
        { title: 'Outline the sections', status: 'done' },
        { title: 'Write the body', status: 'in_progress', activeForm: 'Writing the body' },
        { title: 'Add relay examples' },
      ],
    },
    {
      key: 'p',
      title: 'Publish article as kind 30023',
      blockedBy: ['d'],
      nextStep: 'Sign the event with the agent key',
    },
  ]);
  clock.advance(20);
  plan.add({
    title: 'Ask the admin which relays to recommend',
    status: 'waiting_user',
    wakeAt: '2026-12-04T09:00:00Z',
    nextStep: 'Remind the admin',
  });
  clock.advance(20);
  plan.addMany([
    {
      key: 'm',
      title: 'Mirror the article to the backup relay',
      status: 'failed',
      note: 'relay rejected kind 30023',
    },
    { title: 'Announce the article', blockedBy: ['m'] },
    { title: 'Review the draft', assignee: 'user:ann' },
  ]);
  clock.advance(20);
  plan.add({ title: 'Set up the signing key', status: 'cancelled' });
  expect(query!.num).toBe(1);
  return plan;
}

const presence = [
  { actor: 'user:ann', taskId: null },
  { actor: 'agent:b', taskId: null },
];

const ALONE: Record<RenderFormat, (plan: Plan, options: FormatOptions) => string> = {
  checklist: renderChecklist,
  reminder: renderReminder,
  'open-tasks': renderOpenTasks,
  native: renderNative,
};

describe('render formats', () => {
  const cases: Array<[string, Omit<RenderOptions, 'format'>]> = [
    ['', { now: NOW }],
    ['-budget', { now: NOW, maxTokens: 120, tokenizer: cl100kTokenizer }],
    ['-done-policy', { now: NOW, done: { keep: 1 } }],
  ];
  for (const format of RENDER_FORMATS) {
    for (const [suffix, options] of cases) {
      it(`${format}${suffix}`, () => {
        const plan = samplePlan();
        const withPresence = format === 'native' ? { presence } : {};
        golden(`${format}${suffix}.txt`, renderPlan(plan, { format, ...options, ...withPresence }));
        // @cairn/core/render's function for the format alone writes the same bytes.
        golden(`${format}${suffix}.txt`, ALONE[format](plan, { ...options, ...withPresence }));
      });
    }
    it(`${format} renders an empty plan as ''`, () => {
      expect(renderPlan(fixedPlan(), { format, now: NOW })).toBe('');
      expect(renderPlan(fixedPlan(), { format, now: NOW, maxTokens: 5, presence })).toBe('');
    });
  }

  it('fails on a missing golden file instead of writing it', () => {
    vi.stubEnv('CAIRN_UPDATE_GOLDEN', ''); // as in CI, whatever this shell has set
    onTestFinished(() => {
      vi.unstubAllEnvs();
    });
    expect(() => golden('no-such-format.txt', 'anything')).toThrow(
      /golden file no-such-format\.txt is missing/,
    );
    expect(existsSync(new URL('no-such-format.txt', GOLDEN))).toBe(false);
  });

  it('native without awareness says nothing about who is connected', () => {
    const text = renderPlan(samplePlan(), { format: 'native', now: NOW });
    expect(text).not.toContain('Here now');
    expect(text).toContain('assigned to user:ann');
    expect(renderPlan(samplePlan(), { format: 'native', now: NOW, actor: 'user:ann' })).toContain(
      'Review the draft',
    );
  });

  it('a task the wake-up sweeper just woke says so in the open-tasks block and the native plan', () => {
    const clock = new TestClock();
    const plan = fixedPlan('agent:a', 7, { clock });
    const [task] = plan.addMany([
      { title: "Book a table at Luigi's", status: 'waiting_user', wakeAt: '2026-12-02T10:00:00Z' },
      { title: 'Find a hotel', status: 'in_progress' },
    ]);
    clock.advance(60);
    plan.withActor('wake').update(task!.id, { status: 'in_progress' });
    const now = clock.ms + 5 * 60_000;
    const block = renderPlan(plan, { format: 'open-tasks', now });
    expect(block).toContain(
      "Task 1: Book a table at Luigi's\n- Status: in_progress, woke up just now, opened",
    );
    expect(block).toMatch(/Task 2: Find a hotel\n- Status: in_progress, opened/);
    expect(renderPlan(plan, { format: 'native', now })).toMatch(
      /Book a table at Luigi's \[\w+\] — .*just woke up/,
    );
    // Once anyone else touches it, it is an ordinary task again.
    plan.update(task!.id, { nextStep: 'Call Luigi' });
    expect(renderPlan(plan, { format: 'open-tasks', now })).not.toContain('woke up');
  });

  it('a plan with only finished work hidden by the done policy costs nothing', () => {
    const plan = fixedPlan();
    plan.addMany([
      { title: 'a', status: 'done' },
      { title: 'b', status: 'cancelled' },
    ]);
    for (const format of RENDER_FORMATS) expect(renderPlan(plan, { format, done: { keep: 0 } })).toBe('');
    expect(renderPlan(plan, { format: 'checklist' })).toContain('- [x] 2. b (cancelled)');
  });
});
