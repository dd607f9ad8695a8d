/** A task's branch on this host, ready to be diffed or merged [R8.7]: its agent's commits home, its worktree's state read. */
import type { TaskRepositorySource } from '../../domain/merge';
import { bringObjectsHome } from '../../git/agent-objects-home';
import { pinnedRepository, UntrustedWorktree } from '../../git/pinned-repository';
import { fileStatus } from '../../git/worktree-status';
import type { ActivityDeps } from '../support/deps';
import { typedFailure } from '../support/failures';
import { isRealDirectory } from './workspace-fs';

export async function bringHostBranchHome(
  { config, logger }: ActivityDeps,
  source: TaskRepositorySource,
): Promise<{ dirty: boolean }> {
  const worktree = source.worktreePath;
  if (!worktree || !(await isRealDirectory(worktree))) return { dirty: false };
  // A running agent's new commits are in its task's store until brought home.
  await bringObjectsHome(config.agentRoot, worktree, config.gitBinary).catch((err: unknown) =>
    logger.warn({ err, repositoryId: source.repositoryId }, "an agent's objects could not be brought home now"),
  );
  // A worktree whose registration is not the service's own is not read: refused typed.
  try {
    pinnedRepository(worktree);
  } catch (err) {
    if (err instanceof UntrustedWorktree)
      throw typedFailure('workspace_reuse_unsafe', { reason: 'worktree_registration_untrusted' });
    throw err;
  }
  return { dirty: (await fileStatus(worktree, { binary: config.gitBinary })).length > 0 };
}
