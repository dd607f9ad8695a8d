/**
 * What a test needs of the host it runs on (root to mount a tmpfs, a v1 freezer): where the host
 * is one that has it (root; the freezer controller mounted) and the test still cannot use it, the
 * run fails and says why, so that a broken mount never turns into a green run. Elsewhere the
 * test skips, and the skip's name says why.
 */
import { it } from 'vitest';

/** A failing test where `usable` is false on a host that should have it (`expected`). */
export function requiredWhereExpected(what: string, usable: boolean, expected: boolean): void {
  if (usable || !expected) return;
  it(`${what}: this host should give it (root), and it could not be used`, () => {
    throw new Error(`${what} could not be used on a host that should give it: the tests that need it did not run`);
  });
}
