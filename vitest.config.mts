import path from 'node:path';
import { defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/support/sequencer';

export default defineConfig({
  test: {
    // Temporal workers crash under worker threads: test files run in child processes (forks).
    pool: 'forks',
    // Each of those processes runs file after file without loading the product again: every file
    // imports nearly all of it (the gateway, the worker, the SDK), 100 s of CPU in a run when each
    // file had a process of its own, 11 s now; a warm run 504 s → 466 s. The files share no state
    // that matters: none mocks a module or changes process.env, each harness has its own database,
    // queue and folders, and the Temporal runtime is installed once per process (test/support/harness.ts).
    isolate: false,
    // Three test files at a time on 2 cores share one Temporal dev server and one PostgreSQL:
    // most files wait on real timeouts (a killed worker's heartbeat, a database down), so a third
    // file fills the cores they leave idle (a quiet clean run: 918 s of vitest with two, 812 s with
    // three, the same commit; about 25 % idle with two, 8 % with three).
    maxWorkers: 3,
    fileParallelism: true,
    // Longest files first, by recorded times: both workers end together (test/support/sequencer.ts).
    sequence: { sequencer: LongestFirstSequencer },
    globalSetup: ['test/support/global-setup.ts'],
    hookTimeout: 120_000,
    testTimeout: 120_000,
    teardownTimeout: 60_000,
    // `make record-histories` (TWS_RECORD_HISTORIES=1) runs only the recorders of the replay
    // fixtures, which write test/histories/: no part of `make test`.
    include: process.env.TWS_RECORD_HISTORIES === '1' ? ['test/recording/*.ts'] : ['test/**/*.test.ts'],
    // The tests' own git (a person inspecting, as root) reads checkouts whoever owns them: test
    // checkouts belong to a person's uid and workspaces to their agent's. The product's
    // git never sees this: its environment is its own (git/git-environment.ts).
    env: { GIT_CONFIG_GLOBAL: path.resolve(import.meta.dirname, 'test/support/test-gitconfig') },
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
