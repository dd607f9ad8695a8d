/**
 * Every step idempotent by its own id: a process that dies after a step's effect and
 * before the engine recorded it leaves a re-run that continues, never a refusal of its own work
 * or a second agent. The death is real (SIGKILL); the moment is held by the test's database.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { archive, waitForJob } from './support/cleanup';
import { harnessesPerTest, type Harness } from './support/harness';
import { createTask, registerRepo, send, SLEEPER, waitUntil } from './support/scenario';
import {
  expectReRunAfterTimeout,
  killableWorker,
  killLiveAgents,
  liveAgents,
  startedAgents,
  runTemporalDevServer,
} from './support/processes';
import { gitWrapper, makeRepo, setGitSlow, worktreePaths } from './support/world';

const { harness, cleanups, scratch } = harnessesPerTest();

/**
 * Holds every transaction that writes `table` (the trigger loops while the hold stands): at the
 * INSERT itself (`statement`: the writer dies with its transaction open, which rolls back) or at
 * COMMIT (`commit`: the writer dies while its commit is under way, which then completes).
 */
async function holdWrites(h: Harness, table: string, at: 'statement' | 'commit') {
  await h.pool.query('CREATE TABLE IF NOT EXISTS test_hold (id int PRIMARY KEY)');
  await h.pool.query('INSERT INTO test_hold VALUES (1) ON CONFLICT DO NOTHING');
  await h.pool.query(`CREATE OR REPLACE FUNCTION test_hold_fn() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN WHILE EXISTS (SELECT 1 FROM test_hold) LOOP PERFORM pg_sleep(0.05); END LOOP; RETURN NEW; END $$`);
  await h.pool.query(
    at === 'commit'
      ? `CREATE CONSTRAINT TRIGGER test_hold AFTER INSERT ON ${table} DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_hold_fn()`
      : `CREATE TRIGGER test_hold BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION test_hold_fn()`,
  );
  return {
    async held() {
      await waitUntil(
        async () =>
          (
            await h.pool.query(
              "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'",
            )
          ).rowCount! > 0,
        `a write to ${table} held`,
      );
    },
    async release() {
      await h.pool.query('DELETE FROM test_hold');
      await h.pool.query(`DROP TRIGGER IF EXISTS test_hold ON ${table}`);
    },
  };
}

const agentsOf = (sessionId: string): number[] => liveAgents({ sessionId }).map((a) => a.pid);
const killAgentsOf = (sessionId: string) => killLiveAgents({ sessionId });
const post = (baseUrl: string, route: string, body: unknown, key?: string) =>
  send(baseUrl, 'POST', route, body, { key });

async function taskWithWorktree(h: Harness, name: string, extra: Record<string, unknown> = {}) {
  const repo = makeRepo(h.scratch, name);
  const taskId = await createTask(h, [await registerRepo(h, repo, name)], extra);
  const res = await post(h.baseUrl, `/v1/tasks/${taskId}/sessions`, {
    executorType: 'worktree',
    agentProfile: 'shell',
    command: SLEEPER,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { repo, taskId, sessionId: res.body.sessionId as string };
}

describe('a cleanup whose preparation committed while its worker died', () => {
  it('is continued by the re-run under the same operation id: 202, one job, succeeded, the worktree gone', async () => {
    const h = await harness({}, { inProcessWorker: false });
    const worker = killableWorker(h, cleanups);
    const t = await taskWithWorktree(h, 'prep-rerun');
    const hold = await holdWrites(h, 'cleanup_jobs', 'commit');
    const pending = h.api('POST', `/v1/tasks/${t.taskId}/archive`, {});
    await hold.held();
    await worker.kill();
    // The commit completes after its worker is gone: barrier, snapshot and archived task are
    // written, and the engine never heard of it.
    await hold.release();
    await waitUntil(
      async () =>
        (await h.pool.query("SELECT 1 FROM cleanup_jobs WHERE task_id = $1 AND state = 'pending'", [t.taskId]))
          .rowCount === 1,
      'the committed preparation',
    );
    worker.replace();

    const accepted = await pending;
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    const job = await waitForJob(h, accepted.body.operationId, ['succeeded'], 90_000);
    expect(job).toMatchObject({ state: 'succeeded', lastError: null });
    expect(worktreePaths(t.repo)).toEqual([t.repo]);
    expect(agentsOf(t.sessionId)).toEqual([]);
    expect(
      (await h.pool.query('SELECT count(*)::int AS n FROM cleanup_jobs WHERE task_id = $1', [t.taskId])).rows[0].n,
    ).toBe(1);
    // The row says succeeded a moment before its run completes: wait for the run, then read it.
    await h.temporal.workflow.getHandle(accepted.body.workflowId).result();
    expect((await h.temporal.workflow.getHandle(accepted.body.workflowId).describe()).status.name).toBe('COMPLETED');
    await expectReRunAfterTimeout(h, accepted.body.workflowId);
  });

  it('a cascade re-run continues with the members it prepared, although its tree is archived by then', async () => {
    const h = await harness({}, { inProcessWorker: false });
    const worker = killableWorker(h, cleanups);
    const parent = await taskWithWorktree(h, 'cascade-parent');
    const child = await taskWithWorktree(h, 'cascade-child', { parentTaskId: parent.taskId });
    const hold = await holdWrites(h, 'cleanup_jobs', 'commit');
    const pending = h.api('POST', `/v1/tasks/${parent.taskId}/archive`, { cascade: true });
    await hold.held();
    await worker.kill();
    await hold.release();
    await waitUntil(
      async () => (await h.pool.query("SELECT 1 FROM cleanup_jobs WHERE state = 'pending'")).rowCount === 2,
      'the committed preparation',
    );
    worker.replace();

    const accepted = await pending;
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    const jobs = (await h.pool.query('SELECT operation_id FROM cleanup_jobs')).rows;
    expect(jobs).toHaveLength(2);
    for (const j of jobs) await waitForJob(h, j.operation_id, ['succeeded'], 90_000);
    expect(worktreePaths(parent.repo)).toEqual([parent.repo]);
    expect(worktreePaths(child.repo)).toEqual([child.repo]);
    expect((await h.api('GET', `/v1/tasks/${child.taskId}`)).body.state).toBe('archived');
    await expectReRunAfterTimeout(h, accepted.body.workflowId);
  });
});

describe('an agent spawned by a process that died before recording it', () => {
  it('is adopted by the re-run, never started twice; a client retrying with the same Idempotency-Key gets that one session', async () => {
    const h = await harness({}, { inProcessWorker: false });
    killableWorker(h, cleanups);
    const gateway = await h.spawnGateway(); // runs the launches it starts (eager)
    const repo = makeRepo(h.scratch, 'spawn-once');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'spawn-once')]);
    const hold = await holdWrites(h, 'executions', 'statement');
    const key = randomUUID();
    const body = { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER };
    const lost = post(gateway.url, `/v1/tasks/${taskId}/sessions`, body, key).catch((err: Error) => err);
    await hold.held();
    const sessionId = (await h.pool.query('SELECT id FROM sessions WHERE task_id = $1', [taskId])).rows[0].id as string;
    cleanups.push(() => killAgentsOf(sessionId));
    // The agent runs; its record is inside a transaction that dies with the gateway.
    const spawned = (await startedAgents({ sessionId }, 1)).map((a) => a.pid);
    gateway.child.kill('SIGKILL');
    await new Promise((r) => gateway.child.once('exit', r));
    expect(await lost).toBeInstanceOf(Error); // the client saw the connection drop, not an answer
    await hold.release();

    // The client retries, with the same key, through another gateway; the worker re-runs the launch.
    const retried = await post(h.baseUrl, `/v1/tasks/${taskId}/sessions`, body, key);
    expect(retried.status, JSON.stringify(retried.body)).toBe(201);
    expect(retried.body).toMatchObject({ sessionId, role: 'materialized', state: 'running' });
    expect(agentsOf(sessionId)).toEqual(spawned);
    const execs = (await h.pool.query('SELECT id, pid, status FROM executions WHERE session_id = $1', [sessionId]))
      .rows;
    expect(execs).toEqual([{ id: retried.body.executionId, pid: spawned[0], status: 'running' }]);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM spawn_intents')).rows[0].n).toBe(0);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM sessions WHERE task_id = $1', [taskId])).rows[0].n).toBe(
      1,
    );
    await expectReRunAfterTimeout(h, `launch/${sessionId}`);

    // And the task's cleanup stops exactly that agent before its worktree goes.
    const accepted = await archive(h, taskId);
    await waitForJob(h, accepted.operationId, ['succeeded'], 60_000);
    expect(agentsOf(sessionId)).toEqual([]);
    expect(worktreePaths(repo)).toEqual([repo]);
  });

  it('a cleanup that finds only the intent stops the unrecorded agent by its mark', async () => {
    const h = await harness({}, { inProcessWorker: false });
    const worker = killableWorker(h, cleanups);
    const repo = makeRepo(h.scratch, 'intent-only');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'intent-only')]);
    const hold = await holdWrites(h, 'executions', 'statement');
    const lost = h.api('POST', `/v1/tasks/${taskId}/sessions`, {
      executorType: 'worktree',
      agentProfile: 'shell',
      command: SLEEPER,
    });
    await hold.held();
    const sessionId = (await h.pool.query('SELECT id FROM sessions WHERE task_id = $1', [taskId])).rows[0].id as string;
    cleanups.push(() => killAgentsOf(sessionId));
    await startedAgents({ sessionId }, 1);
    await worker.kill();
    await hold.release();
    // No worker runs: the launch cannot re-run yet. Its launch is terminated by an operator, and the
    // task archived: the snapshot holds the intent, and the cleanup stops what the mark names.
    await h.temporal.workflow.getHandle(`launch/${sessionId}`).terminate('operator');
    await lost;
    expect((await h.pool.query('SELECT count(*)::int AS n FROM spawn_intents')).rows[0].n).toBe(1);
    worker.replace();
    const accepted = await archive(h, taskId);
    const job = await waitForJob(h, accepted.operationId, ['succeeded'], 60_000);
    expect(job.report.processesStopped).toBe(1);
    expect(agentsOf(sessionId)).toEqual([]);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM spawn_intents')).rows[0].n).toBe(0);
  });
});

describe('Idempotency-Key', () => {
  it('the same key returns the same session, never a second; another request under it is a 400 that changes nothing', async () => {
    const h = await harness();
    const repo = makeRepo(h.scratch, 'idem');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'idem')]);
    const body = { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER };
    const key = randomUUID();
    const first = await post(h.baseUrl, `/v1/tasks/${taskId}/sessions`, body, key);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const again = await post(h.baseUrl, `/v1/tasks/${taskId}/sessions`, body, key);
    expect(again).toEqual(first);
    const other = await post(h.baseUrl, `/v1/tasks/${taskId}/sessions`, { ...body, command: ['sleep', '700'] }, key);
    expect(other.status).toBe(400);
    expect(other.body.error.code).toBe('invalid_request');
    const bad = await post(h.baseUrl, `/v1/tasks/${taskId}/sessions`, body, 'x'.repeat(201));
    expect(bad.status).toBe(400);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM sessions WHERE task_id = $1', [taskId])).rows[0].n).toBe(
      1,
    );
    expect((await h.pool.query('SELECT count(*)::int AS n FROM executions')).rows[0].n).toBe(1);

    // A resume under one key restarts the agent once.
    const resumeKey = randomUUID();
    const resumed = await post(h.baseUrl, `/v1/sessions/${first.body.sessionId}/resume`, {}, resumeKey);
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    const resumedAgain = await post(h.baseUrl, `/v1/sessions/${first.body.sessionId}/resume`, {}, resumeKey);
    expect(resumedAgain.body.execution).toEqual(resumed.body.execution);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM executions')).rows[0].n).toBe(2);
    expect(
      (await h.pool.query('SELECT resume_count FROM sessions WHERE id = $1', [first.body.sessionId])).rows[0]
        .resume_count,
    ).toBe(1);
  });
});

describe('the engine killed during a first launch', () => {
  it('answers 503 engine_unavailable with the session and outcome pending, never a 500; the same Idempotency-Key then gets that one session', async () => {
    const { freePort } = await import('./support/harness');
    const dir = await scratch();
    const port = await freePort();
    const db = `${dir}/temporal.sqlite`;
    let server = await runTemporalDevServer(port, db);
    cleanups.push(() => void server.kill('SIGKILL'));
    const h = await harness(
      { gitBinary: gitWrapper(dir, { sleepOnWorktreeAdd: 3 }) },
      { temporalAddress: `127.0.0.1:${port}` },
    );
    const repo = makeRepo(h.scratch, 'engine-killed');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'engine-killed')]);
    const key = randomUUID();
    const body = { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER };
    const pending = post(h.baseUrl, `/v1/tasks/${taskId}/sessions`, body, key);
    const { admittedSession } = await import('./support/scenario');
    const sessionId = await admittedSession(h, taskId);
    cleanups.push(() => killAgentsOf(sessionId));
    server.kill('SIGKILL');
    await new Promise((r) => server.once('exit', r));
    setGitSlow(h.config.gitBinary, false); // what follows at git's own pace

    const cut = await pending;
    expect(cut.status, JSON.stringify(cut.body)).toBe(503);
    expect(cut.body.error).toMatchObject({
      code: 'engine_unavailable',
      recoverable: true,
      sessionId,
      outcome: 'pending',
    });

    server = await runTemporalDevServer(port, db);
    const retried = await post(h.baseUrl, `/v1/tasks/${taskId}/sessions`, body, key);
    expect(retried.status, JSON.stringify(retried.body)).toBe(201);
    expect(retried.body).toMatchObject({ sessionId, state: 'running' });
    // On a time-out, what there was: the live agents and the records (none, or two, say different things).
    await waitUntil(async () => agentsOf(sessionId).length === 1, 'the agent').catch(async (err: Error) => {
      const rows = (await h.pool.query('SELECT pid, status FROM executions WHERE session_id = $1', [sessionId])).rows;
      throw new Error(`${err.message}: live ${JSON.stringify(agentsOf(sessionId))}, recorded ${JSON.stringify(rows)}`);
    });
    expect((await h.pool.query('SELECT pid FROM executions WHERE session_id = $1', [sessionId])).rows).toEqual([
      { pid: agentsOf(sessionId)[0] },
    ]);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM sessions WHERE task_id = $1', [taskId])).rows[0].n).toBe(
      1,
    );
  });
});
