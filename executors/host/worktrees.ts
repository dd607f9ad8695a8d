/**
 * A task's worktrees on this host: made, validated, removed after an audit and given their saved
 * work back. The `worktree` executor is these with its agents on the host; the `container`
 * executor the same worktrees with its agents in a container (a move between the two reuses them).
 * Here, below both, so that neither executor imports the other.
 */
import { restoreSavedWork } from '../../git/saved-work';
import type { Executor } from '../executor';
import type { ActivityDeps } from '../support/deps';
import { worktreeWorkspace } from './worktree-materialize';
import { worktreeRemoval } from './worktree-removal';
import { worktreeValidation } from './worktree-validate';

export function hostWorktrees(
  deps: ActivityDeps,
): ReturnType<typeof worktreeWorkspace> & Pick<Executor, 'validate' | 'removeAudited' | 'restoreWork'> {
  return {
    ...worktreeWorkspace(deps),
    validate: worktreeValidation(deps),
    removeAudited: worktreeRemoval(deps),
    restoreWork: (_plan, slot, commit, overPreparation) =>
      restoreSavedWork(slot.worktreePath, commit, { binary: deps.config.gitBinary }, overPreparation),
  };
}
