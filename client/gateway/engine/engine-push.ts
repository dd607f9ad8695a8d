/** push/<taskId>/<runId>: a task's branches pushed to their remotes, on the hosts of their repositories [R8.6]. */
import type { Client } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import type { Config } from '../../../domain/config';
import { pushWorkflowId } from '../../../domain/workflow-ids';
import type { pushRepositories } from '../../../workflows';
import type { RepositoryPush } from '../../../workflows/push-refs';
import { EngineRefusal, typedRefusalOf } from './typed-outcome';

/** What each repository's remote refs are now; a refusal (the first) is thrown as an EngineRefusal. */
export async function pushOnHosts(client: Client, config: Config, taskId: string, pushes: RepositoryPush[]) {
  try {
    return await client.workflow.execute<typeof pushRepositories>('pushRepositories', {
      workflowId: pushWorkflowId(taskId, randomUUID()),
      taskQueue: config.taskQueue,
      args: [pushes],
    });
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) throw new EngineRefusal(refusal);
    throw err;
  }
}
