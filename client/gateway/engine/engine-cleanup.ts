/**
 * Starting and steering the cleanup workflows (one job, a cascade, a board delete; cancel,
 * retry, continue a job whose run was lost, start follow-ups). Refusals come back typed.
 */
import { WithStartWorkflowOperation, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { randomUUID } from 'node:crypto';
import {
  ACTIVE_JOB_STATES,
  type CancelRequest,
  type CleanupInput,
  type CleanupJobState,
  type CleanupTrigger,
} from '../../../domain/cleanup';
import { continuationStart, type ContinuedJob } from '../../../domain/cleanup-continuation';
import type { Config } from '../../../domain/config';
import type { ErrorCode } from '../../../domain/errors';
import { TaskIdAttr, TriggerAttr } from '../../../domain/search-attributes';
import {
  boardDeleteWorkflowId,
  cascadeWorkflowId,
  cleanupWorkflowId,
  idleReleaseWorkflowId,
} from '../../../domain/workflow-ids';
import type { IdleReleaseResult } from '../../../domain/idle';
import type { boardDelete, releaseIdleWorkspaces } from '../../../workflows';
import {
  awaitBoardPreparedUpdate,
  awaitIdleReleasePreparedUpdate,
  awaitPreparedUpdate,
  cancelUpdate,
  operatorRetrySignal,
  type PreparedAnswer,
} from '../../../workflows/cleanup-messages';
import { EngineRefusal, typedRefusalOf } from './typed-outcome';
import { startPreparedJob } from '../../../executors/support/follow-up-starts';

export type CleanupStart =
  | {
      ok: true;
      operationId: string;
      workflowId: string;
      operations?: PreparedAnswer['operations'];
      skipped?: PreparedAnswer['skipped'];
    }
  | { ok: false; code: ErrorCode; details: Record<string, unknown> };

/**
 * Starts the cleanup workflow and returns once its preparation committed (barrier, snapshot,
 * task mutation), so the caller's 202 means the task is already archived or deleted [R6.3].
 */
export async function startCleanup(
  client: Client,
  config: Config,
  req: { taskId: string; trigger: CleanupTrigger; discardChanges?: boolean; cascade?: boolean },
): Promise<CleanupStart> {
  const operationId = randomUUID();
  const searchAttributes = new TypedSearchAttributes([
    { key: TaskIdAttr, value: req.taskId },
    { key: TriggerAttr, value: req.trigger },
  ]);
  const common = {
    taskQueue: config.taskQueue,
    typedSearchAttributes: searchAttributes,
    workflowTaskTimeout: config.workflowTaskTimeoutMs,
  };
  const workflowId = req.cascade
    ? cascadeWorkflowId(req.trigger, req.taskId, operationId)
    : cleanupWorkflowId(req.trigger, req.taskId, operationId);
  const args = req.cascade
    ? [
        {
          rootTaskId: req.taskId,
          operationId,
          trigger: req.trigger,
          discardChanges: req.discardChanges ?? false,
          policy: config.cleanupPolicy,
        },
      ]
    : [
        {
          operationId,
          taskId: req.taskId,
          trigger: req.trigger,
          discardChanges: req.discardChanges ?? false,
          policy: config.cleanupPolicy,
          alreadyPrepared: false,
        } satisfies CleanupInput,
      ];
  // Update-with-start: the start and the wait for preparation are one request, so even a
  // refusal that ends the workflow at once reaches the caller as the update's typed failure.
  const startWorkflowOperation = new WithStartWorkflowOperation(req.cascade ? 'cascadeCleanup' : 'cleanupTask', {
    ...common,
    workflowId,
    args,
    workflowIdConflictPolicy: 'FAIL',
  });
  try {
    const answer = await client.workflow.executeUpdateWithStart(awaitPreparedUpdate, { startWorkflowOperation });
    return {
      ok: true,
      operationId,
      workflowId,
      ...(req.cascade ? { operations: answer.operations ?? [], skipped: answer.skipped ?? [] } : {}),
    };
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) return { ok: false, ...refusal };
    throw err;
  }
}

export type BoardDeleteStart =
  | { ok: true; operationId: string; workflowId: string; operations: { taskId: string; operationId: string }[] }
  | { ok: false; code: ErrorCode; details: Record<string, unknown> };

/**
 * Starts the delete of a board and returns once its one preparation transaction committed
 * (every task's barrier, snapshot and deletion, and the board's), with one operation per task;
 * or its typed refusal (a dirty worktree without consent), nothing changed.
 */
export async function startBoardDelete(
  client: Client,
  config: Config,
  req: { boardId: string; discardChanges: boolean },
): Promise<BoardDeleteStart> {
  const operationId = randomUUID();
  const workflowId = boardDeleteWorkflowId(req.boardId, operationId);
  const startWorkflowOperation = new WithStartWorkflowOperation<typeof boardDelete>('boardDelete', {
    taskQueue: config.taskQueue,
    workflowTaskTimeout: config.workflowTaskTimeoutMs,
    typedSearchAttributes: new TypedSearchAttributes([{ key: TriggerAttr, value: 'board_delete' }]),
    workflowId,
    args: [{ boardId: req.boardId, operationId, discardChanges: req.discardChanges, policy: config.cleanupPolicy }],
    workflowIdConflictPolicy: 'FAIL',
  });
  try {
    const prepared = await client.workflow.executeUpdateWithStart(awaitBoardPreparedUpdate, { startWorkflowOperation });
    return { ok: true, operationId, workflowId, operations: prepared.operations };
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) return { ok: false, ...refusal };
    throw err;
  }
}

/**
 * A host's idle release now (the workflow its schedule runs), answered once every release's job is
 * prepared (or, for a dry run, judged): the releases themselves go on in that run. A typed
 * refusal is thrown as an EngineRefusal for the caller to answer.
 */
export async function runIdleRelease(
  client: Client,
  config: Config,
  req: { hostId: string; idleForMs: number; dryRun: boolean },
): Promise<IdleReleaseResult> {
  const startWorkflowOperation = new WithStartWorkflowOperation<typeof releaseIdleWorkspaces>('releaseIdleWorkspaces', {
    taskQueue: config.taskQueue,
    workflowTaskTimeout: config.workflowTaskTimeoutMs,
    workflowId: idleReleaseWorkflowId(req.hostId, randomUUID()),
    args: [{ ...req, policy: config.cleanupPolicy }],
    workflowIdConflictPolicy: 'FAIL',
  });
  try {
    return await client.workflow.executeUpdateWithStart(awaitIdleReleasePreparedUpdate, { startWorkflowOperation });
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) throw new EngineRefusal(refusal);
    throw err;
  }
}

/**
 * Unarchive, the operator's cancel and the abandonment of a reset: cancels a waiting cleanup and
 * waits for one in flight; returns its final state. A job whose run was lost (closed while the
 * job is active) gets a new run with the cancel as its first message, so it ends before any
 * attempt. A typed refusal (an abandonment while an agent runs) is returned, not thrown.
 */
export async function cancelCleanup(
  client: Client,
  config: Config,
  job: ContinuedJob,
  req: CancelRequest = {},
): Promise<{ ok: true; state: string } | { ok: false; code: ErrorCode; details: Record<string, unknown> }> {
  const startWorkflowOperation = new WithStartWorkflowOperation('cleanupTask', {
    ...continuationStart(job, config.taskQueue, config.cleanupPolicy),
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  try {
    return {
      ok: true,
      state: (await client.workflow.executeUpdateWithStart(cancelUpdate, { startWorkflowOperation, args: [req] }))
        .state,
    };
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) return { ok: false, ...refusal };
    throw err;
  }
}

/**
 * An abandonment with no job active: a job of its own (trigger `environment_abandon`), whose
 * preparation refuses while an agent runs; returns once it ended, with its state.
 */
export async function abandonEnvironment(
  client: Client,
  config: Config,
  taskId: string,
): Promise<CleanupStart & { state?: string }> {
  const started = await startCleanup(client, config, { taskId, trigger: 'environment_abandon' });
  if (!started.ok) return started;
  try {
    const progress = await client.workflow.getHandle(started.workflowId).result();
    return { ...started, state: (progress as { state: string }).state };
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) return { ok: false, ...refusal };
    throw err;
  }
}

/**
 * The operator's cancel (route and CLI): a job that has ended is refused `cleanup_job_finished`,
 * and so is one whose attempt in flight finished it first (nothing was cancelled).
 */
export async function operatorCancel(
  client: Client,
  config: Config,
  job: ContinuedJob & { state: CleanupJobState },
): Promise<{ ok: true; state: string } | { ok: false; code: ErrorCode; details: Record<string, unknown> }> {
  if (!ACTIVE_JOB_STATES.includes(job.state)) return { ok: false, code: 'cleanup_job_finished', details: {} };
  const ended = await cancelCleanup(client, config, job, { by: 'operator' });
  if (ended.ok && ended.state !== 'cancelled') return { ok: false, code: 'cleanup_job_finished', details: {} };
  return ended;
}

export async function retryCleanup(client: Client, workflowId: string): Promise<void> {
  await client.workflow.getHandle(workflowId).signal(operatorRetrySignal);
}

/**
 * A job still active whose workflow closed (lost, terminated) gets a new run from its snapshot,
 * so an operator's retry or an unarchive reaches a running workflow. False when its workflow runs.
 */
export async function continueIfClosed(client: Client, config: Config, job: ContinuedJob): Promise<boolean> {
  try {
    if ((await client.workflow.getHandle(job.workflowId).describe()).status.name === 'RUNNING') return false;
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  await startPreparedJob(client, config, job);
  return true;
}
