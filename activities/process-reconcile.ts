/**
 * After a restart, re-identify every agent this host recorded as running by pid AND process
 * start time (a reused pid has another start time): the ones that vanished are marked so, and
 * their sessions exited. Agents that are still there are left alone (they are detached).
 */
import type pg from 'pg';
import { inTransaction } from '../db/pool';
import { isSameProcess } from './process-identity';

export async function reconcileExecutions(pool: pg.Pool, hostId: string): Promise<{ alive: number; vanished: number }> {
  const res = await pool.query<{ id: string; session_id: string; pid: number; process_start_time: string }>(
    `SELECT id, session_id, pid, process_start_time FROM executions WHERE host_id = $1 AND status = 'running'`,
    [hostId],
  );
  let vanished = 0;
  for (const exec of res.rows) {
    if (await isSameProcess(exec.pid, exec.process_start_time)) continue;
    vanished++;
    // One transaction: a reader never sees the execution vanished while its session still runs.
    await inTransaction(pool, async (client) => {
      await client.query(`UPDATE executions SET status = 'vanished', ended_at = now() WHERE id = $1 AND status = 'running'`, [exec.id]);
      await client.query(
        `UPDATE sessions SET state = 'exited', updated_at = now() WHERE id = $1 AND state = 'running'
           AND NOT EXISTS (SELECT 1 FROM executions WHERE session_id = $1 AND status = 'running')`,
        [exec.session_id],
      );
    });
  }
  return { alive: res.rows.length - vanished, vanished };
}
