import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Temporal workers crash under worker threads: every test file runs in its own process.
    pool: 'forks',
    // 2 cores: two test files at a time share one Temporal dev server and one PostgreSQL.
    maxWorkers: 2,
    fileParallelism: true,
    globalSetup: ['test/support/global-setup.ts'],
    hookTimeout: 120_000,
    testTimeout: 120_000,
    teardownTimeout: 60_000,
    include: ['test/**/*.test.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
