import { playwright } from '@vitest/browser-playwright';
import { defineConfig } from 'vitest/config';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './apps/demo/test/harness.js';

// One config for the whole workspace: unit tests live beside each package, cross-package tests in test/.
// `*.browser.test.ts` files run inside Debian's Chromium (vitest's browser mode, driven by Playwright), so code
// that meets the browser's own APIs (IndexedDB) is tested against the real thing.
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // A test that asserts nothing fails; `expect.poll` waits as long as `vi.waitFor` does (test/setup).
    expect: { requireAssertions: true, poll: { timeout: 10_000 } },
    setupFiles: ['test/setup/wait-timeouts.ts'],
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: 'node',
          include: ['packages/*/test/**/*.test.ts', 'apps/*/test/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: ['**/node_modules/**', '**/*.browser.test.ts'],
          pool: 'forks',
        },
      },
      {
        extends: true,
        test: {
          name: 'chromium',
          include: ['packages/*/test/**/*.browser.test.ts'],
          browser: {
            enabled: true,
            headless: true,
            provider: playwright({ launchOptions: { executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS } }),
            instances: [{ browser: 'chromium' }],
          },
        },
      },
    ],
  },
});
