// A full browser disk: the origin's storage quota shrunk through the Chrome DevTools Protocol while a person
// works. The demo says so on screen, the edits still reach the server (nothing acknowledged is lost), and once
// there is room again the browser's copy is written whole.
import type { CDPSession, Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { addTask, openAs, type Person, row, syncState } from './harness.js';
import { useDemo } from './use-demo.js';

const demo = useDemo();
const planId = `quota-${Date.now().toString(36)}`;

type Demo = { cairnDemo: { session: { flush(): Promise<void> }; plan: import('@cairn/core').Plan } };

const flush = (person: Person) =>
  person.page.evaluate(() => (window as unknown as Demo).cairnDemo.session.flush());

/** Whether the records of the plan's IndexedDB database hold `text` (Yjs stores strings as UTF-8). */
const storedInBrowser = (person: Person, text: string) =>
  person.page.evaluate(
    ([name, text]) =>
      new Promise<boolean>((resolve, reject) => {
        const open = indexedDB.open(name);
        open.onerror = () => reject(open.error);
        open.onsuccess = () => {
          const all = open.result.transaction('updates').objectStore('updates').getAll();
          all.onsuccess = () => {
            open.result.close();
            const wanted = new TextEncoder().encode(text);
            const holds = (bytes: Uint8Array) =>
              bytes.some((_, i) => wanted.every((b, j) => bytes[i + j] === b));
            resolve((all.result as Uint8Array[]).some(holds));
          };
        };
      }),
    [`cairn-demo:${planId}`, text] as const,
  );

it('shows a quota error, loses nothing the server acknowledged, and stores everything once there is room', async () => {
  // Chromium reads an origin's quota when its storage is first used, so the override comes before the load;
  // it lasts as long as the DevTools session that set it.
  let cdp: CDPSession | null = null;
  const origin = new URL(demo.server.url).origin;
  const ann = await openAs(
    demo.browser,
    demo.server.url,
    planId,
    { id: 'ann001', name: 'Ann' },
    async (page: Page) => {
      cdp = await page.context().newCDPSession(page);
      await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: 128 * 1024 });
    },
  );
  await addTask(ann.page, 'Stored before the quota');
  await syncState(ann.page, 'saved');
  await flush(ann);
  expect(await storedInBrowser(ann, 'Stored before the quota')).toBe(true);

  // Two hundred tasks with long random titles (about 90 KB that do not compress): more than the quota leaves.
  await ann.page.evaluate(() => {
    const random = () =>
      // 250 random bytes in base 36 are about 465 characters, at times over 480: cut so a title stays within 500.
      Array.from(crypto.getRandomValues(new Uint8Array(250)), (b) => b.toString(36))
        .join('')
        .slice(0, 460);
    (window as unknown as Demo).cairnDemo.plan.addMany(
      Array.from({ length: 200 }, (_, i) => ({ title: `Over the quota ${i} ${random()}` })),
    );
  });
  const problem = ann.page.locator('.sync-problem');
  await problem.filter({ hasText: 'could not store the plan' }).waitFor();
  expect(await problem.textContent()).toMatch(/QuotaExceededError/);
  await expect(flush(ann)).rejects.toThrow(/QuotaExceededError/);
  expect(await storedInBrowser(ann, 'Over the quota 199')).toBe(false);

  // The server acknowledged them all the same: someone with an empty browser gets every task from it.
  await syncState(ann.page, 'saved');
  const cy = await openAs(demo.browser, demo.server.url, planId, { id: 'cy0003', name: 'Cy' });
  await row(cy.page, 'Stored before the quota').waitFor();
  // Its list renders long plans in chunks: count in its plan, not in rows on screen.
  await cy.page.waitForFunction(
    () => (window as unknown as Demo).cairnDemo.plan.children(null).length === 201,
  );
  const titles = await cy.page.evaluate(() =>
    (window as unknown as Demo).cairnDemo.plan
      .children(null)
      .map((task) => task.title.split(' ').slice(0, 4).join(' ')),
  );
  expect(titles).toContain('Over the quota 199');
  await cy.context.close();

  // Room again: the next flush writes the whole state into the browser.
  await (cdp as CDPSession | null)?.send('Storage.overrideQuotaForOrigin', { origin });
  await flush(ann);
  expect(await storedInBrowser(ann, 'Over the quota 199')).toBe(true);
  expect(await storedInBrowser(ann, 'Stored before the quota')).toBe(true);
});
