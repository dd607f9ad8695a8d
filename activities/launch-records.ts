/**
 * Database steps of a launch. Each is one short transaction, run as a local activity on the
 * worker that runs the workflow (no extra round trip through the task queue).
 */
import { randomUUID } from 'node:crypto';
import { admitLaunch as admitInTransaction, admitResume as admitResumeInTransaction } from '../db/admission';
import type { AdmissionOutcome } from '../db/admission-election';
import { cleanupBarrierStands } from '../db/barrier';
import {
  canonicalEnvironmentOf,
  markCreatingEnvironmentFailed,
  publishReady,
  unpublishFailedMaterialization,
} from '../db/environments';
import { markStoppedUnlessRunning } from '../db/executions';
import { inventoryPublishedBy } from '../db/inventory';
import { inTransaction } from '../db/pool';
import { deleteFailedSession, findSession, markSessionStarted, moveSessionState, sessionState } from '../db/sessions';
import type { LaunchPlan, LaunchRequest, MaterializedSlot } from '../domain/launch';
import type { SessionState } from '../domain/session';
import { sessionRunWorkflowId } from '../domain/workflow-ids';
import type { Db } from '../db/pool';
import type { ActivityDeps } from '../executors/support/deps';
import { workflowLiveness } from './workflow-liveness';
import { typedFailure } from '../executors/support/failures';
import { inventoryRowsOf, rebindEnvironment } from './launch-rebind';

/** Whether the run that last admitted a session (its launch or a resume) still runs, asked through the activity's client; null when Temporal cannot say. */
async function sessionRunRunning(db: Db, sessionId: string): Promise<boolean | null> {
  const run =
    (await db.query<{ admitted_run: string | null }>('SELECT admitted_run FROM sessions WHERE id = $1', [sessionId]))
      .rows[0]?.admitted_run ?? null;
  const liveness = await workflowLiveness(sessionRunWorkflowId(sessionId, run));
  return liveness === 'unknown' ? null : liveness === 'running';
}

/** What a resume restarts: the session's own argv and variables, and the agents it stops first. */
export interface ResumedAgent {
  command: string[];
  env: Record<string, string>;
  runningExecutions: { executionId: string; hostId: string }[];
}

export function launchRecordActivities({ pool, config, logger }: ActivityDeps) {
  /** The session's agents that run, by execution and host. */
  async function runningExecutions(sessionId: string): Promise<{ executionId: string; hostId: string }[]> {
    const res = await pool.query<{ id: string; host_id: string }>(
      `SELECT id, host_id FROM executions WHERE session_id = $1 AND status = 'running'`,
      [sessionId],
    );
    return res.rows.map((r) => ({ executionId: r.id, hostId: r.host_id }));
  }

  /**
   * A materializer whose launch workflow is no longer running (terminated, timed out) is gone
   * even though its session row still says `starting`: settle that before admission reads it.
   * Any doubt (Temporal unreachable) leaves it alone: it is then treated as alive.
   */
  async function settleAbandonedMaterializer(taskId: string): Promise<boolean> {
    const env = await canonicalEnvironmentOf(pool, taskId);
    const materializer = env?.status === 'creating' ? env.materializer_session_id : null;
    if (!materializer || (await sessionState(pool, materializer)) !== 'starting') return false;
    const running = await sessionRunRunning(pool, materializer);
    if (running === null) return false;
    if (!running && (await moveSessionState(pool, materializer, ['starting'], 'failed'))) {
      logger.warn(
        { sessionId: materializer, environmentId: env!.id },
        'materializer launch is no longer running; its session is failed',
      );
      return true;
    }
    return false;
  }

  /**
   * Admission, with an abandoned materializer settled first where it matters. A materializer
   * still `starting` makes every mode refuse `workspace_preparing` (domain/admission.ts), and only
   * then can settling change the answer: so the common admission pays no extra reads, and a
   * refusal `workspace_preparing` is answered only after the materializer was asked about and,
   * if it was abandoned, admission ran again on the settled records.
   */
  async function admitSettled(
    taskId: () => Promise<string | null>,
    admit: () => Promise<AdmissionOutcome>,
  ): Promise<AdmissionOutcome> {
    const outcome = await admit();
    if (outcome.kind !== 'refused' || outcome.code !== 'workspace_preparing') return outcome;
    const task = await taskId();
    return task && (await settleAbandonedMaterializer(task)) ? admit() : outcome;
  }

  /** A new environment's id, in case admission makes one. */
  const newIds = () => ({ newEnvironmentId: randomUUID() });

  return {
    /** Admission: elect, attach or refuse, in one transaction [R1]. */
    async admitLaunch(req: LaunchRequest): Promise<LaunchPlan> {
      const outcome = await admitSettled(
        async () => req.taskId,
        () =>
          inTransaction(pool, (client) =>
            admitInTransaction(client, req, newIds(), config.workspaceRoot, config.taskDiskQuotaBytes),
          ),
      );
      if (outcome.kind === 'refused') throw typedFailure(outcome.code);
      return outcome.plan;
    },

    /** The complete inventory and `ready`, in one transaction guarded by "still creating, still this materializer". */
    async publishInventory(plan: LaunchPlan, made: MaterializedSlot[]): Promise<void> {
      const rows = inventoryRowsOf(plan, made);
      const published = await inTransaction(pool, async (client) => {
        // A cleanup that reserved its barrier meanwhile never misses a worktree: this launch undoes its own.
        if (await cleanupBarrierStands(client, [plan.taskId, plan.environmentTaskId])) return 'barrier' as const;
        return publishReady(client, plan.environmentId, plan.sessionId, plan.workspacePath, plan.taskFolder, rows);
      });
      if (published === 'barrier') throw typedFailure('task_cleanup_in_progress');
      if (!published) throw typedFailure('workspace_reuse_unsafe');
    },

    /** An executor transition's rebinding of the environment (activities/launch-rebind.ts). */
    rebindEnvironment: (plan: LaunchPlan, made: MaterializedSlot[]) => rebindEnvironment(pool, plan, made),

    /**
     * What a first launch's own host step made and published, read from the records (the step
     * succeeded, then the launch was cancelled): only while this session is still the
     * environment's materializer. Removed by the same careful undo (never --force, a branch only
     * while it is at the recorded commit), and only what the step recorded it made itself: a kept
     * branch it checked out again, or a worktree it adopted, is not the undo's.
     */
    async publishedBy(plan: LaunchPlan): Promise<MaterializedSlot[]> {
      const rows = await inventoryPublishedBy(pool, plan.environmentId, plan.sessionId);
      return rows.map((r) => ({
        repositoryId: r.repository_id,
        worktreePath: r.worktree_path!,
        worktreeId: r.worktree_id,
        branch: r.worktree_branch!,
        headCommit: r.head_commit ?? '',
        createdBranch: r.made_branch === true,
        createdWorktree: r.made_worktree === true,
      }));
    },

    /**
     * A refused or failed launch leaves no session row [R1.4] (its agent already stopped; one
     * that could not be stopped keeps its row). A resume's session existed before: it reads
     * `failed`. Absent in runs recorded before it, `firstLaunch` is then true.
     */
    async settleRefusedSession(
      sessionId: string,
      opts: { firstLaunch: boolean } = { firstLaunch: true },
    ): Promise<void> {
      if (opts.firstLaunch) await deleteFailedSession(pool, sessionId);
      await moveSessionState(pool, sessionId, ['starting', 'running'], 'failed');
    },

    /**
     * After a failed materialization (everything it made already removed by its host step, its
     * agent stopped): the environment is failed and never materialized (re-electable), whether the
     * failure came before or after the publication. A first launch leaves no session row [R1.4]
     * (the workflow history keeps the cause); a resume's session, which existed before, reads
     * `failed`. Absent in runs recorded before it, `firstLaunch` is then true.
     */
    async recordMaterializationFailed(
      plan: LaunchPlan,
      reason: string,
      opts: { firstLaunch: boolean } = { firstLaunch: true },
    ): Promise<void> {
      await inTransaction(pool, async (client) => {
        if (!(await markCreatingEnvironmentFailed(client, plan.environmentId, plan.sessionId, reason))) {
          await unpublishFailedMaterialization(client, plan.environmentId, plan.sessionId, reason);
        }
        if (opts.firstLaunch) await deleteFailedSession(client, plan.sessionId);
        else await moveSessionState(client, plan.sessionId, ['starting'], 'failed');
      });
    },

    /** A resume's admission: the launch's table for the existing session, in one transaction [R1, R2]. */
    async admitResume(req: {
      sessionId: string;
      runId: string;
      hostId: string;
    }): Promise<{ plan: LaunchPlan; session: ResumedAgent }> {
      // The session's argv and variables (admission never changes them) are read beside the admission.
      const sessionRead = findSession(pool, req.sessionId);
      const outcome = await admitSettled(
        async () => (await sessionRead)?.task_id ?? null,
        () =>
          inTransaction(pool, (client) =>
            admitResumeInTransaction(client, req, newIds(), config.workspaceRoot, config.taskDiskQuotaBytes),
          ),
      ).catch(async (err: unknown) => {
        await sessionRead.catch(() => null);
        throw err;
      });
      const session = await sessionRead;
      if (!session) throw typedFailure('not_found');
      if (outcome.kind === 'refused') throw typedFailure(outcome.code);
      return {
        plan: outcome.plan,
        session: {
          command: session.command ?? [],
          env: session.agent_env ?? {},
          runningExecutions: await runningExecutions(req.sessionId),
        },
      };
    },

    runningExecutions,

    async markSessionStopped(sessionId: string): Promise<void> {
      await moveSessionState(pool, sessionId, ['starting', 'running', 'exited'], 'stopped');
    },

    /** The session marked stopped if none of its agents runs; else the ones that run, nothing moved. */
    async markSessionStoppedUnlessRunning(sessionId: string): Promise<{ executionId: string; hostId: string }[]> {
      const running = await markStoppedUnlessRunning(pool, sessionId);
      return running.map((r) => ({ executionId: r.id, hostId: r.host_id }));
    },

    async markSessionRunning(
      sessionId: string,
      from: SessionState[] = ['starting'],
      resumeRun: string | null = null,
    ): Promise<void> {
      await markSessionStarted(pool, sessionId, from, resumeRun);
    },
  };
}
