/**
 * The `borrow_ended` follow-up [R6.5]: an environment its owner's archive kept for other tasks'
 * sessions is cleaned once no live task stands for it any more. The job is reserved, with its
 * snapshot, in the transaction of the change that ended the last borrow (an archive or delete of
 * the borrower, the delete of its session, or the owner's own archive finishing after them), so
 * it cannot be lost: its run is started after the commit, and a start that was lost is made by
 * the consistency check (activities/reconcile.ts), which continues any `pending` job with no run.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { decideBorrowedEnvironment } from '../domain/borrowed-environments';
import type { CleanupTrigger } from '../domain/cleanup';
import type { ContinuedJob } from '../domain/cleanup-continuation';
import { cleanupWorkflowId } from '../domain/workflow-ids';
import { activeJobOfTask, reserveJobUnlessTaken, saveSnapshot } from './cleanup-jobs';
import { lockedSuccessorCandidates, takeSnapshot } from './cleanup-snapshot';
import { inTransaction, type Db } from './pool';
import { deleteSession } from './sessions';

const FOLLOW_UP: CleanupTrigger = 'borrow_ended';

/** The environments of other tasks the task's sessions point at (read before a delete takes the sessions away). */
export async function environmentsBorrowedBy(db: Db, taskId: string): Promise<string[]> {
  const res = await db.query<{ environment_id: string }>(
    `SELECT DISTINCT s.environment_id FROM sessions s JOIN task_environments e ON e.id = s.environment_id WHERE s.task_id = $1 AND e.task_id <> $1`,
    [taskId],
  );
  return res.rows.map((r) => r.environment_id);
}

/**
 * For each environment whose owner is archived, that still holds a workspace, and that no job of
 * its owner is cleaning, and for which no live task stands any more: the owner's `borrow_ended`
 * job, `pending` with its snapshot. The environment row is locked first: an owner's archive and
 * every change that ends a borrow meet there, so whichever commits last sees the others (while
 * the owner's own job is active, its finish does this). Run in the caller's transaction.
 */
export async function reserveEndedBorrows(client: pg.PoolClient, environmentIds: string[]): Promise<ContinuedJob[]> {
  const jobs: ContinuedJob[] = [];
  for (const environmentId of [...new Set(environmentIds)].sort()) {
    const env = (
      await client.query<{ task_id: string }>(
        `SELECT task_id FROM task_environments WHERE id = $1 AND status IN ('ready', 'stopped', 'failed') FOR UPDATE`,
        [environmentId],
      )
    ).rows[0];
    if (!env) continue;
    const owner = (
      await client.query<{ archived_at: Date | null }>('SELECT archived_at FROM tasks WHERE id = $1', [env.task_id])
    ).rows[0];
    if (!owner?.archived_at || (await activeJobOfTask(client, env.task_id))) continue;
    if (
      decideBorrowedEnvironment(FOLLOW_UP, await lockedSuccessorCandidates(client, environmentId, env.task_id))
        .action === 'kept'
    )
      continue;
    const operationId = randomUUID();
    const job: ContinuedJob = {
      operationId,
      taskId: env.task_id,
      trigger: FOLLOW_UP,
      workflowId: cleanupWorkflowId(FOLLOW_UP, env.task_id, operationId),
    };
    // Taken: a job of the owner committed meanwhile (an operator's delete), which cleans the environment.
    if (!(await reserveJobUnlessTaken(client, job))) continue;
    await saveSnapshot(client, operationId, await takeSnapshot(client, env.task_id, FOLLOW_UP));
    await client.query(`UPDATE cleanup_jobs SET state = 'pending', updated_at = now() WHERE operation_id = $1`, [
      operationId,
    ]);
    jobs.push(job);
  }
  return jobs;
}

/** Forgets a session (its agent already stopped); if that ended the last borrow of an archived owner's environment, its follow-up job. */
export async function deleteSessionEndingBorrow(pool: pg.Pool, sessionId: string): Promise<ContinuedJob[]> {
  return inTransaction(pool, async (client) => {
    const borrowed = (
      await client.query<{ environment_id: string | null }>('SELECT environment_id FROM sessions WHERE id = $1', [
        sessionId,
      ])
    ).rows[0]?.environment_id;
    await deleteSession(client, sessionId);
    return borrowed ? reserveEndedBorrows(client, [borrowed]) : [];
  });
}
