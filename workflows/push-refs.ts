/**
 * push/<taskId>/<runId>: refs of a task's repositories pushed to their remotes [R8.6], each on the
 * host that holds its repository, one repository after another. The first refusal ends the run
 * with its code, its reason and its repository; the repositories pushed before it stay pushed (a
 * push is idempotent: the same request again pushes the same commits). A host whose worker does
 * not take the push in time is refused `host_unavailable`.
 */
import { ActivityFailure, ApplicationFailure, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { HostActivities } from '../activities';
import { hostTaskQueue } from '../domain/workflow-ids';
import type { PushedRef, PushRefsInput } from '../git/push';
import { askHost } from './host-questions';

export interface RepositoryPush extends PushRefsInput {
  repositoryId: string;
  hostId: string;
}

/** One try (the caller retries a refused push), minutes to push, seconds for the host to take it. */
const pushOn = (hostId: string) =>
  proxyActivities<HostActivities>({
    taskQueue: hostTaskQueue(workflowInfo().taskQueue, hostId),
    scheduleToStartTimeout: '10 seconds',
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: '30 seconds',
    retry: { maximumAttempts: 1 },
  });

export async function pushRepositories(
  pushes: RepositoryPush[],
): Promise<{ repositoryId: string; refs: PushedRef[] }[]> {
  const pushed: { repositoryId: string; refs: PushedRef[] }[] = [];
  for (const { repositoryId, hostId, ...input } of pushes) {
    try {
      pushed.push({ repositoryId, refs: await askHost(() => pushOn(hostId).pushRefs(input)) });
    } catch (err) {
      const typed = err instanceof ActivityFailure ? err.cause : err;
      if (!(typed instanceof ApplicationFailure)) throw err;
      // The refusal names its repository (an id), and the ones already pushed.
      const details = (typed.details?.[0] as Record<string, unknown> | undefined) ?? {};
      throw ApplicationFailure.create({
        type: typed.type ?? 'internal',
        message: typed.message,
        nonRetryable: true,
        details: [{ ...details, repositoryId, pushed: pushed.map((p) => p.repositoryId) }],
      });
    }
  }
  return pushed;
}
