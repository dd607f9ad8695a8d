/** Starting a launch workflow and reading its typed outcome, for the gateway and the CLI. */
import type { Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import type { ErrorCode } from '../domain/errors';
import type { LaunchRequest, LaunchResult } from '../domain/launch';
import { ExecutorTypeAttr, SessionIdAttr, TaskIdAttr } from '../domain/search-attributes';
import { hostTaskQueue, launchWorkflowId } from '../domain/workflow-ids';
import type { launchSession } from '../workflows';
import { typedRefusalOf } from './typed-outcome';

export type LaunchOutcome = { ok: true; result: LaunchResult } | { ok: false; code: ErrorCode; details: Record<string, unknown> };

/**
 * The launch runs on the queue of the host that asks for it (`req.hostId`, where a new workspace
 * is made), so its host steps are local activities of that host's worker; a workspace on another
 * host is still reached through that host's queue. `eager`: the caller's process runs a worker on
 * that queue on the client's own connection, and the launch starts there at once.
 */
export async function runLaunch(client: Client, opts: { sharedQueue: string; eager: boolean }, req: LaunchRequest): Promise<LaunchOutcome> {
  const { sharedQueue } = opts;
  try {
    const result = await client.workflow.execute<typeof launchSession>('launchSession', {
      workflowId: launchWorkflowId(req.sessionId),
      taskQueue: hostTaskQueue(sharedQueue, req.hostId),
      requestEagerStart: opts.eager,
      args: [{ ...req, sharedQueue }],
      typedSearchAttributes: new TypedSearchAttributes([
        { key: TaskIdAttr, value: req.taskId },
        { key: SessionIdAttr, value: req.sessionId },
        { key: ExecutorTypeAttr, value: req.executorType },
      ]),
    });
    return { ok: true, result };
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) return { ok: false, ...refusal };
    throw err;
  }
}
