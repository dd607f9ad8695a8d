/**
 * Where a removal saves a dirty worktree's work, and what the save says [R6.4, R6.10]. A delete's
 * save is the task's one hidden ref (a retried save moves it); an idle release's save is restored
 * by the next launch, so each has a ref of its own and a later save never moves an earlier one
 * that is still to restore. One rule for host worktrees and SSH clones alike.
 */
import type { CleanupTrigger } from './cleanup';
import { releasedWorkRef, savedWorkRef } from './refs';

/**
 * The cleanups whose saves the next launch restores: those that keep the task and its branch and
 * save dirty work. (A reset and an archive keep a dirty worktree instead; a delete and a quick
 * chat's expiry take the task away.)
 */
export const RESTORED_TRIGGERS: readonly CleanupTrigger[] = ['idle_release'];

export const savesForRestore = (trigger: CleanupTrigger | undefined): boolean =>
  trigger !== undefined && RESTORED_TRIGGERS.includes(trigger);

export interface SaveOfRemoval {
  /** The ref is named once the commit is made (a release's ref carries it). */
  refFor(commit: string): string;
  message: string;
}

export function saveOfRemoval(
  trigger: CleanupTrigger | undefined,
  taskId: string,
  repositoryId: string,
): SaveOfRemoval {
  const restored = savesForRestore(trigger);
  return {
    refFor: (commit) => (restored ? releasedWorkRef(taskId, repositoryId, commit) : savedWorkRef(taskId, repositoryId)),
    message: `task-workspaces: uncommitted work of task ${taskId} ${restored ? 'released for idleness' : 'saved before deletion'}`,
  };
}
