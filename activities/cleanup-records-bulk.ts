/**
 * The database steps of cleanups over many tasks, as local activities: which tasks (a quick-chat
 * expiry's, a task tree, a board's), every member's barrier and snapshot in one transaction, and
 * a bulk cleanup's batches. Apart from the steps of one job (cleanup-records-job.ts) because they
 * concern many tasks at once; a job's own run only asks here whether a batch holds it.
 */
import type pg from 'pg';
import { progressOfRow, reservedFollowUpStarter } from './cleanup-records-job';
import { boardMembers, deleteBoardDetaching, lockBoard } from '../db/board-delete';
import { environmentsBorrowedBy, reserveEndedBorrows } from '../db/borrow-follow-up';
import {
  cascadeMembers,
  dropBatchClaim,
  findJob,
  releaseFromBatch,
  reserveJob,
  saveSnapshot,
} from '../db/cleanup-jobs';
import { hostLiveness } from '../db/hosts';
import { workflowLiveness } from './workflow-liveness';
import { mutateTask } from '../db/cleanup-prepare';
import { takeSnapshot } from '../db/cleanup-snapshot';
import { inTransaction, isUniqueViolation } from '../db/pool';
import type { ContinuedJob } from '../domain/cleanup-continuation';
import { cascadeMembersToPrepare, type CleanupProgress, type CleanupTrigger } from '../domain/cleanup';
import { batchHostOf, type CleanupSnapshot } from '../domain/cleanup-snapshot';
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

export function cleanupBulkRecordActivities({ pool, config, logger }: ActivityDeps) {
  const startReserved = reservedFollowUpStarter({ config, logger });

  return {
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
     * a batch (domain/cleanup-snapshot.ts batchHostOf), hosts that are down left out. The jobs in no
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
