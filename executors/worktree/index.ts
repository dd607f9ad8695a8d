/** The `worktree` executor: a git worktree per repository on this host, in the task's folder. */
import { restoreSavedWork } from '../../git/saved-work';
import type { Executor } from '../executor';
import type { HostOperations } from '../host';
import type { ActivityDeps } from '../support/deps';
import { worktreeWorkspace } from './materialize';
import { worktreeRemoval } from './removal';
import { worktreeValidation } from './validate';

export function worktreeExecutor(deps: ActivityDeps, host: HostOperations): Executor {
  return {
    kind: 'worktree',
    ...host,
    ...worktreeWorkspace(deps),
    validate: worktreeValidation(deps),
    removeAudited: worktreeRemoval(deps),
    restoreWork: (_plan, slot, commit, overPreparation) =>
      restoreSavedWork(slot.worktreePath, commit, { binary: deps.config.gitBinary }, overPreparation),
  };
}
