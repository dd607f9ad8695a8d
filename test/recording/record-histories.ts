/**
 * Records the histories test/replay.test.ts replays (test/histories/<workflowType>-<case>.json),
 * from real scenarios (test/support/recorded-scenarios.ts): `make record-histories`, after a
 * change to a workflow's code that is meant to change its histories. Not a test of `make test`
 * (vitest.config.mts includes it only under TWS_RECORD_HISTORIES=1): it writes the fixtures.
 */
import { describe, it } from 'vitest';
import { harnessesPerTest } from '../support/harness';
import {
  recordCancelledAndRematerialized,
  recordFinishingPaths,
  recordHappyPaths,
  recordHostPaths,
  recordIdleRelease,
  recordInterruptedPaths,
  recordOperatorPaths,
} from '../support/recorded-scenarios';

const { harness } = harnessesPerTest();

describe('recording the histories', () => {
  it(
    'records launch, git status, stop, resume, delete, archive, cascade, quick-chat expiry and orphan sweep',
    () => recordHappyPaths(harness),
    300_000,
  );
  it(
    'records a cleanup that waits for an operator: retried, and cancelled by an unarchive',
    () => recordOperatorPaths(harness),
    300_000,
  );
  it(
    'records a cleanup cancelled during its retry wait, and one whose lost run the consistency check resumes',
    () => recordInterruptedPaths(harness),
    300_000,
  );
  it(
    'records a launch cancelled while its workspace is made, and a resume that materializes a released environment',
    () => recordCancelledAndRematerialized(harness),
    300_000,
  );
  it(
    'records an idle release that carries out its release itself (a batch), the work saved',
    () => recordIdleRelease(harness),
    300_000,
  );
  it(
    'records finishing a task: a preview, a push, a rebase, a merge and its undo, a diff read on its host',
    () => recordFinishingPaths(harness),
    300_000,
  );
  it(
    'records a repository checked on its host, refused by a host that does not answer, an agent log read on its host, and a cleanup that waited for its host',
    () => recordHostPaths(harness),
    300_000,
  );
});
