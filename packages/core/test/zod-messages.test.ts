// The app path validates with zod/mini, which words no message until a locale is set; Cairn sets English (unless
// the app chose a locale). This file imports nothing that loads classic zod, which would set English itself, so
// it sees what a page that bundles only the plan and one tool family sees.

import { describe, expect, it } from 'vitest';
import { globalConfig } from 'zod/v4/core';
import { createPlan } from '../src/plan.js';
import { cairnFamily, createToolkitOf } from '../src/tools/index.js';

describe('refusals on the zod/mini path', () => {
  it('say what is wrong in words, as classic zod did', async () => {
    expect(globalConfig.localeError).toBeTypeOf('function');
    const plan = createPlan({ actor: 'agent:a' });
    expect(() => plan.add({ title: 'x'.repeat(501) })).toThrow(
      'Invalid tasks to add: 0.title: a title has at most 500 characters',
    );
    expect(() => plan.add({ title: 'T', blockedBy: [''] })).toThrow(
      'Invalid tasks to add: 0.blockedBy.0: Too small: expected string to have >=1 characters',
    );
    const toolkit = createToolkitOf(plan, [cairnFamily]);
    const refused = (await toolkit.dispatch('list_tasks', { limit: 0, view: 'soon' })) as {
      error: { message: string };
    };
    expect(refused.error.message).toContain('limit: Too small: expected number to be >=1');
    expect(refused.error.message).toContain(
      'view: Invalid option: expected one of "ready"|"blocked"|"open"|"closed"|"all"',
    );
  });
});
