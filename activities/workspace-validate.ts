/**
 * Attach is read-only validation [R1.2]: nothing creates, fetches, checks out, resets or writes.
 * Every check that fails refuses the launch before any agent process starts; what is checked is
 * the plan's executor's (executors/).
 */
import type { LaunchPlan } from '../domain/launch';
import { executorsOf } from '../executors/registry';
import type { ActivityDeps } from '../executors/support/deps';
import { withHeartbeat } from '../executors/support/heartbeat';

export function workspaceValidateActivities(deps: ActivityDeps) {
  const executors = executorsOf(deps);
  return {
    async validateWorkspace(plan: LaunchPlan): Promise<void> {
      await withHeartbeat('validate', () => executors.forPlan(plan).validate(plan));
    },
  };
}
