/**
 * Run by the per-host Temporal Schedule `idle-release-<hostId>` and by `POST /v1/idle-release`:
 * every environment of the host whose tasks are all idle is released through the cleanup path
 * (trigger `idle_release`: its uncommitted work saved first, the branch kept) [R6.9]. Each
 * release is a cleanup job of its own, prepared under its task's lock (a second look at its
 * idleness); the request's answer (`awaitIdleReleasePrepared`) comes once they are prepared. The
 * run then carries them out in batches per host, their removals in the repositories' shared
 * turns (as a board delete's); a job a batch lets go runs on its own, retried by itself.
 * Runs recorded before `idle-release-in-batches` started a child run per release instead.
 */
import { allHandlersFinished, condition, ParentClosePolicy, patched, startChild, uuid4 } from '@temporalio/workflow';
import type { CascadeMember } from '../activities/cleanup-records-bulk';
import type { RetryPolicy } from '../domain/cleanup';
import type { IdleReleaseResult } from '../domain/idle';
import { TaskIdAttr, TriggerAttr } from '../domain/search-attributes';
import { cleanupWorkflowId } from '../domain/workflow-ids';
import { recordSteps } from './activity-proxies';
import { BULK_LANES, cleanMembersInBatches, newMember, preparationBarrier } from './cascade-cleanup';
import { awaitIdleReleasePreparedUpdate } from './cleanup-messages';
import { childSearchAttributes } from './phase';
import { cleanupTask } from './cleanup-task';

const records = recordSteps();

export async function releaseIdleWorkspaces(input: {
  hostId: string;
  idleForMs: number;
  dryRun: boolean;
  policy: RetryPolicy;
}): Promise<IdleReleaseResult> {
  // A caller (POST /v1/idle-release) waits for the answer, not for the releases.
  let answer: IdleReleaseResult | null = null;
  const barrier = preparationBarrier(awaitIdleReleasePreparedUpdate, () => answer!);
  const answerWith = (result: IdleReleaseResult): IdleReleaseResult => {
    answer = result;
    barrier.prepared();
    return result;
  };
  const finished = async (result: IdleReleaseResult): Promise<IdleReleaseResult> => {
    await condition(allHandlersFinished);
    return result;
  };
  // The workflow's clock (the time of this workflow task), not the database's: replay judges the same.
  const asOf = new Date().getTime();
  const idleCutoff = new Date(asOf - input.idleForMs).toISOString();
  let found: Awaited<ReturnType<typeof records.idleEnvironments>>;
  try {
    found = await records.idleEnvironments({
      hostId: input.hostId,
      idleForMs: input.idleForMs,
      asOf: new Date(asOf).toISOString(),
    });
  } catch (err) {
    return barrier.refuse(err);
  }
  if (input.dryRun)
    return finished(
      answerWith({
        released: found.release.map((taskId) => ({ taskId, operationId: null })),
        kept: found.kept,
        dryRun: true,
      }),
    );
  if (patched('idle-release-in-batches')) {
    // Every release prepared first (each its own job, its task looked at again under its lock);
    // then carried out in batches per host whose removals share the repositories' turns, as a
    // board delete's are. A job a batch cannot carry out gets a run of its own, retried by itself.
    const releases = found.release.map((taskId) => newMember('idle_release', taskId));
    let prepared: CascadeMember[];
    try {
      prepared = await records.prepareIdleReleases({ idleCutoff, releases });
    } catch (err) {
      return barrier.refuse(err);
    }
    const result = answerWith({
      released: prepared.map(({ taskId, operationId }) => ({ taskId, operationId })),
      kept: found.kept,
      dryRun: false,
    });
    await cleanMembersInBatches(
      prepared,
      { trigger: 'idle_release', discardChanges: false, policy: input.policy },
      BULK_LANES,
    );
    return finished(result);
  }
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
  return finished(answerWith({ released, kept: found.kept, dryRun: false }));
}
