/**
 * The shape of a product workflow, as read from one of its histories (bench/engine-floor.ts) and
 * replayed with no work in it (temporal-floor-workflows.ts). Types and pure rendering only, so
 * the statistics and the report can name a shape without loading the engine floor's worker.
 */
import type { ShapeStep } from './temporal-floor-workflows';

export interface WorkflowShape {
  eager: boolean;
  /** Update-with-start: the caller's answer waits for the update (cleanups, board delete). */
  updateWithStart: boolean;
  steps: ShapeStep[];
  /** For the report: counts read from the history. */
  counts: { localActivities: number; activities: number; updates: number; children: number; workflowTasks: number };
}

/** "2 local, 1 activity, 1 update, eager" */
export function describeShape(s: WorkflowShape): string {
  const c = s.counts;
  const parts = [`${c.localActivities} local activit${c.localActivities === 1 ? 'y' : 'ies'}`];
  if (c.activities) parts.push(`${c.activities} activit${c.activities === 1 ? 'y' : 'ies'}`);
  if (c.updates) parts.push(`${c.updates} update${c.updates === 1 ? '' : 's'} (with start)`);
  const lanes = s.steps.find((x) => x.kind === 'children');
  if (c.children)
    parts.push(
      `${c.children} child workflow${c.children === 1 ? '' : 's'}${lanes?.kind === 'children' ? `, ${lanes.lanes} at a time` : ''}`,
    );
  parts.push(`${c.workflowTasks} workflow task${c.workflowTasks === 1 ? '' : 's'}`);
  parts.push(s.eager ? 'eager' : 'polled');
  return parts.join(', ');
}
