import { defineConfig } from 'vitest/config';

// The same global set-up as the real suite (it starts Temporal and PostgreSQL in this process),
// around one test that fails on purpose.
export default defineConfig({
  test: {
    pool: 'forks',
    globalSetup: ['test/support/global-setup.ts'],
    hookTimeout: 120_000,
    include: ['test/canary/*.canary.ts'],
  },
});
