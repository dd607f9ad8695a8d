import { expect, it } from 'vitest';

// Run only by scripts/check-test-exit-code.sh: this test fails on purpose, and the run must say so.
it('fails on purpose', () => {
  expect('the test runner reports failures').toBe('through its exit code');
});
