import { AGENTS_ENDED_BY_LIMIT_TOTAL } from '../domain/limits';
import { incrementCounter } from './metric-counters';
import { inTransaction, type Db, type Pool } from './pool';

export type ExecutionStatus = 'running' | 'exited' | 'stopped' | 'vanished';
/**
 * What ended an execution when one of its limits did: its memory (`oom_killed`), its task's disk
 * quota (`disk_quota`), or its host's free space about to fall under the minimum (`disk_low`).
 */
export type ExecutionOutcome = 'oom_killed' | 'disk_quota' | 'disk_low';

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
  ended_at: Date | null;
  exit_code: number | null;
  signal: string | null;
  /** How a limit ended it (`oom_killed`); null when no limit did. */
  outcome: ExecutionOutcome | null;
  /** An agent on an SSH target: its pid, start time, cwd and log are the target's; null on the host itself. */
  ssh_target_id: string | null;
}

const EXECUTION_COLUMNS =
  'id, session_id, host_id, pid, process_start_time, cwd, log_path, status, started_at, ended_at, exit_code, signal, outcome, ssh_target_id';

/**
 * One agent per session: takes the session's start lock (a transaction-level advisory
 * lock keyed by the session, held to the end of the transaction that records a start) and
 * answers the session's other executions that run. Two starts of one session (concurrent
 * resumes, a resume racing the launch) take their turns here. Not the session row's own lock:
 * the row is read and moved by everything else about the session meanwhile (a stop, a view).
 */
export async function lockSessionForStart(client: Db, sessionId: string, executionId: string): Promise<ExecutionRow[]> {
  await lockSessionStarts(client, sessionId);
  const res = await client.query<ExecutionRow>(
    `SELECT ${EXECUTION_COLUMNS} FROM executions WHERE session_id = $1 AND status = 'running' AND id <> $2`,
    [sessionId, executionId],
  );
  return res.rows;
}

async function lockSessionStarts(client: Db, sessionId: string): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`session-start:${sessionId}`]);
}

/**
 * A stop's end, under the session's start lock: the session moves to `stopped` only when none of
 * its agents runs. Otherwise the ones that run are answered (a resume started one after the stop
 * read the session's agents) and nothing moves: the stop stops them and comes back. A start that
 * records its agent after this commits moves the session on from `stopped` itself: the two end as
 * one after the other, stopped with no agent or running with one.
 */
export async function markStoppedUnlessRunning(pool: Pool, sessionId: string): Promise<ExecutionRow[]> {
  return inTransaction(pool, async (client) => {
    await lockSessionStarts(client, sessionId);
    const running = await client.query<ExecutionRow>(
      `SELECT ${EXECUTION_COLUMNS} FROM executions WHERE session_id = $1 AND status = 'running'`,
      [sessionId],
    );
    if (running.rows.length > 0) return running.rows;
    await client.query(
      `UPDATE sessions SET state = 'stopped', updated_at = now() WHERE id = $1 AND state IN ('starting', 'running', 'exited')`,
      [sessionId],
    );
    return [];
  });
}

export async function findExecution(db: Db, id: string): Promise<ExecutionRow | null> {
  const res = await db.query<ExecutionRow>(`SELECT ${EXECUTION_COLUMNS} FROM executions WHERE id = $1`, [id]);
  return res.rows[0] ?? null;
}

export async function latestExecution(db: Db, sessionId: string): Promise<ExecutionRow | null> {
  const res = await db.query<ExecutionRow>(
    `SELECT ${EXECUTION_COLUMNS} FROM executions WHERE session_id = $1 ORDER BY started_at DESC LIMIT 1`,
    [sessionId],
  );
  return res.rows[0] ?? null;
}

/** The latest execution of each of these sessions (a page of a list), in one query. */
export async function latestExecutions(db: Db, sessionIds: string[]): Promise<Map<string, ExecutionRow>> {
  const res = await db.query<ExecutionRow>(
    `SELECT DISTINCT ON (session_id) ${EXECUTION_COLUMNS} FROM executions WHERE session_id = ANY($1::uuid[]) ORDER BY session_id, started_at DESC`,
    [sessionIds],
  );
  return new Map(res.rows.map((r) => [r.session_id, r]));
}

/** Idempotent: a retried start after a crash finds the row it already wrote. */
export async function insertExecution(
  db: Db,
  row: Omit<ExecutionRow, 'started_at' | 'ended_at' | 'exit_code' | 'signal' | 'outcome' | 'ssh_target_id'> & {
    ssh_target_id?: string | null;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO executions (id, session_id, host_id, pid, process_start_time, cwd, log_path, status, ssh_target_id, started_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, clock_timestamp()) ON CONFLICT (id) DO NOTHING`,
    [
      row.id,
      row.session_id,
      row.host_id,
      row.pid,
      row.process_start_time,
      row.cwd,
      row.log_path,
      row.status,
      row.ssh_target_id ?? null,
    ],
  );
}

/**
 * (started_at is the moment of the record, not of its transaction's start: a start that waited
 * for the session's lock behind another is the later one, and the session's latest.)
 *
 * A started agent's record, with its spawn intent (db/spawn-intents.ts) removed in the same
 * statement: the intent is dropped exactly when the execution is recorded, one round trip.
 */
export async function recordExecutionOfIntent(
  db: Db,
  row: Omit<ExecutionRow, 'started_at' | 'ended_at' | 'exit_code' | 'signal' | 'outcome' | 'ssh_target_id'>,
): Promise<void> {
  await db.query(
    `WITH intent AS (DELETE FROM spawn_intents WHERE execution_id = $1)
     INSERT INTO executions (id, session_id, host_id, pid, process_start_time, cwd, log_path, status, started_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, clock_timestamp()) ON CONFLICT (id) DO NOTHING`,
    [row.id, row.session_id, row.host_id, row.pid, row.process_start_time, row.cwd, row.log_path, row.status],
  );
}

/**
 * The start of an execution on this host, claimed in one statement: its record if it has one
 * already (a re-run: nothing is written), else its spawn intent (db/spawn-intents.ts
 * `recordSpawnIntent`), committed before the spawn. `claimed` is false when an intent was there
 * already (a process died between a spawn and its record).
 */
export async function claimExecutionStart(
  db: Db,
  intent: { executionId: string; sessionId: string; taskId: string; hostId: string },
): Promise<{ recorded: Pick<ExecutionRow, 'id' | 'pid' | 'status'> | null; claimed: boolean }> {
  const res = await db.query<{
    id: string | null;
    pid: number | null;
    status: ExecutionStatus | null;
    claimed: boolean;
  }>(
    `WITH recorded AS (SELECT id, pid, status FROM executions WHERE id = $1),
          claimed AS (
            INSERT INTO spawn_intents (execution_id, session_id, task_id, host_id)
            SELECT $1, $2, $3, $4 WHERE NOT EXISTS (SELECT 1 FROM recorded)
            ON CONFLICT (execution_id) DO NOTHING RETURNING 1)
     SELECT r.id, r.pid, r.status, EXISTS (SELECT 1 FROM claimed) AS claimed FROM (SELECT 1) AS one LEFT JOIN recorded r ON true`,
    [intent.executionId, intent.sessionId, intent.taskId, intent.hostId],
  );
  const row = res.rows[0]!;
  return {
    recorded: row.id !== null ? { id: row.id, pid: row.pid!, status: row.status! } : null,
    claimed: row.claimed,
  };
}

export async function setExecutionStatus(db: Db, id: string, status: ExecutionStatus): Promise<void> {
  await db.query(
    `UPDATE executions SET status = $2, ended_at = CASE WHEN $2 = 'running' THEN NULL ELSE now() END WHERE id = $1`,
    [id, status],
  );
}

/**
 * A running execution ended: `exited` with the outcome its shim recorded, or `vanished` when no
 * outcome exists (the pid is gone or is another process now). Its session follows in the same
 * transaction (`exited`, once no other execution of it runs): a reader never sees one without the
 * other. False when it was no longer running (stopped meanwhile, or collected already).
 */
export async function endExecution(
  pool: Pool,
  id: string,
  end: {
    status: 'exited' | 'vanished';
    exitCode: number | null;
    signal: string | null;
    endedAt: string | null;
    outcome?: ExecutionOutcome | null;
  },
): Promise<{ sessionId: string } | null> {
  return inTransaction(pool, async (client) => {
    const ended = await client.query<{ session_id: string }>(
      // Never before the start: started_at is the moment the start was recorded, after the spawn,
      // and an agent that ends at once (or a target's clock) can date its end before that.
      `UPDATE executions SET status = $2, exit_code = $3, signal = $4, ended_at = GREATEST(COALESCE($5::timestamptz, now()), started_at), outcome = $6 WHERE id = $1 AND status = 'running' RETURNING session_id`,
      [id, end.status, end.exitCode, end.signal, end.endedAt, end.outcome ?? null],
    );
    const sessionId = ended.rows[0]?.session_id;
    if (!sessionId) return null;
    if (end.outcome) await incrementCounter(client, AGENTS_ENDED_BY_LIMIT_TOTAL, { outcome: end.outcome });
    await client.query(
      // From `starting` too: an agent can end before its launch marked the session running, and
      // that launch's later move from `starting` then finds nothing to move.
      `UPDATE sessions SET state = 'exited', updated_at = now() WHERE id = $1 AND state IN ('starting', 'running')
         AND NOT EXISTS (SELECT 1 FROM executions WHERE session_id = $1 AND status = 'running')`,
      [sessionId],
    );
    return { sessionId };
  });
}

/**
 * A stopped execution a limit ended (`disk_quota`, `disk_low`): said on it, counted, and
 * its session stopped (it was running only through this agent).
 */
export async function markOutcome(pool: Pool, id: string, outcome: ExecutionOutcome): Promise<void> {
  await inTransaction(pool, async (client) => {
    const marked = await client.query<{ session_id: string }>(
      `UPDATE executions SET outcome = $2 WHERE id = $1 AND status = 'stopped' AND outcome IS NULL RETURNING session_id`,
      [id, outcome],
    );
    const sessionId = marked.rows[0]?.session_id;
    if (!sessionId) return;
    await incrementCounter(client, AGENTS_ENDED_BY_LIMIT_TOTAL, { outcome });
    await client.query(
      `UPDATE sessions SET state = 'stopped', updated_at = now() WHERE id = $1 AND state IN ('starting', 'running')
         AND NOT EXISTS (SELECT 1 FROM executions WHERE session_id = $1 AND status = 'running')`,
      [sessionId],
    );
  });
}

/** Stopped by the service: with the outcome its shim recorded, when it had time to. */
export async function markStopped(
  db: Db,
  id: string,
  outcome: { exitCode: number | null; signal: string | null } | null,
): Promise<void> {
  await db.query(
    `UPDATE executions SET status = 'stopped', exit_code = COALESCE($2, exit_code), signal = COALESCE($3, signal), ended_at = GREATEST(COALESCE(ended_at, now()), started_at) WHERE id = $1`,
    [id, outcome?.exitCode ?? null, outcome?.signal ?? null],
  );
}
