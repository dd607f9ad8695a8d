/**
 * The error contract's rows for finishing a task [R8] (merge, rebase, undo, push), beside the
 * rest of the table in domain/errors.ts. None of their answers names a path, a branch or a remote.
 */
import type { ErrorRule, MergeRefusalCode } from './error-codes';

export const MERGE_ERROR_TABLE: Record<MergeRefusalCode, ErrorRule> = {
  // The task's changes and the base's meet in the same lines: `conflicts` names the files per repository.
  merge_conflict: {
    status: 409,
    recoverable: true,
    retryAfterMs: 0,
    action: 'rebase_or_resolve',
    message: "The task's changes conflict with its base branch; nothing was moved.",
  },
  task_uncommitted_changes: {
    status: 409,
    recoverable: true,
    retryAfterMs: 0,
    action: 'commit_or_consent',
    message:
      'The task has uncommitted changes: commit them, or ask the operation to commit them first (commitUncommitted); nothing was moved.',
  },
  // The base branch is checked out in a folder (the source checkout, another worktree) whose uncommitted
  // files overlap the merge: moving the branch there would leave them disagreeing with it.
  base_checkout_dirty: {
    status: 409,
    recoverable: true,
    retryAfterMs: 0,
    action: 'operator',
    message:
      'The base branch is checked out with uncommitted changes to files this merge changes; commit or set them aside there first. Nothing was moved.',
  },
  nothing_to_merge: {
    status: 409,
    recoverable: false,
    retryAfterMs: 0,
    action: 'none',
    message: "The base branch already contains the task's work.",
  },
  // The same task has a merge, rebase or undo running; merges of different tasks queue instead.
  merge_in_progress: {
    status: 409,
    recoverable: true,
    retryAfterMs: 1000,
    action: 'retry',
    message: 'This task already has a merge, rebase or undo running.',
  },
  base_moved_since_merge: {
    status: 409,
    recoverable: false,
    retryAfterMs: 0,
    action: 'revert',
    message:
      'Commits landed on the base branch after this merge; it cannot be undone by moving the base back. Revert it instead.',
  },
  merge_strategy_not_allowed: {
    status: 400,
    recoverable: false,
    retryAfterMs: 0,
    action: 'fix_request',
    message: 'The repository does not allow this merge strategy.',
  },
  not_fast_forward: {
    status: 409,
    recoverable: true,
    retryAfterMs: 0,
    action: 'rebase_or_resolve',
    message:
      "The base branch has commits the task's branch does not: it cannot be fast-forwarded. Rebase the task first.",
  },
  // The remote refused the push or could not be reached; its address and credentials are never said.
  push_failed: {
    status: 502,
    recoverable: true,
    retryAfterMs: 2000,
    action: 'retry',
    message: "The repository's remote refused the push or could not be reached.",
  },
};
