// Two people in two browser profiles on one plan, through the real server: what one adds and edits appears for
// the other, two people typing in one title keep both edits, reordering, steps, dependencies, presence, undo
// of one's own edits only, a title with markup shown as typed, and screenshots of the main views.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addTask, openAs, type Person, row, screenshot, stableRow, syncState, valueIs } from './harness.js';
import { openPair, useDemo } from './use-demo.js';

const demo = useDemo();
let ann: Person;
let bo: Person;
let planId: string;

// Each test opens its own pages on its own plan and closes them after, so a test that fails (a page left mid-edit,
// a task left behind) cannot make the next one fail too.
beforeEach(async () => {
  ({ ann, bo, planId } = await openPair(demo, 'collab'));
});

afterEach(async () => {
  await Promise.all([ann?.context.close(), bo?.context.close()]);
});

describe('two people on one plan', () => {
  it('sees what the other adds and edits', async () => {
    await addTask(ann.page, 'Buy milk');
    await row(bo.page, 'Buy milk').waitFor();

    const title = (await stableRow(ann.page, 'Buy milk')).getByLabel('Edit title');
    await title.click();
    await title.press('End');
    await title.pressSequentially(' and eggs');
    await title.press('Enter');
    await row(bo.page, 'Buy milk and eggs').waitFor();
    await valueIs(row(bo.page, 'Buy milk and eggs').getByLabel('Edit title'), 'Buy milk and eggs');

    // Bo marks it done; it leaves Ann's open list, and "show closed" brings it back checked.
    await bo.page.getByRole('checkbox', { name: 'Buy milk and eggs' }).click();
    await row(ann.page, 'Buy milk and eggs').waitFor({ state: 'detached' });
    await ann.page.getByLabel(/Show closed/).check();
    expect(await ann.page.getByRole('checkbox', { name: 'Buy milk and eggs' }).isChecked()).toBe(true);
    await ann.page.getByLabel(/Show closed/).uncheck();
  });

  it('keeps both edits when two people type in one title at once', async () => {
    await addTask(ann.page, 'Draft');
    await row(bo.page, 'Draft').waitFor();
    const a = (await stableRow(ann.page, 'Draft')).getByLabel('Edit title');
    const b = (await stableRow(bo.page, 'Draft')).getByLabel('Edit title');
    await a.click();
    await a.press('Home');
    await b.click();
    await b.press('End');
    // Both type at the same time: keystrokes interleave while each side's edits are still in flight.
    await Promise.all([a.pressSequentially('Rough '), b.pressSequentially(' v2')]);
    await valueIs(a, 'Rough Draft v2');
    await valueIs(b, 'Rough Draft v2');
    // Each caret stayed where its owner was typing: one more key lands in the right place on both sides.
    await Promise.all([a.press('X'), b.press('Y')]);
    await valueIs(a, 'Rough XDraft v2Y');
    await valueIs(b, 'Rough XDraft v2Y');
    await a.press('Enter');
    await b.press('Enter');
    await row(ann.page, 'Rough XDraft v2Y').waitFor();
    await row(bo.page, 'Rough XDraft v2Y').waitFor();
    expect(await row(ann.page, 'Draft').count()).toBe(0);
  });

  it('shows a title with markup as typed, in the list, the chat and the graph', async () => {
    const xss = '<img src=x onerror=alert(1)>';
    await addTask(bo.page, xss);
    await row(ann.page, xss).waitFor();
    await valueIs(row(ann.page, xss).getByLabel('Edit title'), xss);
    await ann.page.getByLabel('Message').fill(`look at ${xss}`);
    await ann.page.getByLabel('Message').press('Enter');
    await bo.page.locator('li.msg-user .msg-text', { hasText: `look at ${xss}` }).waitFor();
    await bo.page.getByRole('tab', { name: 'Graph' }).click();
    await bo.page.locator('.node', { hasText: '<img src=x' }).first().waitFor();
    expect(await ann.page.locator('img').count()).toBe(0);
    expect(await bo.page.locator('img').count()).toBe(0);
    expect([...ann.dialogs, ...bo.dialogs]).toEqual([]);
    await bo.page.getByRole('tab', { name: 'List' }).click();
    // Remove it again so the other tests' lists stay short.
    await row(bo.page, xss).getByRole('button', { name: 'Details' }).click();
    await row(bo.page, xss).getByRole('button', { name: 'Delete' }).click();
    await row(ann.page, xss).waitFor({ state: 'detached' });
  });

  it('shows what is ready, what is blocked and a dependency cycle that a merge created', async () => {
    await ann.page.evaluate(() => {
      const { plan } = (window as unknown as { cairnDemo: { plan: import('@cairn/core').Plan } }).cairnDemo;
      const a = plan.add({ title: 'Cycle A' });
      const b = plan.add({ title: 'Cycle B', blockedBy: [a.id] });
      plan.add({ title: 'After the cycle', blockedBy: [b.id] });
      plan.add({ title: 'Free to start' });
      // What a merge can leave behind: another replica made A wait on B while this one made B wait on A.
      const tasks = plan.doc.getMap('tasks');
      const mapOfA = tasks.get(a.id) as import('yjs').Map<unknown>;
      const YMap = tasks.constructor as new () => import('yjs').Map<boolean>;
      plan.doc.transact(() => {
        const set = new YMap();
        mapOfA.set('blockedBy', set);
        set.set(b.id, true);
      }, plan.actor);
    });
    await row(bo.page, 'Cycle A')
      .locator('.chip-blocked', { hasText: 'In a dependency cycle with Cycle B' })
      .waitFor();
    await row(bo.page, 'After the cycle')
      .locator('.chip-blocked', { hasText: 'Waits on: Cycle B' })
      .waitFor();
    await bo.page.getByRole('tab', { name: 'Graph' }).click();
    await bo.page.locator('.graph-summary', { hasText: '2 in a dependency cycle' }).waitFor();
    expect(await bo.page.locator('.node-cycle').count()).toBe(2);
    expect(await bo.page.locator('.edge.cycle').count()).toBe(2);
    expect(await bo.page.locator('.node-blocked', { hasText: 'After the cycle' }).count()).toBe(1);
    expect(await bo.page.locator('.node-ready', { hasText: 'Free to start' }).count()).toBe(1);
    await screenshot(bo.page, 'desktop-graph-cycle');
    await bo.page.getByRole('tab', { name: 'List' }).click();
    await ann.page.evaluate(() => {
      const { plan } = (window as unknown as { cairnDemo: { plan: import('@cairn/core').Plan } }).cairnDemo;
      plan.batch((p) => {
        for (const t of p.list())
          if (t.title.startsWith('Cycle') || t.title === 'After the cycle') p.remove(t.id);
      });
    });
    await row(bo.page, 'Cycle A').waitFor({ state: 'detached' });
  });

  it('reorders by drag and by keyboard, for both', async () => {
    for (const title of ['One', 'Two', 'Three']) await addTask(ann.page, title);
    const order = async (page: typeof ann.page) =>
      (
        await page
          .locator('.task .task-check')
          .evaluateAll((els) => els.map((el) => el.getAttribute('aria-label')))
      )
        .filter((t) => t === 'One' || t === 'Two' || t === 'Three')
        .join(',');
    await row(bo.page, 'Three').waitFor();
    await row(ann.page, 'Three')
      .locator('.task-handle')
      .dragTo(row(ann.page, 'One'), {
        targetPosition: { x: 40, y: 4 },
      });
    await expect.poll(() => order(bo.page)).toBe('Three,One,Two');
    expect(await order(ann.page)).toBe('Three,One,Two');

    // Keyboard: Alt+Down on Three's checkbox moves it below One; focus stays on it.
    const check = bo.page.getByRole('checkbox', { name: 'Three' });
    await check.focus();
    await check.press('Alt+ArrowDown');
    await expect.poll(() => order(ann.page)).toBe('One,Three,Two');
    expect(await bo.page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Three');
  });

  it('adds steps and dependencies, removes a dependency, and each person undoes only their own edits', async () => {
    await addTask(ann.page, 'Launch');
    const launch = row(ann.page, 'Launch');
    await launch.getByRole('button', { name: 'Details' }).click();
    await launch.getByLabel('New step').fill('Write post');
    await launch.getByRole('button', { name: 'Add step' }).click();
    await launch.getByLabel('New step').fill('Review');
    await launch.getByRole('button', { name: 'Add step' }).click();
    await row(bo.page, 'Review').waitFor();
    expect(await row(bo.page, 'Review').getAttribute('data-depth')).toBe('1');

    // Review waits on Write post (chosen in Review's details, in Bo's window).
    const review = row(bo.page, 'Review');
    await review.getByRole('button', { name: 'Details' }).click();
    await review
      .getByLabel('Add dependency')
      .selectOption({ label: `#${await numOf(bo, 'Write post')} Write post` });
    await review.getByRole('button', { name: 'Add dependency' }).click();
    await row(ann.page, 'Review').locator('.chip-blocked', { hasText: 'Waits on: Write post' }).waitFor();
    await review.getByRole('button', { name: 'Remove dependency on Write post' }).click();
    await row(ann.page, 'Review').locator('.chip-blocked').waitFor({ state: 'detached' });

    // Ann's undo takes back Ann's last edit (the step "Review"), never Bo's.
    await bo.page.getByRole('checkbox', { name: 'Write post' }).click();
    await row(ann.page, 'Write post').waitFor({ state: 'detached' });
    await ann.page.getByRole('button', { name: 'Undo' }).click();
    await row(bo.page, 'Review').waitFor({ state: 'detached' });
    await ann.page.getByLabel(/Show closed/).check();
    expect(await ann.page.getByRole('checkbox', { name: 'Write post' }).isChecked()).toBe(true);
    await ann.page.getByRole('button', { name: 'Redo' }).click();
    await row(bo.page, 'Review').waitFor();
    await ann.page.getByLabel(/Show closed/).uncheck();
  });

  it('shows who is here and which task each one is on', async () => {
    await addTask(ann.page, 'Launch');
    await row(bo.page, 'Launch').waitFor();
    await bo.page.locator('.person[data-actor="user:ann001"]').waitFor();
    await ann.page.locator('.person[data-actor="user:bo0002"]').waitFor();
    await row(bo.page, 'Launch').getByLabel('Edit title').focus();
    await row(ann.page, 'Launch').locator('.chip-presence', { hasText: 'Bo is on this' }).waitFor();
    await ann.page.locator('.person[data-actor="user:bo0002"] .person-task', { hasText: 'Launch' }).waitFor();
    await syncState(ann.page, 'saved');
    await syncState(bo.page, 'saved');
    expect(await ann.page.locator('.person[data-actor="user:bo0002"] .person-task').textContent()).toContain(
      'Launch',
    );
  });

  it('keeps a large plan in order across chunks of rows while tasks move, close and go', async () => {
    type Demo = { cairnDemo: { plan: import('@cairn/core').Plan } };
    await ann.page.evaluate(() => {
      const { plan } = (window as unknown as Demo).cairnDemo;
      // One transaction of two calls: one call adds at most 500 tasks, steps included.
      plan.batch((p) => {
        for (const start of [0, 130])
          p.addMany(
            Array.from({ length: 130 }, (_, k) => ({
              title: `Bulk ${start + k}`,
              steps: [{ title: `Bulk ${start + k} step` }],
            })),
          );
      });
    });
    await row(bo.page, 'Bulk 259 step').waitFor();
    await ann.page.evaluate(() => {
      const { plan } = (window as unknown as Demo).cairnDemo;
      const bulk = plan.children(null).filter((t) => t.title.startsWith('Bulk '));
      plan.move(bulk[250]!.id, { after: bulk[3]!.id });
      plan.move(bulk[1]!.id, { after: bulk[200]!.id });
      plan.update(bulk[100]!.id, { status: 'done' });
      plan.remove(bulk[150]!.id);
      plan.add({ title: 'Bulk late', after: bulk[0]!.id });
    });
    for (const page of [ann.page, bo.page]) {
      await page.waitForFunction(() => {
        const { plan } = (window as unknown as Demo).cairnDemo;
        const hidden = new Set<string>();
        const want: string[] = [];
        for (const t of plan.list()) {
          const parent = plan.effectiveParent(t);
          if (
            (parent && hidden.has(parent)) ||
            !['pending', 'in_progress', 'waiting_user', 'waiting_external'].includes(t.status)
          ) {
            hidden.add(t.id);
            continue;
          }
          want.push(t.id);
        }
        const shown = [...document.querySelectorAll<HTMLElement>('.task')].map((el) => el.dataset['id']);
        return shown.length === want.length && shown.every((id, i) => id === want[i]);
      });
    }
    expect(await ann.page.locator('.task-chunk').count()).toBeGreaterThan(5);
    await ann.page.evaluate(() => {
      const { plan } = (window as unknown as Demo).cairnDemo;
      plan.batch((p) => {
        for (const t of p.children(null)) if (t.title.startsWith('Bulk ')) p.remove(t.id);
      });
    });
    await row(bo.page, 'Bulk 0').waitFor({ state: 'detached' });
  });

  it('looks right at desktop width and at 360 px (screenshots saved under .test-results/demo)', async () => {
    await ann.page.getByLabel('Message').fill('plan a party: invite friends, buy snacks');
    await ann.page.getByLabel('Message').press('Enter');
    await row(ann.page, 'Buy snacks').waitFor();
    await screenshot(ann.page, 'desktop-list');
    await ann.page.getByRole('tab', { name: 'Graph' }).click();
    await ann.page.locator('.node').first().waitFor();
    await screenshot(ann.page, 'desktop-graph');
    await ann.page.getByRole('tab', { name: 'List' }).click();

    const phone = await openAs(demo.browser, demo.server.url, planId, {
      id: 'cy0003',
      name: 'Cy',
      width: 360,
      height: 740,
    });
    await row(phone.page, 'Buy snacks').waitFor();
    const overflow = await phone.page.evaluate(
      () => document.documentElement.scrollWidth - window.innerWidth,
    );
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot(phone.page, 'phone-list');
    await phone.page.getByRole('tab', { name: 'Chat' }).click();
    await phone.page.getByLabel('Message').waitFor();
    await screenshot(phone.page, 'phone-chat');
    await phone.page.getByRole('tab', { name: 'Graph' }).click();
    await phone.page.locator('.node').first().waitFor();
    await screenshot(phone.page, 'phone-graph');
    await phone.context.close();
  });
});

async function numOf(person: Person, title: string): Promise<string> {
  const text = await row(person.page, title).locator('.task-num').textContent();
  return (text ?? '').replace('#', '');
}
