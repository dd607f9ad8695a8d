/** Starting a launch workflow and reading its typed outcome, for the gateway and the CLI. */
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure, TypedSearchAttributes } from '@temporalio/common';
import { isErrorCode, type ErrorCode } from '../domain/errors';
import type { LaunchRequest, LaunchResult } from '../domain/launch';
import { ExecutorTypeAttr, SessionIdAttr, TaskIdAttr } from '../domain/search-attributes';
import { launchWorkflowId } from '../domain/workflow-ids';
import type { launchSession } from '../workflows';

export type LaunchOutcome = { ok: true; result: LaunchResult } | { ok: false; code: ErrorCode; details: Record<string, unknown> };

export async function runLaunch(client: Client, taskQueue: string, req: LaunchRequest): Promise<LaunchOutcome> {
  try {
    const result = await client.workflow.execute<typeof launchSession>('launchSession', {
      workflowId: launchWorkflowId(req.sessionId),
      taskQueue,
      args: [req],
      typedSearchAttributes: new TypedSearchAttributes([
        { key: TaskIdAttr, value: req.taskId },
        { key: SessionIdAttr, value: req.sessionId },
        { key: ExecutorTypeAttr, value: req.executorType },
      ]),
    });
    return { ok: true, result };
  } catch (err) {
    if (err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure && isErrorCode(err.cause.type)) {
      const details = (err.cause.details?.[0] ?? {}) as Record<string, unknown>;
      return { ok: false, code: err.cause.type, details };
    }
    throw err;
  }
}
