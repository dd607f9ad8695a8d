/** git-status/<environmentId>: read the canonical workspace's status on its host and record it; a host that is down answers its last. */
import { patched } from '@temporalio/workflow';
import type { GitStatusObservation } from '../domain/git-status';
import { hostSteps, recordSteps } from './activity-proxies';
import { asTypedFailure } from './typed-failure';

const records = recordSteps();

export async function observeGitStatus(environmentId: string): Promise<GitStatusObservation[]> {
  const target = await records.loadStatusTarget(environmentId);
  // A host that is down is not waited for: the answer is its last observation (observedAt says when).
  if (target && !(patched('git-status-skips-down-host') && (await records.hostIsDown(target.hostId)))) {
    // A typed refusal of the host (a registration that is not the service's own) is the answer's.
    const observations = await hostSteps(target.hostId)
      .readGitStatus(target)
      .catch((err: unknown) => {
        throw asTypedFailure(err);
      });
    await records.recordGitStatus(environmentId, observations);
  }
  return records.storedGitStatus(environmentId);
}
