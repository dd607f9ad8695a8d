/** What follows a merge that merged, when asked for [R8.3, R8.6]: its bases pushed, its task archived. */
import { ParentClosePolicy, startChild, uuid4 } from '@temporalio/workflow';
import type { RepositoryMerged } from '../domain/merge';
import { cleanupWorkflowId } from '../domain/workflow-ids';
import { mergeHostSteps, recordSteps } from './activity-proxies';
import type { RetryPolicy } from '../domain/cleanup';

const records = recordSteps();

/** Each moved base pushed to its repository's remote, under its own name; each repository says whether it was. */
export async function pushBases(
  input: { taskId: string; cleanupPolicy: RetryPolicy },
  merged: RepositoryMerged[],
): Promise<RepositoryMerged[]> {
  const sources = await records.taskRepositorySources(input.taskId);
  const pushed: RepositoryMerged[] = [];
  for (const repo of merged) {
    const source = sources.find((s) => s.repositoryId === repo.repositoryId);
    if (!source?.remote) {
      pushed.push({ ...repo, pushed: false });
      continue;
    }
    const ref = `refs/heads/${repo.baseBranch}`;
    const ok = await mergeHostSteps(source.hostId, input.cleanupPolicy.heartbeatTimeoutMs)
      .pushRefs({ sourcePath: source.sourcePath, remote: source.remote, refs: [{ local: ref, remote: ref }] })
      .then(
        () => true,
        () => false,
      );
    pushed.push({ ...repo, pushed: ok });
  }
  return pushed;
}

export async function archiveTask(input: { taskId: string; cleanupPolicy: RetryPolicy }): Promise<void> {
  const operationId = uuid4();
  await startChild('cleanupTask', {
    workflowId: cleanupWorkflowId('archive', input.taskId, operationId),
    args: [
      {
        operationId,
        taskId: input.taskId,
        trigger: 'archive',
        discardChanges: false,
        policy: input.cleanupPolicy,
        alreadyPrepared: false,
      },
    ],
    parentClosePolicy: ParentClosePolicy.ABANDON,
  });
}
