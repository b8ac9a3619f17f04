// The setup every end-to-end file of the demo shares: the demo built, the real server and Chromium started before
// the file's tests and stopped after them, and two people (Ann and Bo) opened on a plan of their own.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import {
  ensureDemoBuilt,
  launchBrowser,
  openAs,
  type Person,
  type RunningServer,
  startServer,
} from './harness.js';

export interface Demo {
  /** Replace it to restart the server (same port and data); the one here at the end is stopped. */
  server: RunningServer;
  browser: Browser;
}

/** Registers the file's setup and teardown; the fields are set once `beforeAll` has run. */
export function useDemo(): Demo {
  const demo = {} as Demo;
  beforeAll(async () => {
    await ensureDemoBuilt();
    [demo.server, demo.browser] = await Promise.all([startServer(), launchBrowser()]);
  });
  afterAll(async () => {
    await demo.browser?.close();
    await demo.server?.stop();
  });
  return demo;
}

/** Ann and Bo, each in a fresh browser profile (their own IndexedDB), on a new plan named from `prefix`. */
export async function openPair(
  demo: Demo,
  prefix: string,
): Promise<{ ann: Person; bo: Person; planId: string }> {
  const planId = `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
  const ann = await openAs(demo.browser, demo.server.url, planId, { id: 'ann001', name: 'Ann' });
  const bo = await openAs(demo.browser, demo.server.url, planId, { id: 'bo0002', name: 'Bo' });
  return { ann, bo, planId };
}
