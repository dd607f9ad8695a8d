import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { SearchAttributePair } from '@temporalio/common';
import { PhaseAttr, TaskIdAttr, TriggerAttr } from '../domain/search-attributes';

/**
 * Shows where a run is as the `Phase` search attribute. Only runs started with the project's
 * search attributes (TaskId) upsert it: a namespace without them (a bare test server, a
 * cluster where they are not registered) still runs every workflow.
 */
export function setPhase(value: string): void {
  if (workflowInfo().typedSearchAttributes.get(TaskIdAttr) === undefined) return;
  upsertSearchAttributes([{ key: PhaseAttr, value }]);
}

/**
 * The search attributes a child run is started with: the project's, when this run carries them
 * itself (started by the gateway or by its Schedule, so the namespace has them); none otherwise,
 * since a namespace without them refuses a start that names them.
 */
export function childSearchAttributes(pairs: SearchAttributePair[]): SearchAttributePair[] {
  const own = workflowInfo().typedSearchAttributes;
  return own.get(TaskIdAttr) === undefined && own.get(TriggerAttr) === undefined ? [] : pairs;
}
