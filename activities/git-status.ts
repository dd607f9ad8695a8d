/** Git status of the canonical workspace: read on its host, recorded with the time it was taken [R1.5]. */
import { observationsOf, recordObservation, statusTarget } from '../db/git-status';
import type { GitStatusObservation, GitStatusTarget } from '../domain/git-status';
import { bringObjectsHome } from '../git/agent-objects';
import { aheadBehind, currentBranch, fileStatus, gitAt, resolveCommit } from '../git/git';
import type { ActivityDeps } from './deps';
import { withHeartbeat } from './heartbeat';
import { isRealDirectory } from './workspace-fs';
import { readRemoteGitStatus } from '../ssh/remote-git-status';
import { loadSshTarget, typedSsh } from './ssh-workspace';

export function gitStatusHostActivities({ config, pool, logger }: ActivityDeps) {
  const gitOptions = { binary: config.gitBinary };
  return {
    async readGitStatus(target: GitStatusTarget): Promise<GitStatusObservation[]> {
      return withHeartbeat('git-status', async () => {
        const observations: GitStatusObservation[] = [];
        if (target.sshTargetId) {
          // Read on the target, over SSH: host git inspection does not apply to a remote clone.
          const ssh = await loadSshTarget(pool, target.sshTargetId);
          for (const slot of target.slots) {
            const observedAt = new Date().toISOString();
            const status = await readRemoteGitStatus(ssh, { repoPath: slot.path, baseBranch: slot.baseBranch }).catch(
              (err: unknown) => {
                throw typedSsh(err);
              },
            );
            if (status)
              observations.push({ repositoryId: slot.repositoryId, workspacePath: slot.path, observedAt, ...status });
          }
          return observations;
        }
        for (const slot of target.slots) {
          const observedAt = new Date().toISOString();
          if (!(await isRealDirectory(slot.path))) continue; // nothing to observe; the stored status stays as it was
          // A running agent's new commits are in its task's store until brought home (issue 32).
          await bringObjectsHome(config.dataDir, slot.path, config.gitBinary).catch((err: unknown) =>
            logger.warn({ err, repositoryId: slot.repositoryId }, "an agent's objects could not be brought home now"),
          );
          const [branch, head, files, counts] = await Promise.all([
            currentBranch(slot.path, gitOptions),
            resolveCommit(gitAt(slot.path, gitOptions), 'HEAD'),
            fileStatus(slot.path, gitOptions),
            aheadBehind(slot.path, slot.baseBranch, gitOptions),
          ]);
          observations.push({
            repositoryId: slot.repositoryId,
            workspacePath: slot.path,
            observedAt,
            branch,
            head,
            ahead: counts?.ahead ?? 0,
            behind: counts?.behind ?? 0,
            files,
          });
        }
        return observations;
      });
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
