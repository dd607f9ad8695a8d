import type { ExecutorType } from '../domain/admission';
import type { Db } from './pool';

export type SessionState = 'starting' | 'running' | 'stopped' | 'exited' | 'failed';
export type SessionRole = 'materialized' | 'attached' | 'transitioned';

export interface SessionRow {
  id: string;
  task_id: string;
  environment_id: string | null;
  state: SessionState;
  executor_type: ExecutorType;
  agent_profile: string;
  command: string[] | null;
  agent_env: Record<string, string>;
  name: string | null;
  role: SessionRole | null;
  resume_count: number;
  created_at: Date;
}

const SESSION_COLUMNS = 'id, task_id, environment_id, state, executor_type, agent_profile, command, agent_env, name, role, resume_count, created_at';

export async function insertSession(
  db: Db,
  s: { id: string; taskId: string; environmentId: string; executorType: ExecutorType; agentProfile: string; command: string[] | null; env?: Record<string, string>; name: string | null; role: SessionRole },
): Promise<void> {
  await db.query(
    `INSERT INTO sessions (id, task_id, environment_id, state, executor_type, agent_profile, command, agent_env, name, role)
     VALUES ($1, $2, $3, 'starting', $4, $5, $6, $7, $8, $9)`,
    [s.id, s.taskId, s.environmentId, s.executorType, s.agentProfile, s.command === null ? null : JSON.stringify(s.command), JSON.stringify(s.env ?? {}), s.name, s.role],
  );
}

export async function findSession(db: Db, id: string): Promise<SessionRow | null> {
  const res = await db.query<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = $1`, [id]);
  return res.rows[0] ?? null;
}

export async function sessionsOfTask(db: Db, taskId: string): Promise<SessionRow[]> {
  const res = await db.query<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE task_id = $1 ORDER BY created_at`, [taskId]);
  return res.rows;
}

export async function sessionState(db: Db, id: string): Promise<SessionState | null> {
  const res = await db.query<{ state: SessionState }>('SELECT state FROM sessions WHERE id = $1', [id]);
  return res.rows[0]?.state ?? null;
}

/** Compare-and-set of a session's state; returns whether it moved. */
export async function moveSessionState(db: Db, id: string, from: SessionState[], to: SessionState): Promise<boolean> {
  const res = await db.query('UPDATE sessions SET state = $3, updated_at = now() WHERE id = $1 AND state = ANY($2::text[])', [id, from, to]);
  return res.rowCount === 1;
}

/**
 * A launch or resume whose agent started: the session is `running` while that agent runs, and
 * `exited` when it already ended before this write (its exit may be collected first).
 */
export async function markSessionStarted(db: Db, id: string, from: SessionState[]): Promise<boolean> {
  const res = await db.query(
    `UPDATE sessions SET state = CASE WHEN EXISTS (SELECT 1 FROM executions WHERE session_id = $1 AND status = 'running') THEN 'running' ELSE 'exited' END,
            updated_at = now()
      WHERE id = $1 AND state = ANY($2::text[])`,
    [id, from],
  );
  return res.rowCount === 1;
}

/** A refused launch leaves no session row [R1.4]. Only a session that never started is removed. */
export async function deleteUnstartedSession(db: Db, id: string): Promise<void> {
  await db.query(`DELETE FROM sessions s WHERE s.id = $1 AND s.state = 'starting' AND NOT EXISTS (SELECT 1 FROM executions e WHERE e.session_id = s.id)`, [id]);
}

/** Whether an agent of the task's environment is starting or running (a reset or an abandonment would take its workspace away). */
export async function agentRunningInEnvironmentOf(db: Db, taskId: string): Promise<boolean> {
  const running = await db.query(
    `SELECT 1 FROM sessions s JOIN task_environments e ON e.id = s.environment_id
      WHERE e.task_id = $1 AND s.state IN ('starting', 'running') LIMIT 1`,
    [taskId],
  );
  return (running.rowCount ?? 0) > 0;
}
