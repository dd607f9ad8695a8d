/**
 * Materialization and its exact undo, on the host that holds the workspace (or talks to its
 * target): whether a plan creates anything is its own decision (domain/launch-plan.ts), how is
 * its executor's (executors/).
 */
import type { LaunchPlan, MaterializedSlot } from '../domain/launch';
import { workspaceStepsOf } from '../domain/launch-plan';
import { executorsOf } from '../executors/registry';
import type { ActivityDeps } from '../executors/support/deps';
import { withHeartbeat } from '../executors/support/heartbeat';

export function workspaceMaterializeActivities(deps: ActivityDeps) {
  const executors = executorsOf(deps);
  return {
    async materializeWorkspace(plan: LaunchPlan): Promise<MaterializedSlot[]> {
      if (!workspaceStepsOf(plan).createWorktrees) return []; // the source checkout is the workspace: nothing to create
      return withHeartbeat('materialize', () => executors.forPlan(plan).materialize(plan));
    },

    async discardMaterialization(plan: LaunchPlan, made: MaterializedSlot[]): Promise<void> {
      await withHeartbeat('discard', () => executors.forPlan(plan).discard(plan, made));
    },
  };
}
