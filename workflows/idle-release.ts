/**
 * Run by the per-host Temporal Schedule `idle-release-<hostId>` and by `POST /v1/idle-release`:
 * every environment of the host whose tasks are all idle is released through the cleanup path
 * (trigger `idle_release`: its uncommitted work saved first, the branch kept) [R6.9].
 */
import { ParentClosePolicy, patched, startChild, uuid4 } from '@temporalio/workflow';
import type { RetryPolicy } from '../domain/cleanup';
import type { IdleReleaseResult } from '../domain/idle';
import { TaskIdAttr, TriggerAttr } from '../domain/search-attributes';
import { cleanupWorkflowId } from '../domain/workflow-ids';
import { recordSteps } from './activity-proxies';
import { childSearchAttributes } from './phase';
import { cleanupTask } from './cleanup-task';

const records = recordSteps();

export async function releaseIdleWorkspaces(input: {
  hostId: string;
  idleForMs: number;
  dryRun: boolean;
  policy: RetryPolicy;
}): Promise<IdleReleaseResult> {
  // The workflow's clock (the time of this workflow task), not the database's: replay judges the same.
  const asOf = new Date().getTime();
  const found = await records.idleEnvironments({
    hostId: input.hostId,
    idleForMs: input.idleForMs,
    asOf: new Date(asOf).toISOString(),
  });
  const idleCutoff = new Date(asOf - input.idleForMs).toISOString();
  if (input.dryRun)
    return { released: found.release.map((taskId) => ({ taskId, operationId: null })), kept: found.kept, dryRun: true };
  // Each release is its own durable cleanup; one refused (an agent started meanwhile) does not stop the others.
  const release = async (taskId: string, operationId: string) => {
    await startChild(cleanupTask, {
      workflowId: cleanupWorkflowId('idle_release', taskId, operationId),
      args: [
        {
          operationId,
          taskId,
          trigger: 'idle_release',
          discardChanges: false,
          policy: input.policy,
          alreadyPrepared: false,
          idleCutoff,
        },
      ],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      typedSearchAttributes: childSearchAttributes([
        { key: TaskIdAttr, value: taskId },
        { key: TriggerAttr, value: 'idle_release' },
      ]),
    });
    return { taskId, operationId };
  };
  const released: IdleReleaseResult['released'] = [];
  if (patched('idle-release-starts-children-at-once')) {
    // Every start in one workflow task: one at a time, each start waited for a workflow task of
    // its own, queued behind the very cleanups it had started (a hundred took over five minutes).
    released.push(...(await Promise.all(found.release.map((taskId) => release(taskId, uuid4())))));
  } else {
    for (const taskId of found.release) released.push(await release(taskId, uuid4()));
  }
  return { released, kept: found.kept, dryRun: false };
}
