/**
 * cascade/<trigger>/<rootTaskId>/<operationId>: every barrier of the task tree first (one
 * transaction), then mutate deepest-first, then one child cleanup per task.
 */
import { ApplicationFailure, ParentClosePolicy, allHandlersFinished, condition, executeChild, patched, setHandler, uuid4 } from '@temporalio/workflow';
import type { CleanupInput, CleanupProgress, CleanupTrigger, RetryPolicy } from '../domain/cleanup';
import { TaskIdAttr, TriggerAttr } from '../domain/search-attributes';
import { cleanupWorkflowId } from '../domain/workflow-ids';
import { hostSteps, recordSteps } from './activity-proxies';
import { awaitPreparedUpdate } from './cleanup-messages';
import { cleanupTask } from './cleanup-task';
import { asTypedFailure } from './typed-failure';

const records = recordSteps();

export interface CascadeInput {
  rootTaskId: string;
  operationId: string;
  trigger: CleanupTrigger;
  discardChanges: boolean;
  policy: RetryPolicy;
}

export async function cascadeCleanup(input: CascadeInput): Promise<CleanupProgress[]> {
  let prepared = false;
  let refusal: ApplicationFailure | null = null;
  setHandler(awaitPreparedUpdate, async () => {
    await condition(() => prepared || refusal !== null);
    if (refusal) throw refusal;
    return { operationId: input.operationId };
  });

  const members: { taskId: string; operationId: string; workflowId: string }[] = [];
  try {
    // A re-run after the preparation committed (the engine or the worker died before this
    // workflow task was recorded) continues with the members it prepared: the tree it would read
    // again is already archived or deleted by that preparation.
    const preparedBefore = patched('cascade-prepared-members') ? await records.cascadeMembers(input.operationId) : [];
    if (preparedBefore.length > 0) {
      members.push(...preparedBefore);
    } else {
      const tree = await records.taskTree(input.rootTaskId);
      for (const taskId of tree) {
        const operationId = taskId === input.rootTaskId ? input.operationId : uuid4();
        members.push({ taskId, operationId, workflowId: cleanupWorkflowId(input.trigger, taskId, operationId) });
      }
      if (input.trigger === 'delete' && !input.discardChanges) {
        const dirty: string[] = [];
        for (const m of members) {
          const preview = await records.previewWorktrees(m.taskId);
          if (preview.hostId) dirty.push(...(await hostSteps(preview.hostId).findDirtyWorktrees(preview.worktrees)));
        }
        if (dirty.length > 0) throw ApplicationFailure.create({ type: 'task_delete_dirty_worktree', message: 'The task has uncommitted changes.', nonRetryable: true, details: [{ dirtyRepositories: [...new Set(dirty)] }] });
      }
      await records.prepareCascade({ trigger: input.trigger, members, cascadeOperationId: input.operationId });
    }
  } catch (err) {
    refusal = asTypedFailure(err);
    await condition(allHandlersFinished);
    throw refusal;
  }
  prepared = true;

  // Deepest first: children finish before their parents.
  const results: CleanupProgress[] = [];
  for (const m of members) {
    const child: CleanupInput = { operationId: m.operationId, taskId: m.taskId, trigger: input.trigger, discardChanges: input.discardChanges, policy: input.policy, alreadyPrepared: true };
    results.push(
      await executeChild(cleanupTask, {
        workflowId: m.workflowId,
        args: [child],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        typedSearchAttributes: [
          { key: TaskIdAttr, value: m.taskId },
          { key: TriggerAttr, value: input.trigger },
        ],
      }),
    );
  }
  await condition(allHandlersFinished);
  return results;
}
