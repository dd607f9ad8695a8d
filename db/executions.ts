import type { Db } from './pool';

export type ExecutionStatus = 'running' | 'exited' | 'stopped' | 'vanished';

export interface ExecutionRow {
  id: string;
  session_id: string;
  host_id: string;
  pid: number;
  process_start_time: string;
  cwd: string;
  log_path: string;
  status: ExecutionStatus;
  started_at: Date;
}

const EXECUTION_COLUMNS = 'id, session_id, host_id, pid, process_start_time, cwd, log_path, status, started_at';

export async function findExecution(db: Db, id: string): Promise<ExecutionRow | null> {
  const res = await db.query<ExecutionRow>(`SELECT ${EXECUTION_COLUMNS} FROM executions WHERE id = $1`, [id]);
  return res.rows[0] ?? null;
}

export async function latestExecution(db: Db, sessionId: string): Promise<ExecutionRow | null> {
  const res = await db.query<ExecutionRow>(`SELECT ${EXECUTION_COLUMNS} FROM executions WHERE session_id = $1 ORDER BY started_at DESC LIMIT 1`, [sessionId]);
  return res.rows[0] ?? null;
}

/** Idempotent: a retried start after a crash finds the row it already wrote. */
export async function insertExecution(db: Db, row: Omit<ExecutionRow, 'started_at'>): Promise<void> {
  await db.query(
    `INSERT INTO executions (id, session_id, host_id, pid, process_start_time, cwd, log_path, status)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING`,
    [row.id, row.session_id, row.host_id, row.pid, row.process_start_time, row.cwd, row.log_path, row.status],
  );
}

export async function setExecutionStatus(db: Db, id: string, status: ExecutionStatus): Promise<void> {
  await db.query(`UPDATE executions SET status = $2, ended_at = CASE WHEN $2 = 'running' THEN NULL ELSE now() END WHERE id = $1`, [id, status]);
}
