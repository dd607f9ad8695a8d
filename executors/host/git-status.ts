/** Git status of a workspace on this host, with the time it was taken [R1.5]. */
import type { GitStatusObservation, GitStatusTarget } from '../../domain/git-status';
import { bringObjectsHome } from '../../git/agent-objects-home';
import { aheadBehind, fileStatus } from '../../git/worktree-status';
import { currentBranch } from '../../git/checkout';
import { gitAt } from '../../git/git';
import { resolveCommit } from '../../git/branches';
import type { ActivityDeps } from '../support/deps';
import { isRealDirectory } from './workspace-fs';
import { pinnedRepository, UntrustedWorktree } from '../../git/pinned-repository';
import { typedFailure } from '../support/failures';

export async function readHostGitStatus(
  { config, logger }: ActivityDeps,
  target: GitStatusTarget,
): Promise<GitStatusObservation[]> {
  const gitOptions = { binary: config.gitBinary };
  const observations: GitStatusObservation[] = [];
  for (const slot of target.slots) {
    const observedAt = new Date().toISOString();
    if (!(await isRealDirectory(slot.path))) continue; // nothing to observe; the stored status stays as it was
    // A running agent's new commits are in its task's store until brought home.
    await bringObjectsHome(config.agentRoot, slot.path, config.gitBinary).catch((err: unknown) =>
      logger.warn({ err, repositoryId: slot.repositoryId }, "an agent's objects could not be brought home now"),
    );
    // A worktree whose registration is not the service's own is not read: refused typed.
    try {
      pinnedRepository(slot.path);
    } catch (err) {
      if (err instanceof UntrustedWorktree)
        throw typedFailure('workspace_reuse_unsafe', { reason: 'worktree_registration_untrusted' });
      throw err;
    }
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
}
