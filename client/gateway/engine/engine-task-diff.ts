/**
 * A task's diff asked of the host that holds its repositories, through that host's queue, for a
 * gateway on another host [R8.1]. The answer travels as a workflow result, so its patch is held
 * under the engine's payload limit (REMOTE_PATCH_BYTES) whatever TWS_DIFF_MAX_BYTES says; a host
 * that does not answer is refused `host_unavailable`.
 */
import type { Client } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import type { Config } from '../../../domain/config';
import type { DiffRequest, RepositoryDiff } from '../../../domain/task-diff';
import { taskDiffWorkflowId } from '../../../domain/workflow-ids';
import type { readTaskDiffOnHost } from '../../../workflows';
import { EngineRefusal, typedRefusalOf } from './typed-outcome';

/** The engine refuses a payload over 2 MiB: a patch from another host stays well under it, its file list beside it. */
const REMOTE_PATCH_BYTES = 1024 * 1024;

export async function readTaskDiffOn(
  client: Client,
  config: Config,
  hostId: string,
  request: DiffRequest,
): Promise<RepositoryDiff[]> {
  try {
    return await client.workflow.execute<typeof readTaskDiffOnHost>('readTaskDiffOnHost', {
      workflowId: taskDiffWorkflowId(randomUUID()),
      taskQueue: config.taskQueue,
      args: [{ hostId, request: { ...request, maxBytes: Math.min(request.maxBytes, REMOTE_PATCH_BYTES) } }],
    });
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) throw new EngineRefusal(refusal);
    throw err;
  }
}
