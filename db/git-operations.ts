/**
 * A task's merges, rebases and undos [R8]: one row each, one running per task at a time (the
 * partial unique index answers `merge_in_progress`), the merge's plan written before any ref moves.
 */
import type { GitOperationState, RepositoryMerged, RepositoryPlan } from '../domain/merge';
import { isUniqueViolation } from './pool';
import type { Db } from './pool';

type GitOperationKind = 'merge' | 'rebase' | 'undo';

export interface GitOperationRow {
  operationId: string;
  taskId: string;
  kind: GitOperationKind;
  undoes: string | null;
  strategy: string | null;
  state: GitOperationState;
  plan: RepositoryPlan[] | null;
  repositories: RepositoryMerged[];
  error: Record<string, unknown> | null;
  createdAt: string;
  finishedAt: string | null;
  undoneAt: string | null;
}

const COLUMNS =
  'operation_id, task_id, kind, undoes, strategy, state, plan, repositories, error, created_at, finished_at, undone_at';

interface Row {
  operation_id: string;
  task_id: string;
  kind: GitOperationKind;
  undoes: string | null;
  strategy: string | null;
  state: GitOperationState;
  plan: RepositoryPlan[] | null;
  repositories: RepositoryMerged[];
  error: Record<string, unknown> | null;
  created_at: Date;
  finished_at: Date | null;
  undone_at: Date | null;
}

const toOperation = (r: Row): GitOperationRow => ({
  operationId: r.operation_id,
  taskId: r.task_id,
  kind: r.kind,
  undoes: r.undoes,
  strategy: r.strategy,
  state: r.state,
  plan: r.plan,
  repositories: r.repositories,
  error: r.error,
  createdAt: r.created_at.toISOString(),
  finishedAt: r.finished_at?.toISOString() ?? null,
  undoneAt: r.undone_at?.toISOString() ?? null,
});

/**
 * The operation's row, made once: `begun` (made now, or by an earlier run of the same step),
 * `busy` (another operation of the task is running: nothing was made).
 */
/** What an operation's row is made with. */
export interface GitOperationStart {
  operationId: string;
  taskId: string;
  kind: GitOperationKind;
  strategy?: string | null;
  undoes?: string | null;
  idempotencyKey?: string | null;
  request?: Record<string, unknown>;
}

export async function beginGitOperation(db: Db, op: GitOperationStart): Promise<'begun' | 'busy'> {
  try {
    await db.query(
      `INSERT INTO git_operations (operation_id, task_id, kind, strategy, undoes, idempotency_key, request)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (operation_id) DO NOTHING`,
      [
        op.operationId,
        op.taskId,
        op.kind,
        op.strategy ?? null,
        op.undoes ?? null,
        op.idempotencyKey ?? null,
        JSON.stringify(op.request ?? {}),
      ],
    );
    return 'begun';
  } catch (err) {
    if (isUniqueViolation(err)) return 'busy';
    throw err;
  }
}

/** The plan, written before any base moves; a later run of the step finds it and never writes another. */
export async function recordPlan(db: Db, operationId: string, plan: RepositoryPlan[]): Promise<RepositoryPlan[]> {
  const res = await db.query<{ plan: RepositoryPlan[] }>(
    `UPDATE git_operations SET plan = COALESCE(plan, $2) WHERE operation_id = $1 RETURNING plan`,
    [operationId, JSON.stringify(plan)],
  );
  return res.rows[0]?.plan ?? plan;
}

/** A re-plan after a base moved: the new plan replaces the one whose bases were all put back. */
export async function replacePlan(db: Db, operationId: string, plan: RepositoryPlan[]): Promise<void> {
  await db.query(`UPDATE git_operations SET plan = $2 WHERE operation_id = $1 AND state = 'running'`, [
    operationId,
    JSON.stringify(plan),
  ]);
}

export async function finishGitOperation(
  db: Db,
  operationId: string,
  outcome: { state: GitOperationState; repositories?: RepositoryMerged[]; error?: Record<string, unknown> | null },
): Promise<void> {
  await db.query(
    `UPDATE git_operations SET state = $2, repositories = COALESCE($3, repositories), error = $4, finished_at = now()
      WHERE operation_id = $1 AND state IN ('running', 'needs_operator')`,
    [
      operationId,
      outcome.state,
      outcome.repositories ? JSON.stringify(outcome.repositories) : null,
      outcome.error ? JSON.stringify(outcome.error) : null,
    ],
  );
}

/** An undone merge says so (its undo is a row of its own). */
export async function markUndone(db: Db, mergeId: string): Promise<void> {
  await db.query(
    `UPDATE git_operations SET state = 'undone', undone_at = now() WHERE operation_id = $1 AND state = 'merged'`,
    [mergeId],
  );
}

export async function findGitOperation(db: Db, operationId: string): Promise<GitOperationRow | null> {
  const res = await db.query<Row>(`SELECT ${COLUMNS} FROM git_operations WHERE operation_id = $1`, [operationId]);
  return res.rows[0] ? toOperation(res.rows[0]) : null;
}

export async function findByIdempotencyKey(db: Db, taskId: string, key: string): Promise<GitOperationRow | null> {
  const res = await db.query<Row>(`SELECT ${COLUMNS} FROM git_operations WHERE task_id = $1 AND idempotency_key = $2`, [
    taskId,
    key,
  ]);
  return res.rows[0] ? toOperation(res.rows[0]) : null;
}

/** A task's merges, newest first. */
export async function mergesOf(
  db: Db,
  taskId: string,
  limit: number,
  after?: { createdAt: string; operationId: string },
): Promise<GitOperationRow[]> {
  const res = await db.query<Row>(
    `SELECT ${COLUMNS} FROM git_operations WHERE task_id = $1 AND kind = 'merge'
        AND ($2::timestamptz IS NULL OR (created_at, operation_id) < ($2::timestamptz, $3::uuid))
      ORDER BY created_at DESC, operation_id DESC LIMIT $4`,
    [taskId, after?.createdAt ?? null, after?.operationId ?? null, limit],
  );
  return res.rows.map(toOperation);
}

/** Per repository, the task head its latest merge that is not undone took: a next merge takes only what is newer. */
export async function mergedTaskHeads(db: Db, taskId: string): Promise<Record<string, string>> {
  const res = await db.query<{ plan: RepositoryPlan[] }>(
    `SELECT plan FROM git_operations WHERE task_id = $1 AND kind = 'merge' AND state = 'merged' AND plan IS NOT NULL
      ORDER BY created_at`,
    [taskId],
  );
  const heads: Record<string, string> = {};
  for (const row of res.rows) for (const p of row.plan) heads[p.repositoryId] = p.taskHead;
  return heads;
}
