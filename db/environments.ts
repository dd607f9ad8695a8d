/**
 * A task's environment (task_environments) and the compare-and-set transitions of its
 * materialization, each guarded by the state it expects. Its repositories' rows: db/inventory.ts.
 */
import type { ExecutorType, EnvironmentStatus } from '../domain/admission';
import { upsertInventoryRow, type IncomingInventoryRow } from './inventory';
import type { Db } from './pool';

export interface EnvironmentRow {
  id: string;
  task_id: string;
  executor_type: ExecutorType;
  host_id: string;
  status: EnvironmentStatus;
  workspace_path: string | null;
  materializer_session_id: string | null;
  materialized: boolean;
  ownership_generation: number;
  task_folder: string | null;
  /** 0, or how many times an operator abandoned its workspace: the next materialization's folder and branch (domain/task-layout.ts). */
  layout_generation: number;
  /** `ssh`: the target its workspace is on (null for the host's executors). */
  ssh_target_id: string | null;
}

const ENV_COLUMNS =
  'id, task_id, executor_type, host_id, status, workspace_path, materializer_session_id, materialized, ownership_generation, task_folder, layout_generation, ssh_target_id';

export async function environmentOfTask(db: Db, taskId: string, forUpdate = false): Promise<EnvironmentRow | null> {
  const res = await db.query<EnvironmentRow>(
    `SELECT ${ENV_COLUMNS} FROM task_environments WHERE task_id = $1${forUpdate ? ' FOR UPDATE' : ''}`,
    [taskId],
  );
  return res.rows[0] ?? null;
}

export async function environmentById(db: Db, id: string): Promise<EnvironmentRow | null> {
  const res = await db.query<EnvironmentRow>(`SELECT ${ENV_COLUMNS} FROM task_environments WHERE id = $1`, [id]);
  return res.rows[0] ?? null;
}

export async function insertCreatingEnvironment(
  db: Db,
  env: {
    id: string;
    taskId: string;
    executorType: ExecutorType;
    hostId: string;
    materializerSessionId: string;
    sshTargetId: string | null;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO task_environments (id, task_id, executor_type, host_id, status, materializer_session_id, ssh_target_id)
     VALUES ($1, $2, $3, $4, 'creating', $5, $6)`,
    [env.id, env.taskId, env.executorType, env.hostId, env.materializerSessionId, env.sshTargetId],
  );
}

/** Re-elects a failed environment that never materialized, or one cleanup released: compare-and-set on its state. */
export async function reelectMaterializer(
  db: Db,
  env: {
    id: string;
    executorType: ExecutorType;
    hostId: string;
    materializerSessionId: string;
    sshTargetId: string | null;
  },
): Promise<boolean> {
  const res = await db.query(
    `UPDATE task_environments
        SET status = 'creating', materializer_session_id = $2, executor_type = $3, host_id = $4, ssh_target_id = $5,
            workspace_path = NULL, materialized = false, failure_reason = NULL, ownership_generation = ownership_generation + 1, updated_at = now()
      WHERE id = $1 AND ((status = 'failed' AND NOT materialized) OR status = 'released')`,
    [env.id, env.materializerSessionId, env.executorType, env.hostId, env.sshTargetId],
  );
  return res.rowCount === 1;
}

/** Marks a creating environment failed, only while it is still this materializer's (or anyone's when null). */
export async function markCreatingEnvironmentFailed(
  db: Db,
  envId: string,
  materializerSessionId: string | null,
  reason: string,
): Promise<boolean> {
  const res = await db.query(
    `UPDATE task_environments SET status = 'failed', failure_reason = $3, updated_at = now()
      WHERE id = $1 AND status = 'creating' AND ($2::uuid IS NULL OR materializer_session_id = $2::uuid)`,
    [envId, materializerSessionId, reason],
  );
  return res.rowCount === 1;
}

/**
 * A first launch that failed after publishing its environment (its agent could not start), once
 * its host step removed what it made: the environment goes back to re-electable (`failed`, never
 * materialized) and its inventory rows are `deleted`, so no row names a removed path [R1.4]. Only
 * while it is still this session's materialization and no other session works in it.
 */
export async function unpublishFailedMaterialization(
  db: Db,
  envId: string,
  materializerSessionId: string,
  reason: string,
): Promise<boolean> {
  const res = await db.query(
    `UPDATE task_environments SET status = 'failed', materialized = false, workspace_path = NULL, failure_reason = $3, updated_at = now()
      WHERE id = $1 AND status = 'ready' AND materializer_session_id = $2
        AND NOT EXISTS (SELECT 1 FROM sessions WHERE environment_id = $1 AND id <> $2 AND state IN ('starting', 'running'))`,
    [envId, materializerSessionId, reason],
  );
  if (res.rowCount !== 1) return false;
  await db.query(
    `UPDATE environment_repos SET status = 'deleted', updated_at = now() WHERE environment_id = $1 AND status = 'active'`,
    [envId],
  );
  return true;
}

/**
 * A published first launch whose undo had to keep a worktree (an agent of the cancelled launch
 * wrote into it): the environment is `released`, as an archive that kept a dirty
 * worktree leaves it, the rows of the worktrees it removed `deleted` and the kept one's row
 * active, so cleanup, the views and the next launch (which adopts it) see it. Only while it is
 * still this session's materialization and no other session works in it.
 */
export async function releaseKeptMaterialization(
  db: Db,
  a: { environmentId: string; materializerSessionId: string; removedRepositoryIds: string[] },
): Promise<boolean> {
  const res = await db.query(
    `UPDATE task_environments SET status = 'released', updated_at = now()
      WHERE id = $1 AND status = 'ready' AND materializer_session_id = $2
        AND NOT EXISTS (SELECT 1 FROM sessions WHERE environment_id = $1 AND id <> $2 AND state IN ('starting', 'running'))`,
    [a.environmentId, a.materializerSessionId],
  );
  if (res.rowCount !== 1) return false;
  await db.query(
    `UPDATE environment_repos SET status = 'deleted', updated_at = now() WHERE environment_id = $1 AND status = 'active' AND repository_id = ANY($2::uuid[])`,
    [a.environmentId, a.removedRepositoryIds],
  );
  return true;
}

/**
 * Publishes the complete inventory and `ready` in one step, guarded by "still creating and still
 * this materializer". Must run inside a transaction. Returns false when the guard failed.
 */
export async function publishReady(
  db: Db,
  environmentId: string,
  materializerSessionId: string,
  workspacePath: string,
  taskFolder: string,
  rows: IncomingInventoryRow[],
): Promise<boolean> {
  const res = await db.query(
    `UPDATE task_environments SET status = 'ready', materialized = true, workspace_path = $3, task_folder = $4, updated_at = now()
      WHERE id = $1 AND status = 'creating' AND materializer_session_id = $2`,
    [environmentId, materializerSessionId, workspacePath, taskFolder],
  );
  if (res.rowCount !== 1) {
    // Already published by this very materializer (a step re-run after a crash): done.
    const mine = await db.query(
      `SELECT 1 FROM task_environments WHERE id = $1 AND status = 'ready' AND materializer_session_id = $2 AND workspace_path = $3`,
      [environmentId, materializerSessionId, workspacePath],
    );
    return mine.rowCount === 1;
  }
  for (const row of rows) await upsertInventoryRow(db, environmentId, row);
  return true;
}

/** Whether this session is still the environment's elected materializer (a re-election names another). */
export async function isMaterializer(db: Db, environmentId: string, sessionId: string): Promise<boolean> {
  const res = await db.query('SELECT 1 FROM task_environments WHERE id = $1 AND materializer_session_id = $2', [
    environmentId,
    sessionId,
  ]);
  return res.rowCount === 1;
}

/** The environment that is canonical for a task (its own, its group's, or its nearest ancestor's), read without locks. */
export async function canonicalEnvironmentOf(db: Db, taskId: string): Promise<EnvironmentRow | null> {
  let current: string | null = taskId;
  for (let depth = 0; current && depth < 32; depth++) {
    const res: { rows: { workspace_mode: string; parent_task_id: string | null; group_env: string | null }[] } =
      await db.query(
        `SELECT t.workspace_mode, t.parent_task_id, g.environment_id AS group_env
         FROM tasks t LEFT JOIN workspace_groups g ON g.id = t.group_id WHERE t.id = $1`,
        [current],
      );
    const task = res.rows[0];
    if (!task) return null;
    if (task.workspace_mode === 'new_workspace') return environmentOfTask(db, current);
    if (task.workspace_mode === 'shared_group') return task.group_env ? environmentById(db, task.group_env) : null;
    current = task.parent_task_id;
  }
  return null;
}
