/** git-status/<environmentId>: read the canonical workspace's status on its host and record it; a host that is down answers its last. */
import { patched } from '@temporalio/workflow';
import type { GitStatusObservation } from '../domain/git-status';
import { hostSteps, recordSteps } from './activity-proxies';

const records = recordSteps();

export async function observeGitStatus(environmentId: string): Promise<GitStatusObservation[]> {
  const target = await records.loadStatusTarget(environmentId);
  // A host that is down is not waited for: the answer is its last observation (observedAt says when).
  if (target && !(patched('git-status-skips-down-host') && (await records.hostIsDown(target.hostId)))) {
    const observations = await hostSteps(target.hostId).readGitStatus(target);
    await records.recordGitStatus(environmentId, observations);
  }
  return records.storedGitStatus(environmentId);
}
