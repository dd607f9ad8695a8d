/**
 * The `ssh` executor: a clone per repository on an SSH target, made from a bundle of the host
 * repository, its agents started there. Every step on it goes over SSH, never through the host's
 * git or /proc; the records stay the host's (each row names its target).
 */
import type { LogSource } from '../../domain/agent-log';
import { savedWorkPatches } from '../../git/saved-work';
import { remoteWorkspaceBytes } from '../../ssh/remote-disk';
import { restoreRemoteWork } from '../../ssh/remote-restore';
import { readRemoteGitStatus } from '../../ssh/remote-git-status';
import { isRemoteRunLog, remoteLog } from '../../ssh/remote-log';
import type { Executor } from '../executor';
import type { ActivityDeps } from '../support/deps';
import { typedFailure } from '../support/failures';
import { sshAgents } from './agents';
import { bringRemoteBranchHome } from './branch-home';
import { sshCleanup } from './cleanup';
import { loadSshTarget, sshWorkspace, typedSsh } from './workspace';

export function sshExecutor(deps: ActivityDeps): Executor {
  const { pool } = deps;
  return {
    kind: 'ssh',
    ...sshWorkspace(deps),
    ...sshAgents(deps),
    ...sshCleanup(deps),

    /** A run log on the target the record names, and nothing else there; a target that does not answer is its typed refusal. */
    async openLog(place, logPath): Promise<LogSource> {
      const target = await loadSshTarget(pool, place.sshTargetId);
      if (!isRemoteRunLog(target, logPath)) throw typedFailure('not_found');
      const log = remoteLog(target, logPath);
      const typed = <T>(read: Promise<T>) => read.catch((err: unknown) => Promise.reject(typedSsh(err)));
      return { tail: (lines) => typed(log.tail(lines)), since: (offset) => typed(log.since(offset)) };
    },

    bringBranchHome: (source) => bringRemoteBranchHome(deps, source),

    /** Read on the target, over SSH: host git inspection does not apply to a remote clone. */
    async readGitStatus(statusTarget) {
      const target = await loadSshTarget(pool, statusTarget.sshTargetId);
      const observations = [];
      for (const slot of statusTarget.slots) {
        const observedAt = new Date().toISOString();
        const status = await readRemoteGitStatus(target, { repoPath: slot.path, baseBranch: slot.baseBranch }).catch(
          (err: unknown) => {
            throw typedSsh(err);
          },
        );
        if (status)
          observations.push({ repositoryId: slot.repositoryId, workspacePath: slot.path, observedAt, ...status });
      }
      return observations;
    },

    /**
     * The saved work, written as a patch by the host repository that holds it, applied in the new
     * clone on the target [R6.10]; over a prepared clone, the paths it writes go back to HEAD first.
     */
    async restoreWork(plan, slot, commit, overPreparation) {
      const source = plan.slots.find((s) => s.repositoryId === slot.repositoryId);
      if (!source) throw new Error('the slot is not one of the plan');
      const target = await loadSshTarget(pool, plan.sshTargetId);
      const patches = await savedWorkPatches(
        source.sourcePath,
        commit,
        { binary: deps.config.gitBinary },
        overPreparation,
      );
      return restoreRemoteWork(target, slot.worktreePath, patches, overPreparation).catch((err: unknown) =>
        Promise.reject(typedSsh(err)),
      );
    },

    /** Measured on the target with `du` alone; a target that does not answer leaves the last figure. */
    async workspaceBytes(place) {
      const target = await loadSshTarget(pool, place.sshTargetId);
      return remoteWorkspaceBytes(target, place.workspacePath);
    },
  };
}
