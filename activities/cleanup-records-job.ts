/**
 * One cleanup job's database steps, as local activities: prepare (barrier → snapshot → mutate),
 * record its state, finish or abandon. Apart from the bulk steps (cleanup-records-bulk.ts)
 * because every job runs these, alone or as a member of a cascade, a board delete or a batch.
 */
import { Context } from '@temporalio/activity';
import { abandonInventory } from '../db/abandon';
import { reserveEndedBorrows } from '../db/borrow-follow-up';
import { beginAttempt, findJob, finishJobRows, type CleanupJobRow, recordJobState } from '../db/cleanup-jobs';
import { prepareCleanup, type PrepareRequest } from '../db/cleanup-prepare';
import { snapshotWorktrees } from '../db/cleanup-snapshot';
import { environmentOfTask } from '../db/environments';
import { inTransaction } from '../db/pool';
import type { ContinuedJob } from '../domain/cleanup-continuation';
import type { CleanupErrorClass, CleanupJobState, CleanupProgress } from '../domain/cleanup';
import {
  emptyReport,
  inventoryOutcomes,
  type CancelledBy,
  type CleanupReport,
  type CleanupSnapshot,
  type SnapshotWorktree,
} from '../domain/cleanup-snapshot';
import type { ActivityDeps } from '../executors/support/deps';
import { typedFailure } from '../executors/support/failures';
import { startFollowUps } from '../executors/support/follow-up-starts';

/** Follow-up jobs reserved in a committed transaction: started now, or by the consistency check if this start is lost. */
export function reservedFollowUpStarter({ config, logger }: Pick<ActivityDeps, 'config' | 'logger'>) {
  return (jobs: ContinuedJob[]) =>
    startFollowUps(Context.current().client, config, jobs, (job, err) =>
      logger.warn(
        { err, operationId: job.operationId, taskId: job.taskId },
        'follow-up cleanup not started; the consistency check starts it',
      ),
    );
}

export function cleanupJobRecordActivities({ pool, config, logger }: ActivityDeps) {
  /** The structured line an operator greps for: a job ended by someone before it finished (paths stay in the row's report). */
  const logEnded = (operationId: string, taskId: string, report: CleanupReport) =>
    logger.info(
      {
        operationId,
        taskId,
        action: report.ended?.action,
        by: report.ended?.by,
        abandonedWorktrees: report.abandoned?.worktrees.length ?? 0,
      },
      'cleanup job ended by request',
    );

  const startReserved = reservedFollowUpStarter({ config, logger });

  return {
    /** What a delete would remove, read before any change (the dirty-worktree refusal happens first). */
    async previewWorktrees(taskId: string): Promise<{ hostId: string | null; worktrees: SnapshotWorktree[] }> {
      const env = await environmentOfTask(pool, taskId);
      return env
        ? { hostId: env.host_id, worktrees: await snapshotWorktrees(pool, env) }
        : { hostId: null, worktrees: [] };
    },

    async prepareCleanup(req: PrepareRequest): Promise<CleanupSnapshot> {
      const outcome = await inTransaction(pool, (client) => prepareCleanup(client, req));
      if (outcome.kind === 'refused') throw typedFailure(outcome.code);
      await startReserved(outcome.followUps);
      return outcome.snapshot;
    },

    /** A prepared job's snapshot and the attempts it has made so far. */
    async loadPreparedJob(operationId: string): Promise<{ snapshot: CleanupSnapshot; attempts: number }> {
      const job = await findJob(pool, operationId);
      if (!job || Array.isArray(job.snapshot)) throw typedFailure('not_found');
      return { snapshot: job.snapshot, attempts: job.attempts };
    },

    async loadSnapshot(operationId: string): Promise<CleanupSnapshot> {
      const job = await findJob(pool, operationId);
      if (!job || Array.isArray(job.snapshot)) throw typedFailure('not_found');
      return job.snapshot;
    },

    /** A job's progress as its row tells it (a member carried out by a run the cascade did not start). */
    async jobProgress(operationId: string): Promise<CleanupProgress | null> {
      const job = await findJob(pool, operationId);
      return job ? progressOfRow(job) : null;
    },

    /** The next attempt's time is taken here, not in the workflow: workflow code reads no clock. */
    async recordCleanupState(
      operationId: string,
      change: {
        state: CleanupJobState;
        attempts: number;
        nextAttemptInMs: number | null;
        lastError: CleanupErrorClass | null;
        report: CleanupReport;
      },
    ): Promise<void> {
      const nextAttemptAt =
        change.nextAttemptInMs === null ? null : new Date(Date.now() + change.nextAttemptInMs).toISOString();
      await recordJobState(pool, operationId, { ...change, nextAttemptAt });
    },

    /**
     * An attempt's start in one transaction: the job `running` with this attempt counted, and
     * which of the attempt's hosts are down (the attempt then fails at once, host_unavailable).
     */
    async beginCleanupAttempt(
      operationId: string,
      change: { attempts: number; lastError: CleanupErrorClass | null; report: CleanupReport },
      hostIds: string[],
    ): Promise<string[]> {
      return beginAttempt(pool, operationId, change, hostIds);
    },

    /**
     * Marks the rows after the files are handled, in one statement (db/cleanup-jobs.ts
     * finishJobRows): removed worktrees are `deleted`, kept ones stay known; an environment that
     * stays (archive, reset) is `released` so the next launch materializes it again.
     */
    async finishCleanup(input: {
      operationId: string;
      state: 'succeeded' | 'cancelled';
      snapshot: CleanupSnapshot;
      report: CleanupReport;
      attempts: number;
    }): Promise<void> {
      const rows = {
        operationId: input.operationId,
        taskId: input.snapshot.taskId,
        environmentId: input.snapshot.environmentId,
        ledger: inventoryOutcomes(input.snapshot, input.report, input.state),
        state: input.state,
        attempts: input.attempts,
        report: input.report,
      };
      // An environment this archive kept whose borrowers all went while it ran: its follow-up
      // (a cancelled job is an unarchive's, or an operator's), reserved in the finish's transaction.
      const keptBorrowed =
        input.state === 'succeeded'
          ? input.snapshot.borrowed.filter((b) => b.action === 'kept').map((b) => b.environmentId)
          : [];
      const followUps =
        keptBorrowed.length === 0
          ? await finishJobRows(pool, rows).then(() => [])
          : await inTransaction(pool, async (client) => {
              await finishJobRows(client, rows);
              return reserveEndedBorrows(client, keptBorrowed);
            });
      await startReserved(followUps);
      if (input.report.ended) logEnded(input.operationId, input.snapshot.taskId, input.report);
    },

    /**
     * The operator abandons the environment's workspace: in ONE transaction its inventory rows
     * become `abandoned`, the environment `released` (a generation on, so the next launch
     * materializes at a new folder on a new branch) and the job ends with the abandoned paths in
     * its report. No file is touched. A running agent of the environment refuses it (changing nothing).
     */
    async abandonEnvironment(input: {
      operationId: string;
      snapshot: CleanupSnapshot;
      report: CleanupReport;
      attempts: number;
      state: 'succeeded' | 'cancelled';
      by: CancelledBy;
    }): Promise<CleanupReport> {
      const report = await inTransaction(pool, async (client) => {
        const outcome = await abandonInventory(client, {
          taskId: input.snapshot.taskId,
          environmentId: input.snapshot.environmentId,
        });
        if (outcome.kind === 'refused') throw typedFailure(outcome.code);
        const ended: CleanupReport = {
          ...input.report,
          ended: { action: 'abandon', by: input.by },
          abandoned: outcome.abandoned,
        };
        await recordJobState(client, input.operationId, {
          state: input.state,
          attempts: input.attempts,
          nextAttemptAt: null,
          lastError: null,
          report: ended,
        });
        return ended;
      });
      logEnded(input.operationId, input.snapshot.taskId, report);
      return report;
    },
  };
}

/** A job's progress as its row tells it. */
export function progressOfRow(job: CleanupJobRow): CleanupProgress {
  const report =
    Array.isArray(job.report) || !('worktrees' in job.report) ? emptyReport() : (job.report as CleanupReport);
  return {
    operationId: job.operation_id,
    taskId: job.task_id,
    trigger: job.trigger,
    state: job.state,
    phase: job.state,
    attempts: job.attempts,
    nextAttemptAt: job.next_attempt_at?.toISOString() ?? null,
    lastError: job.last_error,
    report,
  };
}
