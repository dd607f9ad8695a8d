/** Database steps of cleanup, as local activities: prepare (barrier → snapshot → mutate), record state, finish. */
import { Context } from '@temporalio/activity';
import type pg from 'pg';
import { startFollowUps } from './follow-up-starts';
import { abandonInventory } from '../db/abandon';
import { boardMembers, deleteBoardDetaching, lockBoard } from '../db/board-delete';
import { environmentsBorrowedBy, reserveEndedBorrows } from '../db/borrow-follow-up';
import {
  cascadeMembers,
  dropBatchClaim,
  findJob,
  type CleanupJobRow,
  recordJobState,
  releaseFromBatch,
  reserveJob,
  saveSnapshot,
} from '../db/cleanup-jobs';
import { hostLiveness } from '../db/hosts';
import { workflowLiveness } from './workflow-liveness';
import { mutateTask, prepareCleanup } from '../db/cleanup-prepare';
import { snapshotWorktrees, takeSnapshot } from '../db/cleanup-snapshot';
import { environmentOfTask } from '../db/environments';
import { inTransaction, isUniqueViolation } from '../db/pool';
import type { ContinuedJob } from '../domain/cleanup-continuation';
import {
  batchHostOf,
  cascadeMembersToPrepare,
  emptyReport,
  inventoryOutcomes,
  type CancelledBy,
  type CleanupErrorClass,
  type CleanupJobState,
  type CleanupProgress,
  type CleanupReport,
  type CleanupSnapshot,
  type CleanupTrigger,
  type SnapshotWorktree,
} from '../domain/cleanup';
import type { ActivityDeps } from '../executors/support/deps';
import { typedFailure } from '../executors/support/failures';

export interface CascadeMember {
  taskId: string;
  operationId: string;
  workflowId: string;
}

interface CascadePreparation {
  trigger: CleanupTrigger;
  members: CascadeMember[];
  cascadeOperationId: string;
  /** A cascade delete's consent to discard, kept on each member's job (absent: none). */
  discardChanges?: boolean;
}

export interface CascadePrepared {
  prepared: CascadeMember[];
  /** Members left out, with why (an archive's already archived members). */
  skipped: { taskId: string; reason: 'already_archived' }[];
}

export type BoardPreparation = { kind: 'prepared'; members: CascadeMember[] } | { kind: 'changed' } | { kind: 'gone' };

export function cleanupRecordActivities({ pool, config, logger }: ActivityDeps) {
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

  /** Follow-up jobs reserved in a committed transaction: started now, or by the consistency check if this start is lost. */
  const startReserved = (jobs: ContinuedJob[]) =>
    startFollowUps(Context.current().client, config, jobs, (job, err) =>
      logger.warn(
        { err, operationId: job.operationId, taskId: job.taskId },
        'follow-up cleanup not started; the consistency check starts it',
      ),
    );

  return {
    /** What a delete would remove, read before any change (the dirty-worktree refusal happens first). */
    async previewWorktrees(taskId: string): Promise<{ hostId: string | null; worktrees: SnapshotWorktree[] }> {
      const env = await environmentOfTask(pool, taskId);
      return env
        ? { hostId: env.host_id, worktrees: await snapshotWorktrees(pool, env) }
        : { hostId: null, worktrees: [] };
    },

    async prepareCleanup(req: {
      operationId: string;
      taskId: string;
      trigger: CleanupTrigger;
      workflowId: string;
      discardChanges?: boolean;
      idleCutoff?: string;
    }): Promise<CleanupSnapshot> {
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

    /** Quick chats idle longer than `idleMs` as of `asOf` (the workflow's time, so a time-skipping run skips it too; older runs: the database's now). */
    async idleQuickChats(idleMs: number, asOf?: string): Promise<string[]> {
      const res = await pool.query<{ id: string }>(
        `SELECT t.id FROM tasks t WHERE t.quick_chat AND t.archived_at IS NULL
            AND t.last_activity_at < COALESCE($2::timestamptz, now()) - make_interval(secs => $1::double precision / 1000)
            AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.task_id = t.id AND s.state IN ('starting', 'running'))
          ORDER BY t.last_activity_at LIMIT 500`,
        [idleMs, asOf ?? null],
      );
      return res.rows.map((r) => r.id);
    },

    /** The tree under a task, deepest first (children before parents). */
    async taskTree(rootTaskId: string): Promise<string[]> {
      const res = await pool.query<{ id: string; depth: number }>(
        `WITH RECURSIVE tree(id, depth) AS (
           SELECT id, 0 FROM tasks WHERE id = $1
           UNION ALL SELECT t.id, tree.depth + 1 FROM tasks t JOIN tree ON t.parent_task_id = tree.id WHERE tree.depth < 64)
         SELECT id, depth FROM tree ORDER BY depth DESC, id`,
        [rootTaskId],
      );
      if (res.rows.length === 0) throw typedFailure('not_found');
      return res.rows.map((r) => r.id);
    },

    /** The members a cascade already prepared under its operation id, deepest first (none: not prepared yet). */
    /** A job's progress as its row tells it (a member carried out by a run the cascade did not start). */
    async jobProgress(operationId: string): Promise<CleanupProgress | null> {
      const job = await findJob(pool, operationId);
      return job ? progressOfRow(job) : null;
    },

    async cascadeMembers(cascadeOperationId: string): Promise<CascadeMember[]> {
      return cascadeMembers(pool, cascadeOperationId);
    },

    /** Cascade: every barrier first (one transaction), then snapshot and mutate deepest-first. */
    /**
     * A cascade archive leaves out the members already archived (their archive had its job); with
     * none left the whole tree was archived before, and it is refused as a plain archive of an
     * archived task is (task_archived). Read under the members' locks, so of two cascades of one
     * tree at once the second sees what the first prepared. Answers who was prepared and who not.
     */
    async prepareCascade(input: CascadePreparation): Promise<CascadePrepared> {
      const { prepared, skipped, followUps } = await inTransaction(pool, async (client) => {
        const outcome = await prepareMembers(client, input);
        return { ...outcome, followUps: await reserveEndedBorrows(client, outcome.borrowed) };
      });
      await startReserved(followUps);
      return { prepared, skipped };
    },

    /** The tasks a delete of the board would clean up (none with a job of its own active); null when the board is gone. */
    async boardMembers(boardId: string): Promise<string[] | null> {
      return boardMembers(pool, boardId);
    },

    /**
     * Board delete, in ONE transaction: lock the board and its tasks, reserve every member's job
     * (the barrier), snapshot, delete the tasks, delete the board; a task with a job of its own
     * active leaves the board instead. `changed`: a task joined the board since its members were
     * read (and checked for dirty worktrees), nothing was written. `gone`: the board was deleted
     * by another request. A re-run after this operation committed answers what it prepared.
     */
    async prepareBoardDelete(input: {
      boardId: string;
      members: CascadeMember[];
      cascadeOperationId: string;
    }): Promise<BoardPreparation> {
      const { outcome, followUps } = await inTransaction(
        pool,
        async (client): Promise<{ outcome: BoardPreparation; followUps: ContinuedJob[] }> => {
          const preparedBefore = await cascadeMembers(client, input.cascadeOperationId);
          if (preparedBefore.length > 0)
            return { outcome: { kind: 'prepared', members: preparedBefore }, followUps: [] };
          const board = await lockBoard(client, input.boardId);
          if (!board) {
            // Gone: perhaps by this very operation, an earlier try of this step that ran past its
            // timeout and committed while this one waited for the board's lock. Its members are
            // this operation's: read again (visible now), they are continued, never dropped.
            const preparedMeanwhile = await cascadeMembers(client, input.cascadeOperationId);
            return {
              outcome:
                preparedMeanwhile.length > 0 ? { kind: 'prepared', members: preparedMeanwhile } : { kind: 'gone' },
              followUps: [],
            };
          }
          const read = new Set(input.members.map((m) => m.taskId));
          if (board.free.some((taskId) => !read.has(taskId))) return { outcome: { kind: 'changed' }, followUps: [] };
          const members = input.members.filter((m) => board.free.includes(m.taskId));
          const { borrowed } = await prepareMembers(client, {
            trigger: 'board_delete',
            members,
            cascadeOperationId: input.cascadeOperationId,
          });
          await deleteBoardDetaching(client, input.boardId, board.busy);
          return { outcome: { kind: 'prepared', members }, followUps: await reserveEndedBorrows(client, borrowed) };
        },
      );
      await startReserved(followUps);
      return outcome;
    },

    /**
     * A bulk cleanup's batches: its pending jobs grouped by the host that can carry each out in
     * a batch (domain/cleanup.ts batchHostOf), hosts that are down left out. The jobs in no
     * batch get runs of their own.
     */
    async batchPlan(operationIds: string[]): Promise<{ hostId: string; operationIds: string[] }[]> {
      const res = await pool.query<{ operation_id: string; snapshot: CleanupSnapshot | [] }>(
        `SELECT operation_id, snapshot FROM cleanup_jobs WHERE operation_id = ANY($1::uuid[]) AND state = 'pending'`,
        [operationIds],
      );
      const byHost = new Map<string, string[]>();
      const pending = new Map(res.rows.map((r) => [r.operation_id, r.snapshot]));
      for (const id of operationIds) {
        const snapshot = pending.get(id);
        const host = snapshot && !Array.isArray(snapshot) ? batchHostOf(snapshot) : null;
        if (host) byHost.set(host, [...(byHost.get(host) ?? []), id]);
      }
      const plan: { hostId: string; operationIds: string[] }[] = [];
      for (const [hostId, ids] of byHost)
        if ((await hostLiveness(pool, hostId)) !== 'down') plan.push({ hostId, operationIds: ids });
      return plan;
    },

    /** A batch step that failed for good lets its jobs go: each waits for its own run. */
    async releaseBatch(input: { operationIds: string[]; batchWorkflowId: string }): Promise<void> {
      await releaseFromBatch(pool, input.operationIds, input.batchWorkflowId, { lastError: 'host_unavailable' });
    },

    /**
     * Whether a bulk cleanup's batch holds the job: `held` while the batch's workflow runs (the
     * job's own run waits), `ended` when the job ended (its progress, from the row), `free`
     * otherwise. The claim of a batch whose workflow closed is dropped here.
     */
    async batchHold(
      operationId: string,
    ): Promise<{ kind: 'free' } | { kind: 'held' } | { kind: 'ended'; progress: CleanupProgress }> {
      const job = await findJob(pool, operationId);
      if (!job || !job.batch_workflow_id) return { kind: 'free' };
      if (job.state === 'succeeded' || job.state === 'cancelled')
        return { kind: 'ended', progress: progressOfRow(job) };
      const liveness = await workflowLiveness(job.batch_workflow_id);
      if (liveness === 'running' || liveness === 'unknown') return { kind: 'held' };
      await dropBatchClaim(pool, operationId, job.batch_workflow_id);
      return { kind: 'free' };
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
     * Marks the rows after the files are handled, in one transaction: removed worktrees are
     * `deleted`, kept ones stay known; an environment that stays (archive, reset) is `released`
     * so the next launch materializes it again.
     */
    async finishCleanup(input: {
      operationId: string;
      state: 'succeeded' | 'cancelled';
      snapshot: CleanupSnapshot;
      report: CleanupReport;
      attempts: number;
    }): Promise<void> {
      const followUps = await inTransaction(pool, async (client) => {
        // The task's agents were stopped by the attempts; its sessions say so (a deleted task has none left).
        await client.query(
          `UPDATE sessions SET state = 'stopped', updated_at = now() WHERE task_id = $1 AND state IN ('starting', 'running')`,
          [input.snapshot.taskId],
        );
        const ledger = inventoryOutcomes(input.snapshot, input.report, input.state);
        // Removed worktrees are `deleted`. Rows a removed task's job took over (environment_id
        // NULL) stay in the ledger: a dirty one kept is `kept`, one a cancelled removal left
        // behind `abandoned`; never removed, by anyone, the orphan sweep included.
        for (const [status, rowIds] of Object.entries(ledger)) {
          if (rowIds.length === 0) continue;
          await client.query(
            `UPDATE environment_repos SET status = $2, updated_at = now()
              WHERE id = ANY($1::uuid[]) AND status IN ('active', 'retained') AND ($2 = 'deleted' OR environment_id IS NULL)`,
            [rowIds, status],
          );
        }
        const envId = input.snapshot.environmentId;
        if (envId)
          await client.query(
            `UPDATE task_environments SET status = 'released', updated_at = now() WHERE id = $1 AND status <> 'creating'`,
            [envId],
          );
        await recordJobState(client, input.operationId, {
          state: input.state,
          attempts: input.attempts,
          nextAttemptAt: null,
          lastError: null,
          report: input.report,
        });
        // An environment this archive kept whose borrowers all went while it ran: its follow-up (a cancelled job is an unarchive's, or an operator's).
        return input.state === 'succeeded'
          ? reserveEndedBorrows(
              client,
              input.snapshot.borrowed.filter((b) => b.action === 'kept').map((b) => b.environmentId),
            )
          : [];
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

/**
 * The preparation a cascade and a board delete share, inside their transaction: lock the member
 * rows, reserve every member's job (the barrier), THEN per member in order: snapshot, mutate.
 */
/** Returns the environments of other tasks the members borrowed (read before their sessions go): the callers reserve their follow-ups. */
async function prepareMembers(
  client: pg.PoolClient,
  input: CascadePreparation,
): Promise<{ borrowed: string[]; prepared: CascadeMember[]; skipped: CascadePrepared['skipped'] }> {
  const ids = input.members.map((m) => m.taskId);
  const locked = await client.query<{ id: string; archived: boolean }>(
    'SELECT id, archived_at IS NOT NULL AS archived FROM tasks WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE',
    [ids],
  );
  if (locked.rowCount !== ids.length) throw typedFailure('not_found');
  const { prepared: members, skipped } = cascadeMembersToPrepare(
    input.trigger,
    input.members,
    new Set(locked.rows.filter((r) => r.archived).map((r) => r.id)),
  );
  if (members.length === 0 && skipped.length > 0) throw typedFailure('task_archived');
  for (const [position, m] of members.entries()) {
    try {
      await reserveJob(client, {
        operationId: m.operationId,
        taskId: m.taskId,
        trigger: input.trigger,
        workflowId: m.workflowId,
        cascade: { operationId: input.cascadeOperationId, position },
        discardChanges: input.discardChanges ?? false,
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw typedFailure('task_cleanup_in_progress');
      throw err;
    }
  }
  // Each member's snapshot, then its mutation, member by member: a member deleted before the
  // next one's snapshot no longer borrows that one's environment. Snapshots first and mutations
  // after handed a parent's workspace to its inherit_parent child, deleted a moment later with
  // the environment's rows: its worktrees were left on disk with no job to remove them.
  const borrowed: string[] = [];
  for (const m of members) {
    await saveSnapshot(client, m.operationId, await takeSnapshot(client, m.taskId, input.trigger));
    borrowed.push(...(await environmentsBorrowedBy(client, m.taskId)));
    await mutateTask(client, m.taskId, input.trigger);
  }
  await client.query(
    `UPDATE cleanup_jobs SET state = 'pending', updated_at = now() WHERE operation_id = ANY($1::uuid[])`,
    [members.map((m) => m.operationId)],
  );
  return { borrowed, prepared: members, skipped };
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
