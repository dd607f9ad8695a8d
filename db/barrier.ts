import type { Db } from './pool';

/**
 * Whether a cleanup barrier stands for any of the tasks. The tasks' rows are share-locked, so
 * this check and what follows it in the same transaction cannot interleave with a cleanup's
 * preparation (which holds the row for update): a step either completes before the barrier
 * (and the snapshot sees it) or sees the barrier.
 */
export async function cleanupBarrierStands(db: Db, taskIds: string[]): Promise<boolean> {
  const ids = [...new Set(taskIds)];
  // A cleanup that already finished leaves the task archived or gone: that bars the launch too.
  const live = await db.query(
    'SELECT id FROM tasks WHERE id = ANY($1::uuid[]) AND archived_at IS NULL ORDER BY id FOR SHARE',
    [ids],
  );
  if (live.rowCount !== ids.length) return true;
  const res = await db.query(
    `SELECT 1 FROM cleanup_jobs WHERE task_id = ANY($1::uuid[]) AND state NOT IN ('succeeded', 'cancelled') LIMIT 1`,
    [ids],
  );
  return (res.rowCount ?? 0) > 0;
}
