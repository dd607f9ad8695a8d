/**
 * A bulk cleanup's batch on one host (batching is for bulk triggers only). One host
 * step carries out many tasks' jobs: each claimed job gets the same attempt as a job of its own
 * (cleanupOnHost: agents stopped, every worktree audited and removed, branches, folders) and the
 * same finish (one transaction: inventory, environment, job `succeeded`). Their git work meets in
 * the repositories' shared turns (repository-turns.ts), which is where a batch saves: one lock
 * hold and one listing for many removals. A job whose attempt fails is let go with its error
 * class and its report: its own run retries it on its schedule and may hand it to an operator.
 */
import { ApplicationFailure } from '@temporalio/common';
import { claimForBatch, releaseFromBatch } from '../db/cleanup-jobs';
import { CLEANUP_ERROR_CLASSES, type CleanupErrorClass, type CleanupTrigger } from '../domain/cleanup';
import type { CleanupReport, CleanupSnapshot } from '../domain/cleanup-snapshot';
import { cleanupOnHostActivities } from './cleanup-on-host';
import { cleanupRecordActivities } from './cleanup-records';
import { progressOfRow } from './cleanup-records-job';
import type { ActivityDeps } from '../executors/support/deps';
import { withHeartbeat } from '../executors/support/heartbeat';
import { inLanes } from '../domain/lanes';

export interface CleanupBatchInput {
  /** The bulk cleanup's workflow: it claims the jobs, and the rows name it while it carries them out. */
  batchWorkflowId: string;
  hostId: string;
  operationIds: string[];
  trigger: CleanupTrigger;
  discardChanges: boolean;
}

export type BatchMemberOutcome =
  | { operationId: string; state: 'succeeded'; attempts: number; report: CleanupReport }
  /** The attempt failed: the job waits for its own run (retry_wait), with this class as its last error. */
  | { operationId: string; state: 'released'; attempts: number; lastError: CleanupErrorClass }
  /** Not pending when the batch came to it (cancelled, or taken by a run of its own): its own run decides it. */
  | { operationId: string; state: 'not_claimed' };

/** How many of a batch's tasks are cleaned at once on the host: their removals share the repositories' turns. */
const BATCH_TASKS_AT_ONCE = 16;

const classOf = (err: unknown): CleanupErrorClass =>
  err instanceof ApplicationFailure && CLEANUP_ERROR_CLASSES.includes(err.type as CleanupErrorClass)
    ? (err.type as CleanupErrorClass)
    : 'internal';

export function cleanupBatchActivities(deps: ActivityDeps) {
  const { pool, logger } = deps;
  const onHost = cleanupOnHostActivities(deps);
  const records = cleanupRecordActivities(deps);
  return {
    async cleanupBatchOnHost(input: CleanupBatchInput): Promise<BatchMemberOutcome[]> {
      return withHeartbeat('cleanup-batch', async () => {
        const claimed = await claimForBatch(pool, input.operationIds, input.batchWorkflowId);
        const outcomes = new Map<string, BatchMemberOutcome>();
        await inLanes(claimed, BATCH_TASKS_AT_ONCE, async (job) => {
          const snapshot = job.snapshot as CleanupSnapshot;
          let report: CleanupReport = { ...progressOfRow(job).report, borrowed: snapshot.borrowed };
          try {
            report = await onHost.cleanupOnHost({
              hostId: input.hostId,
              trigger: input.trigger,
              discardChanges: input.discardChanges,
              snapshot,
              report,
            });
          } catch (err) {
            const lastError = classOf(err);
            if (lastError === 'internal')
              logger.warn(
                { err, operationId: job.operation_id },
                'a batched cleanup attempt failed; its own run retries it',
              );
            await releaseFromBatch(pool, [job.operation_id], input.batchWorkflowId, { lastError, report });
            outcomes.set(job.operation_id, {
              operationId: job.operation_id,
              state: 'released',
              attempts: job.attempts,
              lastError,
            });
            return;
          }
          await records.finishCleanup({
            operationId: job.operation_id,
            state: 'succeeded',
            snapshot,
            report,
            attempts: job.attempts,
          });
          outcomes.set(job.operation_id, {
            operationId: job.operation_id,
            state: 'succeeded',
            attempts: job.attempts,
            report,
          });
        });
        return input.operationIds.map((id) => outcomes.get(id) ?? { operationId: id, state: 'not_claimed' });
      });
    },
  };
}
