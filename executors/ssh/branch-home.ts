/**
 * An ssh task's branch brought home before it is diffed or merged [R8.7]: the clone's branch
 * fetched into the host repository (fast-forward only: a branch that diverged there, as after a
 * rebase on the host, is refused and nothing is taken), and whether the clone holds uncommitted work.
 */
import type { TaskRepositorySource } from '../../domain/merge';
import { taskFolderOf } from '../../domain/task-layout';
import { bringBranchBack } from '../../ssh/remote-cleanup';
import { readRemoteWorkspace } from '../../ssh/remote-workspace';
import type { ActivityDeps } from '../support/deps';
import { typedFailure } from '../support/failures';
import { loadSshTarget, typedSsh } from './workspace';

export async function bringRemoteBranchHome(
  { pool }: ActivityDeps,
  source: TaskRepositorySource,
): Promise<{ dirty: boolean }> {
  const clone = source.worktreePath;
  if (!clone || !source.taskBranch || !source.sshTargetId) return { dirty: false };
  try {
    const target = await loadSshTarget(pool, source.sshTargetId);
    const facts = await readRemoteWorkspace(target, {
      taskFolder: taskFolderOf(clone),
      workspacePath: clone,
      repoPaths: [clone],
      withDirty: true,
    });
    const slot = facts.slots[0];
    if (!slot?.exists || !slot.realDirectory) return { dirty: false };
    const back = await bringBranchBack(target, {
      repoPath: clone,
      branch: source.taskBranch,
      hostRepository: source.sourcePath,
    });
    if (back === 'refused') throw typedFailure('workspace_reuse_unsafe', { reason: 'remote_branch_diverged' });
    return { dirty: slot.dirty !== 'clean' };
  } catch (err) {
    throw typedSsh(err);
  }
}
