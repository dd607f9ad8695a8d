/**
 * The error contract (docs/api.md), as data.
 * Refusal codes cross the Temporal boundary as ApplicationFailure `type`; the gateway maps
 * them to HTTP through this table, never by reading messages.
 */
import type { ErrorCode, ErrorRule } from './error-codes';
import { MERGE_ERROR_TABLE } from './merge-errors';
import { SSH_TARGET_ERROR_TABLE } from './ssh-target-errors';

export type { ErrorCode, ErrorRule, RefusalCode } from './error-codes';

export const ERROR_TABLE: Record<ErrorCode, ErrorRule> = {
  workspace_preparing: {
    status: 409,
    recoverable: true,
    retryAfterMs: 1000,
    action: 'retry',
    message: 'The task workspace is being prepared by another session.',
  },
  workspace_reuse_unsafe: {
    status: 409,
    recoverable: true,
    retryAfterMs: 0,
    action: 'reset_environment',
    message: 'The task workspace cannot be reused safely.',
  },
  workspace_reuse_unsupported: {
    status: 409,
    recoverable: false,
    retryAfterMs: 0,
    action: 'choose_executor',
    message: 'This executor cannot run a session against the task workspace.',
  },
  // Not a refusal of the admission table: the materializer was elected but git could not
  // create the worktrees (for example the base branch vanished). Everything it made is
  // rolled back and the environment is re-electable, so retrying after a fix can help.
  workspace_materialization_failed: {
    status: 409,
    recoverable: true,
    retryAfterMs: 0,
    action: 'retry',
    message: 'The task workspace could not be created; nothing was left behind.',
  },
  // Free space under TWS_MIN_FREE_DISK before git ran, or the disk filled during the
  // materialization (which then undid everything it made) [R6.11].
  host_disk_low: {
    status: 507,
    recoverable: true,
    retryAfterMs: 0,
    action: 'free_space',
    message: 'The host has too little free disk space for a new workspace; nothing was created.',
  },
  task_disk_quota: {
    status: 507,
    recoverable: true,
    retryAfterMs: 0,
    action: 'free_space',
    message:
      "The task's workspace is over its disk quota; its agents were stopped. Free space in it, or have an operator raise its quota (PATCH /v1/tasks/:id with diskQuotaBytes, an operator token); then launch again.",
  },
  task_cleanup_in_progress: {
    status: 409,
    recoverable: true,
    retryAfterMs: 5000,
    action: 'retry',
    message: 'The task is being cleaned up.',
  },
  task_archived: {
    status: 409,
    recoverable: false,
    retryAfterMs: 0,
    action: 'unarchive',
    message: 'The task is archived.',
  },
  task_delete_dirty_worktree: {
    status: 409,
    recoverable: true,
    retryAfterMs: 0,
    action: 'discard_or_commit',
    message:
      'The task has uncommitted changes. Commit them, or delete with discardChanges=true (an operator token) to save them on a hidden ref and remove the workspace.',
  },
  session_running: {
    status: 409,
    recoverable: true,
    retryAfterMs: 0,
    action: 'stop_session',
    message: 'A session of the task is running.',
  },
  // An idle release's second look under the task's lock found it in use again (or pinned).
  task_not_idle: {
    status: 409,
    recoverable: false,
    retryAfterMs: 0,
    action: 'wait',
    message: 'The task is in use again; its workspace is kept.',
  },
  // An operator retry is only for a job that is waiting for one (needs_operator).
  cleanup_job_not_retryable: {
    status: 409,
    recoverable: false,
    retryAfterMs: 0,
    action: 'none',
    message: 'The cleanup job is not waiting for an operator.',
  },
  // A cancel of a job that already ended (succeeded or cancelled): there is nothing left to end.
  cleanup_job_finished: {
    status: 409,
    recoverable: false,
    retryAfterMs: 0,
    action: 'none',
    message: 'The cleanup job has already ended.',
  },
  // A stop or delete of a session still starting cancelled its launch (or resume): what it made was undone.
  // Not a failure to retry: the session's own stop or delete asked for it (a new launch is a new decision).
  launch_cancelled: {
    status: 409,
    recoverable: false,
    retryAfterMs: 0,
    action: 'none',
    message: 'The launch was cancelled by a stop or delete of its session.',
  },
  ...SSH_TARGET_ERROR_TABLE,
  // A repository of this name, or at this path on its host, is registered already (`clash` says which).
  repository_taken: {
    status: 409,
    recoverable: false,
    retryAfterMs: 0,
    action: 'fix_request',
    message: 'A repository with this name or path is already registered.',
  },
  invalid_request: {
    status: 400,
    recoverable: false,
    retryAfterMs: 0,
    action: 'fix_request',
    message: 'The request is invalid.',
  },
  limits_exceeded: {
    status: 400,
    recoverable: false,
    retryAfterMs: 0,
    action: 'fix_request',
    message: "The launch asked for more than the operator's maximum.",
  },
  // A sandboxed agent moves only the refs of its task's own folder (domain/task-layout.ts
  // taskRefFolder): on an existing branch it would read everything and commit nothing. Refused at
  // creation, before anything is made, rather than offered and found out at the first commit.
  checkout_branch_unsupported: {
    status: 400,
    recoverable: false,
    retryAfterMs: 0,
    action: 'fix_request',
    message:
      "Agents here run sandboxed and can commit only on their task's own branch, not on an existing branch: name that branch as baseBranch instead (the task's branch starts from it); nothing was created.",
  },
  not_found: { status: 404, recoverable: false, retryAfterMs: 0, action: 'fix_request', message: 'Not found.' },
  method_not_allowed: {
    status: 405,
    recoverable: false,
    retryAfterMs: 0,
    action: 'fix_request',
    message: 'Not allowed.',
  },
  unauthorized: {
    status: 401,
    recoverable: false,
    retryAfterMs: 0,
    action: 'authenticate',
    message:
      'A valid bearer token is required: the user and operator tokens are in the data folder (.data/secrets.json), or in TWS_USER_TOKEN and TWS_OPERATOR_TOKEN where the service was started with them.',
  },
  forbidden: {
    status: 403,
    recoverable: false,
    retryAfterMs: 0,
    action: 'authenticate',
    message:
      'This token may not do that: it needs the operator token (operatorToken in .data/secrets.json, or TWS_OPERATOR_TOKEN).',
  },
  // Refused before a route reads anything: the request as sent can never succeed, so nothing changed.
  payload_too_large: {
    status: 413,
    recoverable: false,
    retryAfterMs: 0,
    action: 'fix_request',
    message: 'The request body is too large.',
  },
  unsupported_media_type: {
    status: 415,
    recoverable: false,
    retryAfterMs: 0,
    action: 'fix_request',
    message: 'A request body must be JSON (Content-Type: application/json).',
  },
  uri_too_long: {
    status: 414,
    recoverable: false,
    retryAfterMs: 0,
    action: 'fix_request',
    message: 'The request URL is too long.',
  },
  // The header section as a whole overflows the HTTP parser's limit (the URL alone is uri_too_long).
  headers_too_large: {
    status: 431,
    recoverable: false,
    retryAfterMs: 0,
    action: 'fix_request',
    message: 'The request headers are too large.',
  },
  // The database does not answer: the gateway changed nothing it could not finish; retry.
  service_unavailable: {
    status: 503,
    recoverable: true,
    retryAfterMs: 2000,
    action: 'retry',
    message: 'The service database is unavailable; retry shortly.',
  },
  // Temporal does not answer. For a launch or resume the outcome may be pending: retrying with
  // the same Idempotency-Key returns the one session it made, never a second.
  engine_unavailable: {
    status: 503,
    recoverable: true,
    retryAfterMs: 2000,
    action: 'retry',
    message: 'The workflow engine is unavailable; retry shortly with the same Idempotency-Key.',
  },
  // The container executor is configured and cannot run now (its engine does not answer); one not
  // offered at all is the 400 of EXECUTOR_NOT_OFFERED below. Nothing was created either way.
  executor_unavailable: {
    status: 503,
    recoverable: true,
    retryAfterMs: 2000,
    action: 'retry',
    message: 'The executor cannot run on this host now (its container engine does not answer); nothing was created.',
  },
  // A repository's setup failed (or ran past its time) in the new workspace, with `setupFailure:
  // refuse`: the launch failed whole and what it made was undone; its log says why.
  workspace_setup_failed: {
    status: 409,
    recoverable: true,
    retryAfterMs: 0,
    action: 'retry',
    message:
      "A repository's setup failed in the new workspace; the launch was undone. Its session's setup log says why.",
  },
  // The image the launch's profile names is not on the host: nothing is pulled at launch.
  container_image_missing: {
    status: 409,
    recoverable: false,
    retryAfterMs: 0,
    action: 'operator',
    message:
      "The agent's container image is not on this host; an operator builds it (make image). Nothing was created.",
  },
  // What is asked for lives on a host this process cannot reach (an agent's log on another host).
  host_unavailable: {
    status: 503,
    recoverable: true,
    retryAfterMs: 5000,
    action: 'retry',
    message: 'The host that holds this is not reachable from here.',
  },
  // The SSH target cannot be reached or refuses this service's key (reason says which): nothing ran there.
  ssh_target_unavailable: {
    status: 503,
    recoverable: true,
    retryAfterMs: 5000,
    action: 'retry',
    message: 'The SSH target is not reachable from here.',
  },
  ...MERGE_ERROR_TABLE,
  internal: { status: 500, recoverable: true, retryAfterMs: 1000, action: 'report', message: 'Internal error.' },
};

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ERROR_TABLE, value);
}
