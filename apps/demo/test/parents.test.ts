// A task and its open steps in the demo: the task is not next while its steps are open, closing it closes
// them, and an open step is always in the list, whatever its parent's state, without "Show closed".
import { beforeAll, describe, expect, it } from 'vitest';
import { agentReplies, openAs, type Person, row, say } from './harness.js';
import { useDemo } from './use-demo.js';

const demo = useDemo();
let ann: Person;
let bo: Person;

beforeAll(async () => {
  const planId = `parents-${Date.now().toString(36)}`;
  ann = await openAs(demo.browser, demo.server.url, planId, { id: 'ann001', name: 'Ann' });
  bo = await openAs(demo.browser, demo.server.url, planId, { id: 'bo0002', name: 'Bo' });
});

const counts = (person: Person, text: string) =>
  person.page.locator('.counts', { hasText: text }).waitFor({ timeout: 30_000 });

describe('a task with open steps', () => {
  it('is not next while its steps are open; its steps are', async () => {
    await say(ann.page, 'plan a website relaunch: audit content, redesign, go live');
    expect(await agentReplies(ann.page, 1)).toContain('Planned “Website relaunch”');
    await say(ann.page, "what's next?");
    const next = await agentReplies(ann.page, 2);
    expect(next).toContain('Next up: “Audit content”');
    expect(next).not.toContain('Website relaunch');
    // Its first step is ready (each waits on the one before), not the task that waits on them.
    await counts(bo, '4 open · 0 closed · 1 ready for you');
    await row(bo.page, 'Website relaunch')
      .locator('.task-meta', { hasText: 'Waits on its steps: Audit content, Redesign, Go live' })
      .waitFor();
    // The graph agrees: the step is ready, the task that waits on it is not.
    await bo.page.getByRole('tab', { name: 'Graph' }).click();
    await bo.page.locator('.node.node-ready', { hasText: 'Audit content' }).waitFor();
    await bo.page.locator('.node.node-blocked', { hasText: 'Website relaunch' }).waitFor();
    expect(await bo.page.locator('.node.node-ready').count()).toBe(1);
    await bo.page.getByRole('tab', { name: 'List' }).click();
  });

  it('closing it closes its open steps, and a step reopened under it shows without "Show closed"', async () => {
    await say(
      ann.page,
      'plan a product launch: write the announcement, review it, publish on the blog, share on social',
    );
    expect(await agentReplies(ann.page, 3)).toContain('Planned “Product launch”');
    await row(bo.page, 'Share on social').waitFor();
    // Task 5: the relaunch is 1 and its steps 2 to 4.
    await say(ann.page, 'done 5');
    expect(await agentReplies(ann.page, 4)).toContain('Marked “Product launch” done');
    // The steps closed with it: nothing is left open and hidden under a closed task.
    await row(bo.page, 'Product launch').waitFor({ state: 'detached' });
    await row(bo.page, 'Review it').waitFor({ state: 'detached' });
    await counts(bo, '4 open · 5 closed · 1 ready for you');

    // Ann has her agent start one of the skipped steps again; Bo, who never ticked "Show closed", sees it under
    // its closed task.
    await say(ann.page, 'start review it');
    expect(await agentReplies(ann.page, 5)).toContain('Started “Review it”');
    await row(bo.page, 'Review it').waitFor();
    await row(bo.page, 'Product launch').waitFor();
    expect(await bo.page.getByRole('checkbox', { name: 'Product launch', exact: true }).isChecked()).toBe(
      true,
    );
    await row(bo.page, 'Review it').locator('.pill', { hasText: 'in progress' }).waitFor();
    await row(bo.page, 'Share on social').waitFor({ state: 'detached' });
    await counts(bo, '5 open · 4 closed');
    await row(ann.page, 'Review it').waitFor();
  });
});
