import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { PhaseAttr, TaskIdAttr } from '../domain/search-attributes';

/**
 * Shows where a run is as the `Phase` search attribute. Only runs started with the project's
 * search attributes (TaskId) upsert it: a namespace without them (a bare test server, a
 * cluster where they are not registered) still runs every workflow.
 */
export function setPhase(value: string): void {
  if (workflowInfo().typedSearchAttributes.get(TaskIdAttr) === undefined) return;
  upsertSearchAttributes([{ key: PhaseAttr, value }]);
}
