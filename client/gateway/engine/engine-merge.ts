/**
 * The one place that starts the workflows of finishing a task [R8]: their ids, queue and the
 * reading of their typed refusals. Routes only translate HTTP.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Config } from '../../../domain/config';
import type { MergeStrategy, RepositoryPlan } from '../../../domain/merge';
import {
  mergePreviewWorkflowId,
  mergeWorkflowId,
  rebaseWorkflowId,
  undoMergeWorkflowId,
} from '../../../domain/workflow-ids';
import type { previewMerge } from '../../../workflows/finish-task-questions';
import type { MergeInput, MergeOutcome, mergeTask } from '../../../workflows/merge-task';
import type { rebaseTask, RebaseOutcome } from '../../../workflows/rebase-task';
import type { undoMerge } from '../../../workflows/undo-merge';
import { typedRefusalOf, type TypedRefusal } from './typed-outcome';

/** A merge's operation id from its Idempotency-Key: the same key, the same operation and workflow. */
const operationIdOfKey = (taskId: string, key: string): string => {
  const hex = createHash('sha256').update(`merge:${taskId}:${key}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
};

export async function previewMergeOf(client: Client, config: Config, taskId: string, strategy: MergeStrategy) {
  return client.workflow.execute<typeof previewMerge>('previewMerge', {
    workflowId: mergePreviewWorkflowId(taskId, randomUUID()),
    taskQueue: config.taskQueue,
    args: [{ taskId, strategy }],
  });
}

export interface StartedMerge {
  operationId: string;
  workflowId: string;
}

/** Starts the merge (or joins the one its key started); waits up to `waitMs` for its outcome. */
export async function startMerge(
  client: Client,
  config: Config,
  request: Omit<MergeInput, 'operationId' | 'cleanupPolicy'>,
  waitMs: number,
): Promise<StartedMerge & { outcome: MergeOutcome | null }> {
  const operationId = request.idempotencyKey ? operationIdOfKey(request.taskId, request.idempotencyKey) : randomUUID();
  const workflowId = mergeWorkflowId(request.taskId, operationId);
  const handle = await client.workflow
    .start<typeof mergeTask>('mergeTask', {
      workflowId,
      taskQueue: config.taskQueue,
      args: [{ ...request, operationId, cleanupPolicy: config.cleanupPolicy }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    })
    .catch(async (err: unknown) => {
      // The same key after its merge ended: that merge is the answer.
      if ((err as { name?: string }).name === 'WorkflowExecutionAlreadyStartedError')
        return client.workflow.getHandle<typeof mergeTask>(workflowId);
      throw err;
    });
  return { operationId, workflowId, outcome: await resultWithin(handle, waitMs) };
}

/** A merge's outcome once it ended, or null when it has not within `waitMs`. */
const resultWithin = (handle: { result(): Promise<MergeOutcome> }, waitMs: number): Promise<MergeOutcome | null> =>
  Promise.race([handle.result(), new Promise<null>((resolve) => setTimeout(() => resolve(null), waitMs).unref())]);

/**
 * The end of a merge already started (its Idempotency-Key sent again while it runs), awaited up to
 * `waitMs`. Only its end: what it did is read from its record, which the run wrote before it ended.
 */
export async function mergeEnded(client: Client, workflowId: string, waitMs: number): Promise<void> {
  await resultWithin(client.workflow.getHandle<typeof mergeTask>(workflowId), waitMs);
}

export async function runRebase(
  client: Client,
  config: Config,
  input: { taskId: string; repositoryIds?: string[]; stopAgents?: boolean },
): Promise<RebaseOutcome | TypedRefusal> {
  const operationId = randomUUID();
  try {
    return await client.workflow.execute<typeof rebaseTask>('rebaseTask', {
      workflowId: rebaseWorkflowId(input.taskId, operationId),
      taskQueue: config.taskQueue,
      args: [{ ...input, operationId }],
    });
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) return refusal;
    throw err;
  }
}

export async function runUndo(
  client: Client,
  config: Config,
  input: { taskId: string; mergeId: string; plan: RepositoryPlan[] },
): Promise<TypedRefusal | null> {
  const operationId = randomUUID();
  try {
    await client.workflow.execute<typeof undoMerge>('undoMerge', {
      workflowId: undoMergeWorkflowId(input.mergeId, operationId),
      taskQueue: config.taskQueue,
      args: [{ ...input, operationId }],
    });
    return null;
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) return refusal;
    throw err;
  }
}
