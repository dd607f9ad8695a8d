import type { ExecutorType } from '../domain/admission';
import type { AgentLimits } from '../domain/limits';
import type { SessionRoleName, SessionState } from '../domain/session';
import { newestFirst, type PageOf } from './keyset';
import type { Db } from './pool';

export interface SessionRow {
  id: string;
  task_id: string;
  environment_id: string | null;
  state: SessionState;
  executor_type: ExecutorType;
  agent_profile: string;
  command: string[] | null;
  agent_env: Record<string, string>;
  /** What its agents may use; null for sessions from before limits: the defaults. */
  agent_limits: AgentLimits | null;
  name: string | null;
  role: SessionRoleName | null;
  resume_count: number;
  /** The resume run that last admitted it (null: its launch). */
  admitted_run: string | null;
  created_at: Date;
}

const SESSION_COLUMNS =
  'id, task_id, environment_id, state, executor_type, agent_profile, command, agent_env, agent_limits, name, role, resume_count, admitted_run, created_at';

export async function insertSession(
  db: Db,
  s: {
    id: string;
    taskId: string;
    environmentId: string;
    executorType: ExecutorType;
    agentProfile: string;
    command: string[] | null;
    env?: Record<string, string>;
    /** What its agents may use; null: the defaults. */
    limits?: AgentLimits | null;
    /** `container`: the image its agents run in. */
    image?: string | null;
    name: string | null;
    role: SessionRoleName;
    /** The plan its launch was admitted with (a re-run of the admission answers it). */
    admittedPlan?: unknown;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO sessions (id, task_id, environment_id, state, executor_type, agent_profile, command, agent_env, name, role, admitted_plan, agent_limits, container_image)
     VALUES ($1, $2, $3, 'starting', $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    [
      s.id,
      s.taskId,
      s.environmentId,
      s.executorType,
      s.agentProfile,
      s.command === null ? null : JSON.stringify(s.command),
      JSON.stringify(s.env ?? {}),
      s.name,
      s.role,
      s.admittedPlan === undefined ? null : JSON.stringify(s.admittedPlan),
      s.limits ? JSON.stringify(s.limits) : null,
      s.executorType === 'container' ? (s.image ?? null) : null,
    ],
  );
}

export async function findSession(db: Db, id: string): Promise<SessionRow | null> {
  const res = await db.query<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = $1`, [id]);
  return res.rows[0] ?? null;
}

export async function sessionsOfTask(db: Db, taskId: string): Promise<SessionRow[]> {
  const res = await db.query<SessionRow>(
    `SELECT ${SESSION_COLUMNS} FROM sessions WHERE task_id = $1 ORDER BY created_at`,
    [taskId],
  );
  return res.rows;
}

/** Sessions newest first, those whose columns equal `equal` (an undefined value: any). */
function sessionsNewestFirst(db: Db, equal: Record<string, string | undefined>, page: PageOf) {
  return newestFirst<SessionRow>(
    db,
    { columns: SESSION_COLUMNS, table: 'sessions', time: 'created_at', key: 'id', keyType: 'uuid', equal },
    page,
  );
}

/** A task's sessions, newest first. */
export async function listSessionsOfTask(db: Db, taskId: string, page: PageOf) {
  return sessionsNewestFirst(db, { task_id: taskId }, page);
}

/** Every session of the instance, newest first, optionally in one state (migration 023's indexes). */
export async function listSessions(db: Db, filter: { state?: SessionState }, page: PageOf) {
  return sessionsNewestFirst(db, { state: filter.state }, page);
}

export async function sessionState(db: Db, id: string): Promise<SessionState | null> {
  const res = await db.query<{ state: SessionState }>('SELECT state FROM sessions WHERE id = $1', [id]);
  return res.rows[0]?.state ?? null;
}

/** Compare-and-set of a session's state; returns whether it moved. */
export async function moveSessionState(db: Db, id: string, from: SessionState[], to: SessionState): Promise<boolean> {
  const res = await db.query(
    'UPDATE sessions SET state = $3, updated_at = now() WHERE id = $1 AND state = ANY($2::text[])',
    [id, from, to],
  );
  return res.rowCount === 1;
}

/**
 * A launch or resume whose agent started: the session is `running` while that agent runs, and
 * `exited` when it already ended before this write (its exit may be collected first). A resume's
 * run is counted here, once (`counted_run`), so a refused or failed resume never counts.
 */
export async function markSessionStarted(
  db: Db,
  id: string,
  from: SessionState[],
  resumeRun: string | null = null,
): Promise<boolean> {
  const res = await db.query(
    `UPDATE sessions SET state = CASE WHEN EXISTS (SELECT 1 FROM executions WHERE session_id = $1 AND status = 'running') THEN 'running' ELSE 'exited' END,
            resume_count = resume_count + CASE WHEN $3::text IS NOT NULL AND counted_run IS DISTINCT FROM $3::text THEN 1 ELSE 0 END,
            counted_run = COALESCE($3::text, counted_run),
            updated_at = now()
      WHERE id = $1 AND state = ANY($2::text[])`,
    [id, from, resumeRun],
  );
  return res.rowCount === 1;
}

/**
 * A first launch that failed after its agent may have started leaves no session row either
 * [R1.4]: removed with its executions, unless an agent of it still runs (it could not be stopped:
 * the row is its only record, kept).
 */
export async function deleteFailedSession(db: Db, id: string): Promise<void> {
  await db.query(
    `DELETE FROM sessions s WHERE s.id = $1 AND NOT EXISTS (SELECT 1 FROM executions e WHERE e.session_id = s.id AND e.status = 'running')`,
    [id],
  );
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

/** The plan a launch was admitted with; null before (or without) its admission. */
export async function admittedPlanOf(db: Db, id: string): Promise<unknown | null> {
  return (
    (await db.query<{ admitted_plan: unknown | null }>('SELECT admitted_plan FROM sessions WHERE id = $1', [id]))
      .rows[0]?.admitted_plan ?? null
  );
}

/** Forgets a session (its agent already stopped); files, worktrees and branches are never touched here. */
export async function deleteSession(db: Db, id: string): Promise<void> {
  await db.query('DELETE FROM sessions WHERE id = $1', [id]);
}
