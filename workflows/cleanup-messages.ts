/** Queries, updates and signals of the cleanup workflows, defined once at module level. */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { HOST_BACK_SIGNAL, type CancelRequest, type CleanupProgress } from '../domain/cleanup';
import type { IdleReleaseResult } from '../domain/idle';

/** The job's progress: the same story the cleanup_jobs row tells. */
export const progressQuery = defineQuery<CleanupProgress>('progress');
/** Returns once the barrier, the snapshot and the task mutation are done, or throws the typed refusal. */
export const awaitPreparedUpdate = defineUpdate<PreparedAnswer>('awaitPrepared');
/** A cascade's answer also names each member's job, and the members it left out (with why). */
export interface PreparedAnswer {
  operationId: string;
  operations?: { taskId: string; operationId: string }[];
  skipped?: { taskId: string; reason: string }[];
}
/** An operator's fresh round for a job that exhausted its attempts. */
export const operatorRetrySignal = defineSignal('operatorRetry');
/**
 * A host registered again (its worker started): a job waiting in its retry schedule because that
 * host was down runs its next attempt now, instead of at its next scheduled retry.
 */
export const hostBackSignal = defineSignal<[string]>(HOST_BACK_SIGNAL);
/**
 * End a job that waits (pending, retry_wait, needs_operator); one in flight finishes its attempt
 * first. Returns the job's final state. Sent by unarchive, by the operator's cancel (route, CLI)
 * and by the operator's abandon of an environment reset (`{ abandon: true }`); the Temporal UI
 * may send it without an argument. A job that succeeded meanwhile stays succeeded.
 */
export const cancelUpdate = defineUpdate<{ state: string }, [CancelRequest?]>('cancel');

/** What the 202 of a board delete says: one operation per task it cleans up. */
export interface BoardPrepared {
  operationId: string;
  operations: { taskId: string; operationId: string }[];
}

/** Returns once every member's barrier, snapshot and deletion and the board's deletion committed, or throws the typed refusal. */
export const awaitBoardPreparedUpdate = defineUpdate<BoardPrepared>('awaitBoardPrepared');

/**
 * Returns once an idle release's jobs are prepared (each task's barrier, second look and snapshot):
 * what it releases and keeps. The releases themselves go on in the run after the answer.
 */
export const awaitIdleReleasePreparedUpdate = defineUpdate<IdleReleaseResult>('awaitIdleReleasePrepared');
