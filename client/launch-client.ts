/** Starting a launch workflow and reading its typed outcome, for the gateway and the CLI. */
import type { Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import type { Config } from '../domain/config';
import type { ErrorCode } from '../domain/errors';
import type { LaunchRequest, LaunchResult } from '../domain/launch';
import { ExecutorTypeAttr, SessionIdAttr, TaskIdAttr } from '../domain/search-attributes';
import { hostTaskQueue, launchWorkflowId } from '../domain/workflow-ids';
import type { launchSession } from '../workflows';
import { typedRefusalOf } from './typed-outcome';

export type LaunchOutcome = { ok: true; result: LaunchResult } | { ok: false; code: ErrorCode; details: Record<string, unknown> };

/**
 * Where a launch or resume starts: on the queue of this gateway's host (where a new workspace is
 * made), so its host steps are local activities of that host's worker; a workspace on another
 * host is still reached through that host's queue. Eagerly where this process runs a worker on
 * that queue on its client's connection (TWS_GATEWAY_RUNS_LAUNCHES): it starts here at once.
 */
export function onThisHost(config: Pick<Config, 'taskQueue' | 'hostId' | 'gatewayRunsLaunches'>) {
  return { taskQueue: hostTaskQueue(config.taskQueue, config.hostId), requestEagerStart: config.gatewayRunsLaunches };
}

export async function runLaunch(client: Client, config: Config, req: Omit<LaunchRequest, 'hostId' | 'sharedQueue'>): Promise<LaunchOutcome> {
  try {
    const result = await client.workflow.execute<typeof launchSession>('launchSession', {
      workflowId: launchWorkflowId(req.sessionId),
      ...onThisHost(config),
      args: [{ ...req, hostId: config.hostId, sharedQueue: config.taskQueue }],
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
