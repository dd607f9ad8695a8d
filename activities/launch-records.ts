/**
 * Database steps of a launch. Each is one short transaction, run as a local activity on the
 * worker that runs the workflow (no extra round trip through the task queue).
 */
import { randomUUID } from 'node:crypto';
import { admitLaunch as admitInTransaction } from '../db/admission';
import { markCreatingEnvironmentFailed, publishReady, type IncomingInventoryRow } from '../db/environments';
import { inTransaction } from '../db/pool';
import { deleteUnstartedSession, moveSessionState } from '../db/sessions';
import type { LaunchPlan, LaunchRequest, MaterializedSlot } from '../domain/launch';
import type { ActivityDeps } from './deps';
import { typedFailure } from './failures';

export function launchRecordActivities({ pool, config }: ActivityDeps) {
  return {
    /** Admission: elect, attach or refuse, in one transaction [R1]. */
    async admitLaunch(req: LaunchRequest): Promise<LaunchPlan> {
      const outcome = await inTransaction(pool, (client) => admitInTransaction(client, req, { newEnvironmentId: randomUUID() }, config.workspaceRoot));
      if (outcome.kind === 'refused') throw typedFailure(outcome.code);
      return outcome.plan;
    },

    /** The complete inventory and `ready`, in one transaction guarded by "still creating, still this materializer". */
    async publishInventory(plan: LaunchPlan, made: MaterializedSlot[]): Promise<void> {
      const rows: IncomingInventoryRow[] = plan.slots.map((slot) => {
        const m = made.find((x) => x.repositoryId === slot.repositoryId);
        return {
          id: randomUUID(),
          repositoryId: slot.repositoryId,
          branchSlug: slot.branchSlug,
          executorType: plan.executorType,
          identity: m ? { worktreeId: m.worktreeId, worktreePath: m.worktreePath, worktreeBranch: m.branch } : null,
          headCommit: m?.headCommit ?? null,
          position: slot.position,
          error: null,
        };
      });
      const published = await inTransaction(pool, (client) => publishReady(client, plan.environmentId, plan.sessionId, plan.workspacePath, rows));
      if (!published) throw typedFailure('workspace_reuse_unsafe');
    },

    /** After a failed materialization (everything it made already removed): the environment is failed, never materialized. */
    async recordMaterializationFailed(plan: LaunchPlan, reason: string): Promise<void> {
      await inTransaction(pool, async (client) => {
        await markCreatingEnvironmentFailed(client, plan.environmentId, plan.sessionId, reason);
        await moveSessionState(client, plan.sessionId, ['starting'], 'failed');
      });
    },

    /** A refused attach leaves no session row [R1.4]. */
    async discardRefusedSession(sessionId: string): Promise<void> {
      await deleteUnstartedSession(pool, sessionId);
    },

    async markSessionRunning(sessionId: string): Promise<void> {
      await moveSessionState(pool, sessionId, ['starting'], 'running');
    },
  };
}

export type LaunchRecordActivities = ReturnType<typeof launchRecordActivities>;
