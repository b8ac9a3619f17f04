// Learning in the demo, end to end in Chromium against the real server: the in-page agent's tool calls are traced,
// a booking closed as done becomes a learned procedure shown in the "Learned" panel with its version and success
// rate, a similar request in another conversation of the same scope is offered it, its outcome is counted,
// "Learn from this conversation" learns on demand, a skill is retired and restored from the panel, and the agent's
// calls made while the server is down survive a reload and reach the server's trace.
import { beforeAll, describe, expect, it } from 'vitest';
import {
  agentReplies,
  goto,
  openAs,
  type Person,
  say,
  screenshot,
  startServer,
  syncState,
} from './harness.js';
import { useDemo } from './use-demo.js';

const demo = useDemo();
let ann: Person;

beforeAll(async () => {
  ann = await openAs(demo.browser, demo.server.url, 'bistro:conv-a', { id: 'ann001', name: 'Ann' });
});

/** The server learns in the background (after the closing turn settles): generous waits, on the page's state. */
const LEARNING = { timeout: 30_000 };

describe('the Learned panel', () => {
  it('shows what was learned from a finished booking, offers it, counts it, and learns on demand', async () => {
    const { page } = ann;
    await page.getByLabel('Tool family').selectOption('ongoing_task');
    await say(page, 'plan book a table: find a slot, confirm with the guests');
    expect(await agentReplies(page, 1)).toContain('Planned');
    await say(page, 'done 2');
    await agentReplies(page, 2);
    await say(page, 'done 1');
    expect(await agentReplies(page, 3)).toContain('done');

    await page.getByRole('tab', { name: 'Learned' }).click();
    const skill = page.locator('li.learned-skill');
    await skill.locator('.learned-version', { hasText: 'version 1' }).waitFor(LEARNING);
    expect(await skill.count()).toBe(1);
    expect(await skill.locator('.learned-author').textContent()).toContain('not written by a model');
    expect(await skill.locator('.learned-steps').textContent()).toBe(
      'set_ongoing_task → set_ongoing_task → clear_ongoing_task',
    );
    expect(await skill.locator('.learned-rate').textContent()).toBe('Success: not yet used');

    // Another conversation of the same scope: the similar request is offered the procedure.
    await goto(page, demo.server.url, 'bistro:conv-b');
    await page.getByRole('tab', { name: 'Learned' }).click();
    await skill.locator('.learned-version', { hasText: 'version 1' }).waitFor(LEARNING); // the scope's skills synced
    await page.getByLabel('Tool family').selectOption('ongoing_task');
    await say(page, 'plan book a table for two: call the restaurant, confirm');
    await agentReplies(page, 1);
    const offered = await page.evaluate(() => {
      const { session } = (window as unknown as { cairnDemo: { session: { traces: import('yjs').Doc } } })
        .cairnDemo;
      return [...session.traces.getMap('offers').values()].length;
    });
    expect(offered).toBe(1);
    await say(page, 'done 1');
    await agentReplies(page, 2);

    // The offered version counts the success; the procedure learned again is version 2.
    await page.getByRole('tab', { name: 'Learned' }).click();
    await skill.locator('.learned-version', { hasText: 'version 2' }).waitFor(LEARNING);
    await skill.locator('.learned-versions li', { hasText: 'v1: 1 of 1 (100%)' }).waitFor(LEARNING);
    expect(await skill.locator('.learned-versions li').allTextContents()).toEqual([
      'v1: 1 of 1 (100%)',
      'v2: not yet used',
    ]);

    await page.getByRole('button', { name: 'Learn from this conversation' }).click();
    await page.locator('.toast', { hasText: /^Learned “.+” \(version \d+\)\.$/ }).waitFor(LEARNING);
    await screenshot(page, 'learned-panel');
  });

  it('retires and restores a skill with the button on it, through the server', async () => {
    const { page } = ann; // still on bistro:conv-b, where the procedure was learned again
    await page.getByRole('tab', { name: 'Learned' }).click();
    const skill = page.locator('li.learned-skill').first();
    const id = await skill.getAttribute('data-skill');
    // The list redraws on every change: the same skill is found again by its id.
    const same = page.locator(`li.learned-skill[data-skill="${id}"]`);
    const onServer = async () =>
      (
        (await (await fetch(`${demo.server.url}/api/scopes/bistro/skills/${id}`)).json()) as {
          skill: { status: string };
        }
      ).skill.status;
    expect(await onServer()).toBe('active');

    await same.getByRole('button', { name: 'Retire' }).click();
    await page
      .locator('.toast', { hasText: /^Retired “.+”: the agent is no longer offered it\.$/ })
      .waitFor(LEARNING);
    await same.locator('.badge', { hasText: 'retired' }).waitFor(LEARNING);
    expect(await same.locator('.learned-reason').textContent()).toBe('Retired: retired by Ann');
    expect(await onServer()).toBe('retired');

    await same.getByRole('button', { name: 'Restore' }).click();
    await same.locator('.badge', { hasText: 'active' }).waitFor(LEARNING);
    expect(await onServer()).toBe('active');
    await screenshot(page, 'learned-panel-restored');
  });

  it("keeps the agent's tool calls made while the server is down through a reload, then syncs them", async () => {
    const { page } = ann;
    const planId = 'bistro:conv-offline';
    await goto(page, demo.server.url, planId);
    await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
    const traced = () =>
      page.evaluate(
        () =>
          (
            window as unknown as { cairnDemo: { session: { traces: import('yjs').Doc } } }
          ).cairnDemo.session.traces.getArray('calls').length,
      );
    expect(await traced()).toBe(0);

    await demo.server.stop();
    await syncState(page, 'offline');
    await page.getByLabel('Tool family').selectOption('ongoing_task');
    await say(page, 'plan call the caterer: ask for a quote, book');
    expect(await agentReplies(page, 1)).toContain('Planned');
    const calls = await traced();
    expect(calls).toBeGreaterThan(0);
    await page.evaluate(() =>
      (window as unknown as { cairnDemo: { session: { flush(): Promise<void> } } }).cairnDemo.session.flush(),
    );

    await page.reload();
    await page.getByLabel('New task').waitFor();
    await page.waitForFunction(
      (n) =>
        (
          window as unknown as { cairnDemo?: { session: { traces: import('yjs').Doc } } }
        ).cairnDemo?.session.traces.getArray('calls').length === n,
      calls,
      LEARNING,
    );

    demo.server = await startServer({ port: demo.server.port, dataDir: demo.server.dataDir });
    await syncState(page, 'saved');
    await expect
      .poll(
        async () =>
          (
            (await (
              await fetch(`${demo.server.url}/api/plans/${encodeURIComponent(planId)}/traces`)
            ).json()) as {
              calls: unknown[];
            }
          ).calls.length,
        LEARNING,
      )
      .toBe(calls);
  });
});
