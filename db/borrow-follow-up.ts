/**
 * The `borrow_ended` follow-up [R6.5]: an environment its owner's archive kept for other tasks'
 * sessions is cleaned once no live task stands for it any more. The job is reserved, with its
 * snapshot, in the transaction of the change that ended the last borrow (an archive or delete of
 * the borrower, or the owner's own archive finishing after them; never the delete of a session,
 * which removes nothing [R6]), so
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
import type { Db } from './pool';

const FOLLOW_UP: CleanupTrigger = 'borrow_ended';

/**
 * The environments of other tasks the task works in: the ones its sessions point at, and the one
 * its workspace mode names (its group's, or its parent's up the chain of inherit_parent tasks),
 * which it stands for even with no session left (a session delete is never a cleanup trigger, so
 * the borrower's own archive or delete is what ends the borrow). Read before a delete takes them away.
 */
export async function environmentsBorrowedBy(db: Db, taskId: string): Promise<string[]> {
  const res = await db.query<{ environment_id: string }>(
    `WITH RECURSIVE up (id, workspace_mode, parent_task_id, depth) AS (
       SELECT id, workspace_mode, parent_task_id, 0 FROM tasks WHERE id = $1
       UNION ALL
       SELECT t.id, t.workspace_mode, t.parent_task_id, up.depth + 1 FROM tasks t JOIN up ON t.id = up.parent_task_id
        WHERE up.workspace_mode = 'inherit_parent' AND up.depth < 32),
     named AS (
       SELECT s.environment_id FROM sessions s WHERE s.task_id = $1
       UNION SELECT g.environment_id FROM tasks t JOIN workspace_groups g ON g.id = t.group_id WHERE t.id = $1
       UNION SELECT e.id FROM up JOIN task_environments e ON e.task_id = up.id WHERE up.depth > 0)
     SELECT DISTINCT n.environment_id FROM named n JOIN task_environments e ON e.id = n.environment_id WHERE e.task_id <> $1`,
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
