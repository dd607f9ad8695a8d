/**
 * The cleanup preparation transaction [R6.2]: lock the task row, reserve the job (the barrier),
 * THEN snapshot the inventory into the job, THEN mutate the task. Files are touched only after.
 */
import type pg from 'pg';
import { refusedWhileRunning, removesTask, takesTaskAway, type CleanupTrigger } from '../domain/cleanup';
import type { CleanupSnapshot } from '../domain/cleanup-snapshot';
import type { ContinuedJob } from '../domain/cleanup-continuation';
import type { RefusalCode } from '../domain/errors';
import { decideIdle } from '../domain/idle';
import { environmentsBorrowedBy, reserveEndedBorrows } from './borrow-follow-up';
import { findJob, reserveJobUnlessTaken, saveSnapshot } from './cleanup-jobs';
import { takeSnapshot } from './cleanup-snapshot';
import { idleCandidates } from './idle';
import { agentRunningInEnvironmentOf } from './sessions';

/** `followUps`: the `borrow_ended` jobs this change reserved (its task was the last borrower of an archived owner's environment), to start once committed. */
export type PrepareOutcome =
  | { kind: 'prepared'; snapshot: CleanupSnapshot; followUps: ContinuedJob[] }
  | { kind: 'refused'; code: RefusalCode | 'not_found' };

export interface PrepareRequest {
  operationId: string;
  taskId: string;
  trigger: CleanupTrigger;
  workflowId: string;
  /** A delete's consent to discard uncommitted work: kept on the job for its later runs. */
  discardChanges?: boolean;
  /** An idle release's cutoff: the environment is released only if still idle since then (ISO-8601). */
  idleCutoff?: string;
}

/**
 * Runs inside a transaction. Reset and archive refuse what would lose a running agent's place.
 * Idempotent by operation id: a re-run after the first run committed (the engine or the worker
 * died before the workflow recorded it) finds its own job and continues with that snapshot,
 * rather than refusing the archived or deleted task it made itself.
 */
export async function prepareCleanup(client: pg.PoolClient, req: PrepareRequest): Promise<PrepareOutcome> {
  const own = await preparedJob(client, req);
  if (own) return own;
  const task = (
    await client.query<{ id: string; archived_at: Date | null }>(
      'SELECT id, archived_at FROM tasks WHERE id = $1 FOR UPDATE',
      [req.taskId],
    )
  ).rows[0];
  if (!task) return { kind: 'refused', code: 'not_found' };
  if ((req.trigger === 'archive' || req.trigger === 'quick_chat_expiry') && task.archived_at)
    return { kind: 'refused', code: 'task_archived' };
  if (refusedWhileRunning(req.trigger) && (await agentRunningInEnvironmentOf(client, req.taskId)))
    return { kind: 'refused', code: 'session_running' };
  if (req.trigger === 'idle_release') {
    const notIdle = await idleNoLonger(client, req.taskId, req.idleCutoff);
    if (notIdle) return { kind: 'refused', code: notIdle };
  }

  if (!(await reserveJobUnlessTaken(client, req))) {
    // A concurrent run of the same preparation committed first: that job is this one.
    return (await preparedJob(client, req)) ?? { kind: 'refused', code: 'task_cleanup_in_progress' };
  }

  const snapshot = await takeSnapshot(client, req.taskId, req.trigger);
  await saveSnapshot(client, req.operationId, snapshot);
  const borrowed = takesTaskAway(req.trigger) ? await environmentsBorrowedBy(client, req.taskId) : [];
  await mutateTask(client, req.taskId, req.trigger);
  await client.query(`UPDATE cleanup_jobs SET state = 'pending', updated_at = now() WHERE operation_id = $1`, [
    req.operationId,
  ]);
  return { kind: 'prepared', snapshot, followUps: await reserveEndedBorrows(client, borrowed) };
}

/**
 * An idle release's second look, under the task's lock: the judgement was made a moment ago
 * outside it, and a launch, a pin or a session of a sharing task since then keeps the workspace.
 * No cutoff is no proof of idleness: refused.
 */
async function idleNoLonger(
  client: pg.PoolClient,
  taskId: string,
  cutoff: string | undefined,
): Promise<RefusalCode | null> {
  if (!cutoff) return 'task_not_idle';
  const facts = (await idleCandidates(client, { ownerTaskId: taskId }))[0];
  if (!facts) return 'task_not_idle';
  const decision = decideIdle(facts, cutoff);
  if (decision.release) return null;
  return decision.reason === 'running' || decision.reason === 'shared_task_running'
    ? 'session_running'
    : 'task_not_idle';
}

/** The job this operation already prepared, if it did (one transaction made it whole: it has its snapshot). */
async function preparedJob(client: pg.PoolClient, req: PrepareRequest): Promise<PrepareOutcome | null> {
  const job = await findJob(client, req.operationId);
  if (!job) return null;
  // An operation id names one job: another task or trigger under it is not this preparation.
  if (job.task_id !== req.taskId || job.trigger !== req.trigger || Array.isArray(job.snapshot))
    return { kind: 'refused', code: 'task_cleanup_in_progress' };
  // Its follow-ups, if any, were reserved with it: started by the first run, or by the consistency check.
  return { kind: 'prepared', snapshot: job.snapshot, followUps: [] };
}

/** The task's own change: archived or deleted (a reset changes only the environment, at the end). */
export async function mutateTask(client: pg.PoolClient, taskId: string, trigger: CleanupTrigger): Promise<void> {
  if (removesTask(trigger)) {
    // Children that inherited this task's workspace stand on their own from now on (one of them
    // may just have been handed the environment).
    await client.query(
      `UPDATE tasks SET workspace_mode = 'new_workspace', parent_task_id = NULL WHERE parent_task_id = $1 AND workspace_mode = 'inherit_parent'`,
      [taskId],
    );
    // One ledger: the inventory rows outlive the task, taken over by the removal's job (reserved
    // above in this transaction), which marks each `deleted`, `kept` (dirty) or `abandoned` when
    // it ends. A handed-over environment is the borrower's now and keeps its rows.
    await client.query(
      `UPDATE environment_repos er SET environment_id = NULL, cleanup_operation_id = j.operation_id, updated_at = now()
         FROM task_environments te, cleanup_jobs j
        WHERE er.environment_id = te.id AND te.task_id = $1 AND er.status IN ('active', 'retained', 'abandoned')
          AND j.task_id = $1 AND j.state = 'prepared'`,
      [taskId],
    );
    // Task, sessions, executions and (unless handed over) the environment go; the job keeps the snapshot.
    await client.query('DELETE FROM tasks WHERE id = $1', [taskId]);
    return;
  }
  // Sessions are marked stopped when their processes are (the cleanup's first step), not here.
  if (trigger === 'archive') await client.query('UPDATE tasks SET archived_at = now() WHERE id = $1', [taskId]);
}
