/**
 * The agents running on this host's own disk (not on an SSH target): what the free-space guard
 * stops when the workspace root's filesystem runs low (worker/disk-guard.ts).
 */
import type { ExecutionRow } from './executions';
import type { Db } from './pool';

/** A running execution of this host, with the task whose control group holds it (its environment's owner). */
export interface RunningHostAgent extends ExecutionRow {
  owner_task_id: string;
}

export async function runningHostAgents(db: Db, hostId: string): Promise<RunningHostAgent[]> {
  const res = await db.query<RunningHostAgent>(
    `SELECT x.*, e.task_id AS owner_task_id
       FROM executions x JOIN sessions s ON s.id = x.session_id JOIN task_environments e ON e.id = s.environment_id
      WHERE x.host_id = $1 AND x.status = 'running' AND x.ssh_target_id IS NULL`,
    [hostId],
  );
  return res.rows;
}
