import { defineConfig } from 'vitest/config';

// The consumer suite: the packages as a user gets them. Its global setup builds and packs them and installs the
// tarballs with npm into projects outside the repository; each test then runs one runtime against those.
export default defineConfig({
  test: {
    name: 'consumer',
    include: ['test/consumer/**/*.test.ts'],
    globalSetup: ['test/consumer/setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 120_000,
    hookTimeout: 180_000,
  },
});
