/** Queries, updates and signals of the cleanup workflows, defined once at module level. */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { CleanupProgress } from '../domain/cleanup';

/** The job's progress: the same story the cleanup_jobs row tells. */
export const progressQuery = defineQuery<CleanupProgress>('progress');
/** Returns once the barrier, the snapshot and the task mutation are done, or throws the typed refusal. */
export const awaitPreparedUpdate = defineUpdate<{ operationId: string }>('awaitPrepared');
/** An operator's fresh round for a job that exhausted its attempts. */
export const operatorRetrySignal = defineSignal('operatorRetry');
/** Unarchive: stop a pending cleanup, wait for one in flight; returns the job's final state. */
export const cancelUpdate = defineUpdate<{ state: string }>('cancel');
