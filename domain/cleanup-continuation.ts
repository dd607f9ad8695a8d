/**
 * A new run for a prepared cleanup job whose workflow closed while the job is still active (lost
 * to a failure, terminated): it continues from the job's snapshot under the job's own workflow id.
 * One builder for the consistency check and the operator routes.
 */
import { TypedSearchAttributes } from '@temporalio/common';
import type { CleanupInput, CleanupTrigger, RetryPolicy } from './cleanup';
import { TaskIdAttr, TriggerAttr } from './search-attributes';

export interface ContinuedJob {
  operationId: string;
  taskId: string;
  trigger: CleanupTrigger;
  workflowId: string;
  /** A delete's consent to discard, as its job keeps it (absent: none). */
  discardChanges?: boolean;
}

export function continuationStart(job: ContinuedJob, taskQueue: string, policy: RetryPolicy) {
  // The consent the job's request gave; none kept (jobs reserved before): dirty work is kept.
  const input: CleanupInput = {
    operationId: job.operationId,
    taskId: job.taskId,
    trigger: job.trigger,
    discardChanges: job.discardChanges ?? false,
    policy,
    alreadyPrepared: true,
  };
  return {
    workflowId: job.workflowId,
    taskQueue,
    args: [input],
    typedSearchAttributes: new TypedSearchAttributes([
      { key: TaskIdAttr, value: job.taskId },
      { key: TriggerAttr, value: job.trigger },
    ]),
  };
}
