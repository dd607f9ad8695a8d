/** Every workflow id and task queue name is built here, so the Temporal UI reads the same everywhere. */
export const launchWorkflowId = (sessionId: string): string => `launch/${sessionId}`;
/** A resume's run: `run` is the request's own (derived from its Idempotency-Key, else fresh), so a retry joins the same run. */
export const resumeWorkflowId = (sessionId: string, run: string): string => `resume/${sessionId}/${run}`;
/** The run that last admitted a session: its resume when one was admitted, else its launch. */
export const sessionRunWorkflowId = (sessionId: string, admittedRun: string | null): string =>
  admittedRun ? resumeWorkflowId(sessionId, admittedRun) : launchWorkflowId(sessionId);
export const cleanupWorkflowId = (trigger: string, taskId: string, operationId: string): string =>
  `cleanup/${trigger}/${taskId}/${operationId}`;

/** Activities that touch files run on the queue of the host that holds the workspace. */
export const hostTaskQueue = (sharedQueue: string, hostId: string): string => `${sharedQueue}-host-${hostId}`;
export const gitStatusWorkflowId = (environmentId: string): string => `git-status/${environmentId}`;
export const cascadeWorkflowId = (trigger: string, rootTaskId: string, operationId: string): string =>
  `cascade/${trigger}/${rootTaskId}/${operationId}`;
/** A board delete is a cascade over the board's tasks: cascade/board_delete/<boardId>/<operationId>. */
export const boardDeleteWorkflowId = (boardId: string, operationId: string): string =>
  cascadeWorkflowId('board_delete', boardId, operationId);
export const orphanSweepWorkflowId = (runId: string): string => `orphan-sweep/${runId}`;
export const QUICK_CHAT_EXPIRY_SCHEDULE_ID = 'quick-chat-expiry';
/** Per host: `idle-release-<hostId>` [R6.9]. */
export const IDLE_RELEASE_SCHEDULE_ID = 'idle-release';
/** A release on request (`POST /v1/idle-release`); the schedule's runs carry its id. */
export const idleReleaseWorkflowId = (hostId: string, runId: string): string => `idle-release/${hostId}/${runId}`;
export const ORPHAN_SWEEP_SCHEDULE_ID = 'orphan-sweep';
export const stopWorkflowId = (sessionId: string, operationId: string): string => `stop/${sessionId}/${operationId}`;
/** One consistency-check schedule per host: each host re-identifies its own processes. */
export const RECONCILE_SCHEDULE_ID = 'reconcile';
/** A repository's registration checks, run on its host. */
export const repositoryCheckWorkflowId = (checkId: string): string => `repository-check/${checkId}`;
export const sshTargetCheckWorkflowId = (checkId: string): string => `ssh-target-check/${checkId}`;
export const agentLogWorkflowId = (readId: string): string => `agent-log/${readId}`;
/** Finishing a task [R8]: a merge, its undo, a rebase, and the read-only questions (preview, diff). */
export const mergeWorkflowId = (taskId: string, operationId: string): string => `merge/${taskId}/${operationId}`;
export const undoMergeWorkflowId = (mergeId: string, operationId: string): string =>
  `undo-merge/${mergeId}/${operationId}`;
export const rebaseWorkflowId = (taskId: string, operationId: string): string => `rebase/${taskId}/${operationId}`;
export const mergePreviewWorkflowId = (taskId: string, readId: string): string => `merge-preview/${taskId}/${readId}`;
/** A push of a task's branches to their remotes [R8.6]. */
export const pushWorkflowId = (taskId: string, runId: string): string => `push/${taskId}/${runId}`;
export const taskDiffWorkflowId = (readId: string): string => `task-diff/${readId}`;
