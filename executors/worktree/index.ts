/** The `worktree` executor: a git worktree per repository on this host, in the task's folder, its agents on the host. */
import type { Executor } from '../executor';
import type { HostOperations } from '../host';
import { hostWorktrees } from '../host/worktrees';
import type { ActivityDeps } from '../support/deps';

export function worktreeExecutor(deps: ActivityDeps, host: HostOperations): Executor {
  return {
    kind: 'worktree',
    ...host,
    ...hostWorktrees(deps),
  };
}
