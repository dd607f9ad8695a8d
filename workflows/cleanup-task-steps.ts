/**
 * The pure parts of cleanupTask (workflows/cleanup-task.ts): its first progress, its refusals,
 * how a failure is classed and what a cancel records. Apart from the workflow so that file holds
 * only its commands, whose order recorded histories replay; nothing here issues one.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import {
  CLEANUP_ERROR_CLASSES,
  removesTask,
  type CleanupErrorClass,
  type CleanupInput,
  type CleanupProgress,
} from '../domain/cleanup';
import {
  cleanupHosts,
  emptyReport,
  leftoverWorkspace,
  type CancelledBy,
  type CleanupReport,
  type CleanupSnapshot,
} from '../domain/cleanup-snapshot';
import { cleanupWorkflowId } from '../domain/workflow-ids';
import { typedRefusal } from './typed-failure';

/** How often a job held by a bulk cleanup's batch is looked at again. */
export const BATCH_HOLD_CHECK_EVERY = '5 seconds';

/** The classes an activity (or an attempt, for a host that is down) throws by type; the others are read from the failure's kind. */
const CLASSIFIED: CleanupErrorClass[] = CLEANUP_ERROR_CLASSES.filter(
  (c) => c !== 'database_failed' && c !== 'internal',
);

export function classify(err: unknown): CleanupErrorClass {
  for (let cur: unknown = err; cur instanceof Error; cur = (cur as { cause?: unknown }).cause) {
    if (cur instanceof ApplicationFailure && CLASSIFIED.includes(cur.type as CleanupErrorClass))
      return cur.type as CleanupErrorClass;
    if (cur.name === 'TimeoutFailure') return 'host_unavailable';
  }
  return 'internal';
}

/** A job's progress before its preparation: nothing attempted, nothing reported. */
export function initialProgress(input: CleanupInput): CleanupProgress {
  return {
    operationId: input.operationId,
    taskId: input.taskId,
    trigger: input.trigger,
    state: 'prepared',
    phase: 'preparing',
    attempts: 0,
    nextAttemptAt: null,
    lastError: null,
    report: emptyReport(),
  };
}

/** A host of the job that registers again ends a wait for a host that was unavailable, and only that wait. */
export function hostBackEndsWait(progress: CleanupProgress, snapshot: CleanupSnapshot | null, hostId: string): boolean {
  return (
    progress.state === 'retry_wait' &&
    progress.lastError === 'host_unavailable' &&
    snapshot !== null &&
    cleanupHosts(snapshot).includes(hostId)
  );
}

/** The preparation's request: the job's barrier, snapshot and mutation, under the job's workflow id. */
export function preparationRequest(input: CleanupInput) {
  return {
    operationId: input.operationId,
    taskId: input.taskId,
    trigger: input.trigger,
    workflowId: cleanupWorkflowId(input.trigger, input.taskId, input.operationId),
    discardChanges: input.discardChanges,
    ...(input.idleCutoff ? { idleCutoff: input.idleCutoff } : {}),
  };
}

/**
 * A host that is down: a delete's cannot say whether its worktrees are dirty (refused, nothing
 * changed); an attempt's fails before any host does its part (the job waits in its schedule).
 */
export function hostDownRefusal(of: 'task' | 'cleanup' = 'task'): ApplicationFailure {
  return ApplicationFailure.create({
    type: 'host_unavailable',
    message: of === 'task' ? 'The host of this task is down.' : 'A host of this cleanup is down.',
    nonRetryable: true,
  });
}

/** A delete without consent of a task with uncommitted changes: refused before any change. */
export function dirtyWorktreeRefusal(dirty: string[]): ApplicationFailure {
  return typedRefusal('task_delete_dirty_worktree', { dirtyRepositories: dirty });
}

/**
 * Who ended it is on the row; a cancelled delete's leftovers (its task row is gone) are
 * recorded abandoned: never removed, never swept.
 */
export function cancelledReport(
  input: CleanupInput,
  snapshot: CleanupSnapshot,
  report: CleanupReport,
  by: CancelledBy,
): CleanupReport {
  return {
    ...report,
    ended: { action: 'cancel', by },
    ...(removesTask(input.trigger) ? { abandoned: leftoverWorkspace(snapshot, report) } : {}),
  };
}
