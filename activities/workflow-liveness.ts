/** The engine's word on a workflow, asked through the activity's own client: one reader for every step that asks. */
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { WorkflowLiveness } from '../domain/reconcile';

export async function workflowLiveness(workflowId: string): Promise<WorkflowLiveness> {
  try {
    return (await Context.current().client.workflow.getHandle(workflowId).describe()).status.name === 'RUNNING'
      ? 'running'
      : 'closed';
  } catch (err) {
    return err instanceof WorkflowNotFoundError ? 'not_found' : 'unknown';
  }
}

/** The workflow the running activity serves; null outside an activity (a step called directly). */
export function servedWorkflowId(): string | null {
  try {
    return Context.current().info.workflowExecution?.workflowId ?? null;
  } catch {
    return null;
  }
}
