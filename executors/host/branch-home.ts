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
  await readyToRead({ config, logger }, worktree, source.repositoryId);
  return { dirty: (await fileStatus(worktree, { binary: config.gitBinary })).length > 0 };
}

/**
 * Before the service reads a task's worktree (its status, its diff, a merge): a running agent's new
 * commits, in its task's store until brought home, are brought home; and a worktree whose
 * registration is not the service's own is not read at all: refused typed.
 */
export async function readyToRead(
  { config, logger }: { config: ActivityDeps['config']; logger: Pick<ActivityDeps['logger'], 'warn'> },
  worktree: string,
  repositoryId: string,
): Promise<void> {
  await bringObjectsHome(config.agentRoot, worktree, config.gitBinary).catch((err: unknown) =>
    logger.warn({ err, repositoryId }, "an agent's objects could not be brought home now"),
  );
  try {
    pinnedRepository(worktree);
  } catch (err) {
    if (err instanceof UntrustedWorktree)
      throw typedFailure('workspace_reuse_unsafe', { reason: 'worktree_registration_untrusted' });
    throw err;
  }
}
