/** git-status/<environmentId>: read the canonical workspace's status on its host and record it. */
import type { GitStatusObservation } from '../domain/git-status';
import { hostSteps, recordSteps } from './activity-proxies';

const records = recordSteps();

export async function observeGitStatus(environmentId: string): Promise<GitStatusObservation[]> {
  const target = await records.loadStatusTarget(environmentId);
  if (target) {
    const observations = await hostSteps(target.hostId).readGitStatus(target);
    await records.recordGitStatus(environmentId, observations);
  }
  return records.storedGitStatus(environmentId);
}
