/** The cleanup job rows: the barrier, the snapshot, and the story an operator reads. */
import {
  ACTIVE_JOB_STATES,
  type CleanupErrorClass,
  type CleanupJobState,
  type CleanupTrigger,
} from '../domain/cleanup';
import type { CleanupReport, CleanupSnapshot } from '../domain/cleanup-snapshot';
import type pg from 'pg';
import { LIVE } from './hosts';
import { newestFirst, type PageOf } from './keyset';
import { isUniqueViolation, type Db } from './pool';

export interface CleanupJobRow {
  operation_id: string;
  task_id: string;
  trigger: CleanupTrigger;
  state: CleanupJobState;
  snapshot: CleanupSnapshot | [];
  report: CleanupReport | Record<string, never>;
  attempts: number;
  next_attempt_at: Date | null;
  last_error: CleanupErrorClass | null;
  workflow_id: string;
  /** The bulk cleanup's workflow that carries (or carried) this job out, when a batch claimed it. */
  batch_workflow_id: string | null;
  /** The consent a delete's request gave to discard uncommitted work (kept for its later runs). */
  discard_changes: boolean;
  created_at: Date;
  finished_at: Date | null;
}

const JOB_COLUMNS =
  'operation_id, task_id, trigger, state, snapshot, report, attempts, next_attempt_at, last_error, workflow_id, batch_workflow_id, created_at, finished_at, discard_changes';

/** Reserves the job: from this row on, the task admits no launch (the partial unique index makes it one per task). */
export async function reserveJob(
  db: Db,
  job: {
    operationId: string;
    taskId: string;
    trigger: CleanupTrigger;
    workflowId: string;
    cascade?: { operationId: string; position: number };
    discardChanges?: boolean;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO cleanup_jobs (operation_id, task_id, trigger, state, workflow_id, cascade_operation_id, cascade_position, discard_changes) VALUES ($1, $2, $3, 'prepared', $4, $5, $6, $7)`,
    [
      job.operationId,
      job.taskId,
      job.trigger,
      job.workflowId,
      job.cascade?.operationId ?? null,
      job.cascade?.position ?? null,
      job.discardChanges ?? false,
    ],
  );
}

/**
 * Reserves the job unless an active job of the task (or a job of this operation) already stands:
 * false then, with nothing written and the caller's transaction still usable (a savepoint).
 */
export async function reserveJobUnlessTaken(
  client: pg.PoolClient,
  job: Parameters<typeof reserveJob>[1],
): Promise<boolean> {
  try {
    await client.query('SAVEPOINT reserve');
    await reserveJob(client, job);
    return true;
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    await client.query('ROLLBACK TO SAVEPOINT reserve');
    return false;
  }
}

/** The members a cascade prepared, deepest first (empty while it has not prepared). */
export async function cascadeMembers(
  db: Db,
  cascadeOperationId: string,
): Promise<{ taskId: string; operationId: string; workflowId: string }[]> {
  const res = await db.query<{ task_id: string; operation_id: string; workflow_id: string }>(
    'SELECT task_id, operation_id, workflow_id FROM cleanup_jobs WHERE cascade_operation_id = $1 ORDER BY cascade_position',
    [cascadeOperationId],
  );
  return res.rows.map((r) => ({ taskId: r.task_id, operationId: r.operation_id, workflowId: r.workflow_id }));
}

export async function saveSnapshot(db: Db, operationId: string, snapshot: CleanupSnapshot): Promise<void> {
  await db.query('UPDATE cleanup_jobs SET snapshot = $2, updated_at = now() WHERE operation_id = $1', [
    operationId,
    JSON.stringify(snapshot),
  ]);
}

export async function findJob(db: Db, operationId: string): Promise<CleanupJobRow | null> {
  const res = await db.query<CleanupJobRow>(`SELECT ${JOB_COLUMNS} FROM cleanup_jobs WHERE operation_id = $1`, [
    operationId,
  ]);
  return res.rows[0] ?? null;
}

/** What a new run of the job's workflow (and a message to it) needs to know of the row. */
export const continuedJobOf = (job: CleanupJobRow) => ({
  operationId: job.operation_id,
  taskId: job.task_id,
  trigger: job.trigger,
  workflowId: job.workflow_id,
  state: job.state,
  discardChanges: job.discard_changes,
});

export async function activeJobOfTask(db: Db, taskId: string): Promise<CleanupJobRow | null> {
  const res = await db.query<CleanupJobRow>(
    `SELECT ${JOB_COLUMNS} FROM cleanup_jobs WHERE task_id = $1 AND state NOT IN ('succeeded', 'cancelled')`,
    [taskId],
  );
  return res.rows[0] ?? null;
}

/**
 * How many jobs are in each state that has not ended (all of them, 0 included): the gauge an
 * operator watches. One read of the state index, bounded by the jobs under way, not by history.
 */
export async function activeJobCounts(db: Db): Promise<{ state: CleanupJobState; jobs: number }[]> {
  const res = await db.query<{ state: CleanupJobState; n: number }>(
    'SELECT state, count(*)::int AS n FROM cleanup_jobs WHERE state = ANY($1::text[]) GROUP BY state',
    [ACTIVE_JOB_STATES],
  );
  const counted = new Map(res.rows.map((row) => [row.state, row.n]));
  return ACTIVE_JOB_STATES.map((state) => ({ state, jobs: counted.get(state) ?? 0 }));
}

export interface JobFilter {
  state?: CleanupJobState;
  taskId?: string;
  trigger?: CleanupTrigger;
}

/** Jobs newest first, with the filters given. */
export async function listJobs(db: Db, filter: JobFilter, page: PageOf) {
  return newestFirst<CleanupJobRow>(
    db,
    {
      columns: JOB_COLUMNS,
      table: 'cleanup_jobs',
      time: 'created_at',
      key: 'operation_id',
      keyType: 'uuid',
      equal: { state: filter.state, task_id: filter.taskId, trigger: filter.trigger },
    },
    page,
  );
}

/** The workflow writes every state change here, so the row and the workflow tell one story. */
export async function recordJobState(
  db: Db,
  operationId: string,
  change: {
    state: CleanupJobState;
    attempts: number;
    nextAttemptAt: string | null;
    lastError: CleanupErrorClass | null;
    report: CleanupReport;
  },
): Promise<void> {
  await db.query(
    `UPDATE cleanup_jobs SET state = $2, attempts = $3, next_attempt_at = $4, last_error = $5, report = $6, updated_at = now(),
            finished_at = CASE WHEN $2 IN ('succeeded', 'cancelled') THEN now() ELSE NULL END
      WHERE operation_id = $1 AND state NOT IN ('succeeded', 'cancelled')`,
    [operationId, change.state, change.attempts, change.nextAttemptAt, change.lastError, JSON.stringify(change.report)],
  );
}

/**
 * A job's end in one statement: the task's sessions `stopped` (its agents were stopped by the
 * attempts), each inventory row's outcome (`deleted`; `kept` and `abandoned` only for rows a
 * removed task's job took over), the environment `released` (unless still being created), and the
 * job's row. Each part updates rows no other part touches, so the one statement (atomic, one round
 * trip) does what the five did in their transaction.
 */
export async function finishJobRows(
  db: Db,
  input: {
    operationId: string;
    taskId: string;
    environmentId: string | null;
    /** Inventory row ids by their outcome; a row named twice keeps its first (deleted, kept, abandoned). */
    ledger: Record<'deleted' | 'kept' | 'abandoned', string[]>;
    state: 'succeeded' | 'cancelled';
    attempts: number;
    report: CleanupReport;
  },
): Promise<void> {
  const outcomes = new Map<string, string>();
  for (const status of ['deleted', 'kept', 'abandoned'] as const)
    for (const id of input.ledger[status]) if (!outcomes.has(id)) outcomes.set(id, status);
  await db.query(
    `WITH stopped AS (
       UPDATE sessions SET state = 'stopped', updated_at = now() WHERE task_id = $1 AND state IN ('starting', 'running')),
     inventory AS (
       UPDATE environment_repos r SET status = u.status, updated_at = now()
         FROM unnest($2::uuid[], $3::text[]) AS u(id, status)
        WHERE r.id = u.id AND r.status IN ('active', 'retained') AND (u.status = 'deleted' OR r.environment_id IS NULL)),
     released AS (
       UPDATE task_environments SET status = 'released', updated_at = now() WHERE id = $4::uuid AND status <> 'creating')
     UPDATE cleanup_jobs SET state = $5, attempts = $6, next_attempt_at = NULL, last_error = NULL, report = $7,
            updated_at = now(), finished_at = now()
      WHERE operation_id = $8 AND state NOT IN ('succeeded', 'cancelled')`,
    [
      input.taskId,
      [...outcomes.keys()],
      [...outcomes.values()],
      input.environmentId,
      input.state,
      input.attempts,
      JSON.stringify(input.report),
      input.operationId,
    ],
  );
}

/**
 * An attempt begins in one statement: the job is recorded `running` with its attempt counted, and
 * the attempt's hosts that are down (a record whose heartbeat is stale; a host that never
 * registered is not known to be down) are read beside it. Two round trips were one each.
 */
export async function beginAttempt(
  db: Db,
  operationId: string,
  change: { attempts: number; lastError: CleanupErrorClass | null; report: CleanupReport },
  hostIds: string[],
): Promise<string[]> {
  const res = await db.query<{ host_id: string }>(
    `WITH job AS (
       UPDATE cleanup_jobs SET state = 'running', attempts = $2, next_attempt_at = NULL, last_error = $3, report = $4,
              updated_at = now(), finished_at = NULL
        WHERE operation_id = $1 AND state NOT IN ('succeeded', 'cancelled'))
     SELECT host_id FROM hosts WHERE host_id = ANY($5::text[]) AND NOT (${LIVE})`,
    [operationId, change.attempts, change.lastError, JSON.stringify(change.report), hostIds],
  );
  return res.rows.map((r) => r.host_id);
}

/**
 * A batch claims the jobs it will carry out: pending ones (and, for a retried batch step, those
 * this same batch claimed before), each `running` with one attempt more. A job that is not
 * pending (cancelled meanwhile, taken by a run of its own) is not claimed: its own run decides it.
 */
export async function claimForBatch(db: Db, operationIds: string[], batchWorkflowId: string): Promise<CleanupJobRow[]> {
  const res = await db.query<CleanupJobRow>(
    `UPDATE cleanup_jobs SET state = 'running', attempts = attempts + 1, batch_workflow_id = $2, next_attempt_at = NULL, updated_at = now()
      WHERE operation_id = ANY($1::uuid[]) AND (state = 'pending' OR (state = 'running' AND batch_workflow_id = $2))
      RETURNING ${JOB_COLUMNS}`,
    [operationIds, batchWorkflowId],
  );
  return res.rows;
}

/**
 * The batch lets go of jobs it did not finish (an attempt failed, or its host step failed for
 * good): each waits for its own run, which counts its attempts on from the row.
 */
export async function releaseFromBatch(
  db: Db,
  operationIds: string[],
  batchWorkflowId: string,
  change: { lastError: CleanupErrorClass; report?: CleanupReport },
): Promise<void> {
  await db.query(
    `UPDATE cleanup_jobs SET batch_workflow_id = NULL, state = 'retry_wait', next_attempt_at = now(), last_error = $3, report = COALESCE($4::jsonb, report), updated_at = now()
      WHERE operation_id = ANY($1::uuid[]) AND batch_workflow_id = $2 AND state NOT IN ('succeeded', 'cancelled')`,
    [operationIds, batchWorkflowId, change.lastError, change.report ? JSON.stringify(change.report) : null],
  );
}

/** A claim whose batch workflow is no longer running is let go (the job's own run goes on). */
export async function dropBatchClaim(db: Db, operationId: string, batchWorkflowId: string): Promise<void> {
  await db.query(
    `UPDATE cleanup_jobs SET batch_workflow_id = NULL, updated_at = now() WHERE operation_id = $1 AND batch_workflow_id = $2 AND state NOT IN ('succeeded', 'cancelled')`,
    [operationId, batchWorkflowId],
  );
}
