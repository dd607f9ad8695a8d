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
}

export function continuationStart(job: ContinuedJob, taskQueue: string, policy: RetryPolicy) {
  // Consent to discard is not kept on the job: a continued delete keeps dirty work (nothing is lost).
  const input: CleanupInput = { operationId: job.operationId, taskId: job.taskId, trigger: job.trigger, discardChanges: false, policy, alreadyPrepared: true };
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
