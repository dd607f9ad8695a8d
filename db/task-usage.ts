/**
 * What each task's agents use together, as its host's worker last read its control
 * group: written by the worker's limits check (worker/disk-quota.ts), read by the task and session
 * views and the metrics.
 */
import type { Db } from './pool';

export interface TaskUsage {
  memoryBytes: number;
  pids: number;
  measuredAt: string;
}

/** This host's figures, one per task whose agents run; the host's other rows (no agent runs any more) are gone. */
export async function recordTaskUsage(
  db: Db,
  hostId: string,
  usage: { taskId: string; memoryBytes: number; pids: number }[],
): Promise<void> {
  await db.query(
    `WITH measured AS (
       SELECT * FROM unnest($2::uuid[], $3::bigint[], $4::int[]) AS m(task_id, memory_bytes, pids)
        WHERE EXISTS (SELECT 1 FROM tasks t WHERE t.id = m.task_id)
     ), written AS (
       INSERT INTO task_usage (task_id, host_id, memory_bytes, pids, measured_at)
       SELECT task_id, $1, memory_bytes, pids, now() FROM measured
       ON CONFLICT (task_id) DO UPDATE SET host_id = EXCLUDED.host_id, memory_bytes = EXCLUDED.memory_bytes,
         pids = EXCLUDED.pids, measured_at = EXCLUDED.measured_at
       RETURNING task_id
     )
     DELETE FROM task_usage u WHERE u.host_id = $1 AND u.task_id NOT IN (SELECT task_id FROM written)`,
    [hostId, usage.map((u) => u.taskId), usage.map((u) => u.memoryBytes), usage.map((u) => u.pids)],
  );
}

/** A task's agents' use as last read; null when none of them runs. */
export async function taskUsageOf(db: Db, taskId: string): Promise<TaskUsage | null> {
  const row = (
    await db.query<{ memory_bytes: string; pids: number; measured_at: Date }>(
      'SELECT memory_bytes, pids, measured_at FROM task_usage WHERE task_id = $1',
      [taskId],
    )
  ).rows[0];
  return row
    ? { memoryBytes: Number(row.memory_bytes), pids: row.pids, measuredAt: row.measured_at.toISOString() }
    : null;
}

/** The use of the agents of an environment's workspace: its owner task's. */
export async function environmentUsage(db: Db, environmentId: string): Promise<TaskUsage | null> {
  const owner = (
    await db.query<{ task_id: string }>('SELECT task_id FROM task_environments WHERE id = $1', [environmentId])
  ).rows[0];
  return owner ? taskUsageOf(db, owner.task_id) : null;
}

/** Every task's use, for the metrics: the largest share of its maximum, per host. */
export async function allTaskUsage(db: Db): Promise<{ hostId: string; memoryBytes: number; pids: number }[]> {
  const res = await db.query<{ host_id: string; memory_bytes: string; pids: number }>(
    'SELECT host_id, memory_bytes, pids FROM task_usage',
  );
  return res.rows.map((r) => ({ hostId: r.host_id, memoryBytes: Number(r.memory_bytes), pids: r.pids }));
}
