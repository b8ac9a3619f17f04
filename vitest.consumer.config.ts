import { defineConfig } from 'vitest/config';

// The consumer suite: the packages as a user gets them. Its global setup builds and packs them and installs the
// tarballs with npm into projects outside the repository; each test then runs one runtime against those.
export default defineConfig({
  test: {
    name: 'consumer',
    include: ['test/consumer/**/*.test.ts'],
    globalSetup: ['test/consumer/setup.ts'],
    // As in the workspace's config: a test that asserts nothing fails; waits default to 10 s.
    expect: { requireAssertions: true, poll: { timeout: 10_000 } },
    setupFiles: ['test/setup/wait-timeouts.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 120_000,
    hookTimeout: 180_000,
  },
});
