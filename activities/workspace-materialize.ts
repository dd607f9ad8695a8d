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
import { giveBackRestores, restoreSavedWork } from './work-restore';
import { outageOf } from '../domain/outage';
import { materializationFailure } from '../executors/support/failures';
import { ApplicationFailure } from '@temporalio/common';
import { prepareNewWorkspace, type Prepared } from './workspace-preparation';
import { giveNewWorkspace } from '../executors/host/agent-identity';
import { newWorkspaceUid } from '../executors/host/agent-uid';
import { publishedPlan } from '../domain/launch';

export function workspaceMaterializeActivities(deps: ActivityDeps) {
  const executors = executorsOf(deps);
  /** The exact undo: what the launch made goes, and the saved work it took waits for the next one. */
  const undo = async (plan: LaunchPlan, made: MaterializedSlot[]) => {
    await executors.forPlan(plan).discard(plan, made);
    await giveBackRestores(deps, plan, made);
  };
  return {
    async materializeWorkspace(plan: LaunchPlan): Promise<MaterializedSlot[]> {
      if (!workspaceStepsOf(plan).createWorktrees) return []; // the source checkout is the workspace: nothing to create
      return withHeartbeat('materialize', async () => {
        const executor = executors.forPlan(plan);
        const made = await executor.materialize(plan);
        // Made ready first (copied files, the setup), then the work a release saved comes back into
        // the new worktrees, over what the setup made, before the agent starts [R6.10].
        let prepared: Prepared;
        try {
          prepared = await prepareNewWorkspace(deps, plan, made);
        } catch (err) {
          if (outageOf(err) === 'database') throw err;
          // A setup that failed with `refuse`, or a preparation that could not be done: undone whole.
          deps.logger.warn(
            { err, sessionId: plan.sessionId },
            'the new workspace could not be made ready; undoing the launch',
          );
          await undo(plan, made);
          throw err instanceof ApplicationFailure && err.type === 'workspace_setup_failed'
            ? err
            : materializationFailure(err);
        }
        try {
          await restoreSavedWork(deps, executor, plan, made, prepared.wrote);
          // A setup gave the workspace to its agents' uid already: what the restore wrote is given too.
          if (prepared.setupRan)
            await giveNewWorkspace(deps, publishedPlan(plan, made), await newWorkspaceUid(deps, plan), true);
        } catch (err) {
          // The database went away: the retried step adopts what this one made, as a materialization's does.
          if (outageOf(err) === 'database') throw err;
          // A restore that failed (its worktree put back clean, or kept if it cannot be): the
          // launch fails whole, like any failed first launch; the saved work waits for the next.
          deps.logger.warn({ err, sessionId: plan.sessionId }, 'saved work could not be restored; undoing the launch');
          await undo(plan, made);
          throw materializationFailure(err);
        }
        return made;
      });
    },

    async discardMaterialization(plan: LaunchPlan, made: MaterializedSlot[]): Promise<void> {
      await withHeartbeat('discard', () => undo(plan, made));
    },
  };
}
