/**
 * The plans of the statements one attach launch runs, and of a list page, at the benchmark's
 * largest database: the statements are captured from the product's own functions (a recording
 * client), then each is run under EXPLAIN (ANALYZE, BUFFERS off, COSTS off) in a rolled-back
 * transaction.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { admitLaunch } from '../db/admission';
import { cleanupBarrierStands } from '../db/barrier';
import { canonicalEnvironmentOf } from '../db/environments';
import { findExecution, insertExecution } from '../db/executions';
import { moveSessionState } from '../db/sessions';
import { findTask, listTasks } from '../db/tasks';
import { AGENT_COMMAND } from './api';

/** activities/coresidency.ts runs this inline (no db/ function to call): copied verbatim. */
const CORESIDENCY_SIBLINGS_SQL = `SELECT id FROM sessions WHERE task_id = $1 AND id <> $2 AND state IN ('starting', 'running') ORDER BY id FOR SHARE`;

export interface ExplainedStatement {
  step: string;
  sql: string;
  plan: string;
  /** Tables read by a sequential scan in this plan. */
  seqScans: string[];
  /** Those of them holding 1,000 rows or more: a scan that grows with the database. */
  largeSeqScans: string[];
}

interface Captured {
  step: string;
  text: string;
  values: unknown[];
}

function recordingClient(client: pg.PoolClient, into: Captured[], step: () => string): pg.PoolClient {
  return new Proxy(client, {
    get(target, prop) {
      if (prop === 'query') {
        return (text: string, values?: unknown[]) => {
          into.push({ step: step(), text, values: values ?? [] });
          return target.query(text, values);
        };
      }
      const value: unknown = Reflect.get(target, prop);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** The statements of one attach launch on `taskId`, in the order the product runs them. */
async function captureAttachStatements(pool: pg.Pool, taskId: string, workspaceRoot: string): Promise<Captured[]> {
  const captured: Captured[] = [];
  let step = '';
  const client = await pool.connect();
  const db = recordingClient(client, captured, () => step);
  const sessionId = randomUUID();
  const executionId = randomUUID();
  try {
    await client.query('BEGIN');
    step = 'gateway: task exists';
    await findTask(db, taskId);
    step = 'admitLaunch: settle abandoned materializer';
    await canonicalEnvironmentOf(db, taskId);
    step = 'admitLaunch: admission transaction';
    const outcome = await admitLaunch(
      db,
      {
        sessionId,
        taskId,
        executorType: 'worktree',
        agentProfile: 'shell',
        command: AGENT_COMMAND,
        name: null,
        hostId: 'bench',
      },
      { newEnvironmentId: randomUUID() },
      workspaceRoot,
    );
    if (outcome.kind !== 'admitted' || outcome.plan.role !== 'attached')
      throw new Error('explain: the task must be ready for attach');
    step = 'observeCoresidency';
    await db.query(CORESIDENCY_SIBLINGS_SQL, [taskId, sessionId]);
    step = 'startAgent';
    await findExecution(db, executionId);
    await cleanupBarrierStands(db, [taskId, outcome.plan.environmentTaskId]);
    await insertExecution(db, {
      id: executionId,
      session_id: sessionId,
      host_id: 'bench',
      pid: 2,
      process_start_time: '0',
      cwd: outcome.plan.workspacePath,
      log_path: '/dev/null',
      status: 'exited',
    });
    step = 'markSessionRunning';
    await moveSessionState(db, sessionId, ['starting'], 'running');
  } finally {
    await client.query('ROLLBACK').catch(() => {});
    client.release();
  }
  return captured;
}

export async function explainAttachPath(
  pool: pg.Pool,
  taskId: string,
  workspaceRoot: string,
): Promise<ExplainedStatement[]> {
  return explainCaptured(pool, await captureAttachStatements(pool, taskId, workspaceRoot));
}

/** The statements of GET /v1/tasks: its second page of 50 (behind a cursor), unfiltered and of active tasks. */
export async function explainListPage(pool: pg.Pool): Promise<ExplainedStatement[]> {
  const captured: Captured[] = [];
  const client = await pool.connect();
  let step = '';
  const db = recordingClient(client, captured, () => step);
  try {
    const [first] = (await listTasks(client, {}, { limit: 50, after: null })).slice(-1);
    if (!first) throw new Error('explain: no tasks to list');
    const after = { at: first.exact_at, key: first.id };
    step = 'GET /v1/tasks: second page';
    await listTasks(db, {}, { limit: 51, after });
    step = 'GET /v1/tasks?archived=false: second page';
    await listTasks(db, { archived: false }, { limit: 51, after });
  } finally {
    client.release();
  }
  return explainCaptured(pool, captured);
}

async function explainCaptured(pool: pg.Pool, statements: Captured[]): Promise<ExplainedStatement[]> {
  const sizes = await tableSizes(pool);
  const client = await pool.connect();
  const out: ExplainedStatement[] = [];
  try {
    // In order and in one transaction, so each statement sees what the earlier ones wrote.
    await client.query('BEGIN');
    for (const s of statements) {
      const res = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (ANALYZE, BUFFERS off, COSTS off) ${s.text}`,
        s.values,
      );
      const plan = res.rows.map((r) => r['QUERY PLAN']).join('\n');
      const seqScans = [...new Set([...plan.matchAll(/Seq Scan on (\w+)/g)].map((m) => m[1]!))];
      out.push({
        step: s.step,
        sql: s.text.replace(/\s+/g, ' ').trim(),
        plan,
        seqScans,
        largeSeqScans: seqScans.filter((t) => (sizes[t] ?? 0) >= 1000),
      });
    }
  } finally {
    await client.query('ROLLBACK').catch(() => {});
    client.release();
  }
  return out;
}

export async function tableSizes(pool: pg.Pool): Promise<Record<string, number>> {
  const tables = [
    'repositories',
    'workspace_groups',
    'tasks',
    'task_repositories',
    'task_environments',
    'environment_repos',
    'sessions',
    'executions',
    'cleanup_jobs',
    'coresidency_observations',
  ];
  const sizes: Record<string, number> = {};
  for (const t of tables)
    sizes[t] = Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${t}`)).rows[0]!.n);
  return sizes;
}
