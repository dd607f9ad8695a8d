/** Starting a launch workflow and reading its typed outcome, for the gateway and the CLI. */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import type { Config } from '../domain/config';
import type { ErrorCode } from '../domain/errors';
import type { LaunchRequest, LaunchResult } from '../domain/launch';
import { ExecutorTypeAttr, SessionIdAttr, TaskIdAttr } from '../domain/search-attributes';
import { hostTaskQueue, launchWorkflowId, resumeWorkflowId } from '../domain/workflow-ids';
import type { launchSession, resumeSession } from '../workflows';
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

/**
 * A run of this id that already exists is this request's run: started by an earlier request
 * with the same Idempotency-Key (closed or still running), or by a concurrent one. A closed one
 * is never started again (REJECT_DUPLICATE): its outcome is the answer. Null when the engine no
 * longer holds it (past retention): the caller reads the session row instead.
 */
async function startOrJoin<T>(client: Client, workflowId: string, start: () => Promise<T>): Promise<T | null> {
  try {
    return await start();
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    try {
      return (await client.workflow.getHandle(workflowId).result()) as T;
    } catch (joined) {
      if (joined instanceof WorkflowNotFoundError) return null;
      throw joined;
    }
  }
}

export async function runLaunch(client: Client, config: Config, req: Omit<LaunchRequest, 'hostId' | 'sharedQueue'>): Promise<LaunchOutcome | null> {
  const workflowId = launchWorkflowId(req.sessionId);
  try {
    const result = await startOrJoin(client, workflowId, () =>
      client.workflow.execute<typeof launchSession>('launchSession', {
        workflowId,
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        ...onThisHost(config),
        args: [{ ...req, hostId: config.hostId, sharedQueue: config.taskQueue }],
        typedSearchAttributes: new TypedSearchAttributes([
          { key: TaskIdAttr, value: req.taskId },
          { key: SessionIdAttr, value: req.sessionId },
          { key: ExecutorTypeAttr, value: req.executorType },
        ]),
      }),
    );
    return result === null ? null : { ok: true, result };
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) return { ok: false, ...refusal };
    throw err;
  }
}

/** resume/<sessionId>/<run>: the run is the request's own (an Idempotency-Key derives it), so a retry joins the same run. */
export async function runResume(
  client: Client,
  config: Config,
  session: { id: string; taskId: string; executorType: string },
  runId: string,
  extra: { args?: string[]; env?: Record<string, string>; prompt?: string | null } = {},
): Promise<LaunchOutcome | null> {
  const workflowId = resumeWorkflowId(session.id, runId);
  try {
    const result = await startOrJoin(client, workflowId, () =>
      client.workflow.execute<typeof resumeSession>('resumeSession', {
        workflowId,
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        // Where a launch starts: its host steps run as local activities there.
        ...onThisHost(config),
        args: [{ sessionId: session.id, runId, hostId: config.hostId, sharedQueue: config.taskQueue, ...extra }],
        // Found in the Temporal UI the way launches are: by task, session and executor.
        typedSearchAttributes: new TypedSearchAttributes([
          { key: TaskIdAttr, value: session.taskId },
          { key: SessionIdAttr, value: session.id },
          { key: ExecutorTypeAttr, value: session.executorType },
        ]),
      }),
    );
    return result === null ? null : { ok: true, result };
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) return { ok: false, ...refusal };
    throw err;
  }
}
