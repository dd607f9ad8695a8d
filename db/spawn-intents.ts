/**
 * Spawn intents: committed before an agent is spawned, removed in the transaction that records
 * the execution. One left behind means a process died between a spawn and its record; the agent
 * it may have started carries its execution id (TWS_EXECUTION_ID) and is adopted or stopped.
 */
import type { Db } from './pool';

export interface SpawnIntent {
  executionId: string;
  sessionId: string;
  taskId: string;
  hostId: string;
}

/** True when this call recorded the intent; false when it was there already (a re-run). */
export async function recordSpawnIntent(db: Db, intent: SpawnIntent): Promise<boolean> {
  const res = await db.query(
    `INSERT INTO spawn_intents (execution_id, session_id, task_id, host_id) VALUES ($1, $2, $3, $4) ON CONFLICT (execution_id) DO NOTHING`,
    [intent.executionId, intent.sessionId, intent.taskId, intent.hostId],
  );
  return res.rowCount === 1;
}

export async function dropSpawnIntent(db: Db, executionId: string): Promise<void> {
  await db.query('DELETE FROM spawn_intents WHERE execution_id = $1', [executionId]);
}

export async function spawnIntentExists(db: Db, executionId: string): Promise<boolean> {
  return ((await db.query('SELECT 1 FROM spawn_intents WHERE execution_id = $1', [executionId])).rowCount ?? 0) > 0;
}

/** Intents of the task's sessions (or of sessions in the environment being cleaned): their agents may be running unrecorded. */
export async function spawnIntentsOf(
  db: Db,
  taskId: string,
  environmentId: string | null,
): Promise<{ executionId: string; hostId: string }[]> {
  const res = await db.query<{ execution_id: string; host_id: string }>(
    `SELECT i.execution_id, i.host_id FROM spawn_intents i
      WHERE i.task_id = $1 OR ($2::uuid IS NOT NULL AND EXISTS (SELECT 1 FROM sessions s WHERE s.id = i.session_id AND s.environment_id = $2::uuid))`,
    [taskId, environmentId],
  );
  return res.rows.map((r) => ({ executionId: r.execution_id, hostId: r.host_id }));
}

/** Intents of this host left longer than `olderThanMs` with no execution recorded: their spawns died. */
export async function staleSpawnIntents(db: Db, hostId: string, olderThanMs: number): Promise<SpawnIntent[]> {
  const res = await db.query<{ execution_id: string; session_id: string; task_id: string; host_id: string }>(
    `SELECT execution_id, session_id, task_id, host_id FROM spawn_intents
      WHERE host_id = $1 AND created_at < now() - make_interval(secs => $2::double precision / 1000)`,
    [hostId, olderThanMs],
  );
  return res.rows.map((r) => ({
    executionId: r.execution_id,
    sessionId: r.session_id,
    taskId: r.task_id,
    hostId: r.host_id,
  }));
}
