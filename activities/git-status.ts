/** Git status of the canonical workspace: read on its host, recorded with the time it was taken [R1.5]. */
import { observationsOf, recordObservation, statusTarget } from '../db/git-status';
import type { GitStatusObservation, GitStatusTarget } from '../domain/git-status';
import { executorsOf } from '../executors/registry';
import type { ActivityDeps } from '../executors/support/deps';
import { withHeartbeat } from '../executors/support/heartbeat';

export function gitStatusHostActivities(deps: ActivityDeps) {
  const executors = executorsOf(deps);
  return {
    async readGitStatus(target: GitStatusTarget): Promise<GitStatusObservation[]> {
      return withHeartbeat('git-status', () => executors.at(target).readGitStatus(target));
    },
  };
}

export function gitStatusRecordActivities({ pool }: ActivityDeps) {
  return {
    async loadStatusTarget(environmentId: string): Promise<GitStatusTarget | null> {
      return statusTarget(pool, environmentId);
    },
    async recordGitStatus(environmentId: string, observations: GitStatusObservation[]): Promise<number> {
      let recorded = 0;
      for (const obs of observations) if (await recordObservation(pool, environmentId, obs)) recorded++;
      return recorded;
    },
    async storedGitStatus(environmentId: string): Promise<GitStatusObservation[]> {
      return observationsOf(pool, environmentId);
    },
  };
}
