/** Run by the Temporal Schedule `quick-chat-expiry`: delete quick chats idle longer than the limit (their uncommitted work saved first), through the cleanup path. */
import { ParentClosePolicy, startChild, uuid4 } from '@temporalio/workflow';
import type { RetryPolicy } from '../domain/cleanup';
import { TaskIdAttr, TriggerAttr } from '../domain/search-attributes';
import { cleanupWorkflowId } from '../domain/workflow-ids';
import { recordSteps } from './activity-proxies';
import { childSearchAttributes } from './phase';
import { cleanupTask } from './cleanup-task';

const records = recordSteps();

export async function expireQuickChats(input: { idleMs: number; policy: RetryPolicy }): Promise<string[]> {
  // The workflow's clock (deterministic: the time of this workflow task), not the database's.
  const idle = await records.idleQuickChats(input.idleMs, new Date().toISOString());
  for (const taskId of idle) {
    const operationId = uuid4();
    // Each expiry is its own durable cleanup; one refused (already archived meanwhile) does not stop the others.
    await startChild(cleanupTask, {
      workflowId: cleanupWorkflowId('quick_chat_expiry', taskId, operationId),
      args: [
        {
          operationId,
          taskId,
          trigger: 'quick_chat_expiry',
          discardChanges: false,
          policy: input.policy,
          alreadyPrepared: false,
        },
      ],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      typedSearchAttributes: childSearchAttributes([
        { key: TaskIdAttr, value: taskId },
        { key: TriggerAttr, value: 'quick_chat_expiry' },
      ]),
    });
  }
  return idle;
}
