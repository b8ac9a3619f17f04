// Working through a server outage: stop the real server, edit, reload the page (the shell from the service
// worker, the plan from IndexedDB), start the server again on the same port and data, and the edits reach the
// server and the other person; a third person with an empty browser then loads them from the server alone.
import { beforeAll, describe, expect, it } from 'vitest';
import { addTask, openAs, type Person, row, stableRow, startServer, syncState, valueIs } from './harness.js';
import { useDemo } from './use-demo.js';

const demo = useDemo();
let ann: Person;
let bo: Person;
const planId = `offline-${Date.now().toString(36)}`;

beforeAll(async () => {
  ann = await openAs(demo.browser, demo.server.url, planId, { id: 'ann001', name: 'Ann' });
  bo = await openAs(demo.browser, demo.server.url, planId, { id: 'bo0002', name: 'Bo' });
});

describe('offline', () => {
  it('keeps working while the server is down, survives a reload, and syncs when it is back', async () => {
    await addTask(ann.page, 'Before the outage');
    await row(bo.page, 'Before the outage').waitFor();
    await syncState(ann.page, 'saved');
    // The service worker has taken control, so the page can reload without the server.
    await ann.page.waitForFunction(() => navigator.serviceWorker.controller !== null);

    await demo.server.stop();
    await syncState(ann.page, 'offline');
    await syncState(bo.page, 'offline');

    await addTask(ann.page, 'Made offline');
    const title = (await stableRow(ann.page, 'Before the outage')).getByLabel('Edit title');
    await title.click();
    await title.press('End');
    await title.pressSequentially(', edited');
    await title.press('Enter');
    await ann.page.evaluate(() =>
      (window as unknown as { cairnDemo: { session: { flush(): Promise<void> } } }).cairnDemo.session.flush(),
    );

    await ann.page.reload();
    await ann.page.getByLabel('New task').waitFor();
    await row(ann.page, 'Made offline').waitFor();
    await valueIs(
      row(ann.page, 'Before the outage, edited').getByLabel('Edit title'),
      'Before the outage, edited',
    );
    await syncState(ann.page, 'offline');

    demo.server = await startServer({ port: demo.server.port, dataDir: demo.server.dataDir });
    await syncState(ann.page, 'saved');
    await row(bo.page, 'Made offline').waitFor();
    await row(bo.page, 'Before the outage, edited').waitFor();

    // Someone with nothing in their browser gets it all from the server.
    const cy = await openAs(demo.browser, demo.server.url, planId, { id: 'cy0003', name: 'Cy' });
    await row(cy.page, 'Made offline').waitFor();
    await row(cy.page, 'Before the outage, edited').waitFor();
    expect(await cy.page.locator('.task').count()).toBe(2);
    await cy.context.close();
  });
});
