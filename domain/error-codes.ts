/**
 * The codes of the error contract (docs/api.md) and the
 * shape of each one's rule; the rules themselves are domain/errors.ts's table.
 */
export type RefusalCode =
  | 'workspace_preparing'
  | 'workspace_reuse_unsafe'
  | 'workspace_reuse_unsupported'
  | 'workspace_materialization_failed'
  | 'host_disk_low'
  | 'task_disk_quota'
  | 'task_cleanup_in_progress'
  | 'task_archived'
  | 'task_delete_dirty_worktree'
  | 'session_running'
  | 'task_not_idle'
  | 'cleanup_job_not_retryable'
  | 'cleanup_job_finished'
  | 'launch_cancelled'
  | 'ssh_host_key_mismatch'
  | 'ssh_target_name_taken'
  | 'ssh_target_in_use'
  | 'repository_taken'
  | 'workspace_root_unusable'
  | 'container_image_missing'
  | 'workspace_setup_failed'
  | MergeRefusalCode;

/** Finishing a task [R8]: its merge, rebase, undo and push (domain/merge-errors.ts holds their rules). */
export type MergeRefusalCode =
  | 'merge_conflict'
  | 'task_uncommitted_changes'
  | 'base_checkout_dirty'
  | 'nothing_to_merge'
  | 'merge_in_progress'
  | 'base_moved_since_merge'
  | 'merge_strategy_not_allowed'
  | 'not_fast_forward'
  | 'push_failed';

type InputErrorCode =
  | 'invalid_request'
  | 'limits_exceeded'
  | 'checkout_branch_unsupported'
  | 'not_found'
  | 'method_not_allowed'
  | 'unauthorized'
  | 'forbidden'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'uri_too_long'
  | 'headers_too_large';
/** A part the service depends on does not answer: nothing was decided, the same request may be retried. */
type OutageCode =
  'service_unavailable' | 'engine_unavailable' | 'host_unavailable' | 'ssh_target_unavailable' | 'executor_unavailable';
export type ErrorCode = RefusalCode | InputErrorCode | OutageCode | 'internal';

export type ErrorAction =
  | 'retry'
  | 'reset_environment'
  | 'choose_executor'
  | 'unarchive'
  | 'discard_or_commit'
  | 'stop_session'
  | 'fix_request'
  | 'authenticate'
  | 'report'
  | 'wait'
  | 'free_space'
  | 'operator'
  /** Rebase the task onto its base (or resolve the conflict in its worktree), then merge again. */
  | 'rebase_or_resolve'
  /** Commit the changes, or ask the operation to commit them (`commitUncommitted`). */
  | 'commit_or_consent'
  /** The merge cannot be undone by moving the base back: revert its commits instead. */
  | 'revert'
  /** Nothing to do about this answer: it says what happened (a launch cancelled by its own session's stop). */
  | 'none';

export interface ErrorRule {
  status: number;
  recoverable: boolean;
  retryAfterMs: number;
  action: ErrorAction;
  /** What the caller reads when nothing more specific (and safe) can be said. */
  message: string;
}
