/** Identity continuity across resume and restart [R2]: detached agents survive, pid AND start time identify them. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { findMarkedGroup } from '../executors/host/process-identity';
import { taskDirName } from '../domain/task-layout';
import { waitForJob } from './support/cleanup';
import { harnessesPerTest, OPERATOR_TOKEN, type Harness } from './support/harness';
import { expectReRunAfterTimeout, killableWorker } from './support/processes';
import { admittedSession, createTask, lastResumeRun, launch, pidOf, registerRepo, waitUntil } from './support/scenario';
import {
  branches,
  killGroup,
  makeRepo,
  processAlive,
  processCwd,
  slowGitStepBegun,
  worktreePaths,
} from './support/world';

const { harness, cleanups, scratch } = harnessesPerTest();

describe('restart', () => {
  it('agents survive a SIGKILLed worker; a new worker keeps their identity, workspace info and resume work', async () => {
    const h = await harness({}, { inProcessWorker: false });
    let worker: ChildProcess = h.spawnWorker();
    cleanups.push(() => void worker.kill('SIGKILL'));
    const repo = makeRepo(h.scratch, 'restart');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'restart')]);
    const a = await launch(h, taskId);
    const b = await launch(h, taskId);
    expect([a.status, b.status]).toEqual([201, 201]);
    const [pa, pb] = [await pidOf(h, a.body.sessionId), await pidOf(h, b.body.sessionId)];
    const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), 'restart');

    worker.kill('SIGKILL');
    await new Promise((r) => worker.once('exit', r));
    expect(processAlive(pa) && processAlive(pb)).toBe(true);
    worker = h.spawnWorker();

    for (const [s, pid] of [
      [a, pa],
      [b, pb],
    ] as const) {
      const session = await h.api('GET', `/v1/sessions/${s.body.sessionId}`);
      expect(session.body).toMatchObject({ state: 'running', execution: { pid, status: 'running' } });
      const ws = await h.api('GET', `/v1/sessions/${s.body.sessionId}/workspace`);
      expect(ws.body).toMatchObject({ workspacePath: worktree, source: 'environment' });
    }
    // Resume restarts the agent in exactly the environment's workspace, never the source checkout.
    const resumed = await h.api('POST', `/v1/sessions/${a.body.sessionId}/resume`);
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect(resumed.body.state).toBe('running');
    const newPid = resumed.body.execution.pid;
    expect(newPid).not.toBe(pa);
    expect(processAlive(pa)).toBe(false);
    expect(processCwd(newPid)).toBe(worktree);
    expect(processAlive(pb)).toBe(true);
    const history = await h.temporal.workflow.getHandle(await lastResumeRun(h, a.body.sessionId)).fetchHistory();
    expect(history.events!.length).toBeGreaterThan(0);
    // site="resume": b was running beside it.
    const metrics = await (await fetch(`${h.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/session_coresidency_admitted_total\{site="resume"\} 1/);
  });

  it('a recorded pid that now belongs to another process is not the agent: marked vanished, never signalled', async () => {
    const h = await harness({}, { inProcessWorker: false });
    let worker: ChildProcess = h.spawnWorker();
    cleanups.push(() => void worker.kill('SIGKILL'));
    const repo = makeRepo(h.scratch, 'reuse');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'reuse')]);
    const s = await launch(h, taskId);
    const agentPid = await pidOf(h, s.body.sessionId);
    worker.kill('SIGKILL');
    await new Promise((r) => worker.once('exit', r));
    // The agent dies and its pid is taken by an unrelated process (simulated: the record now names that pid).
    killGroup(agentPid);
    const stranger = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' });
    cleanups.push(() => killGroup(stranger.pid!));
    await h.pool.query('UPDATE executions SET pid = $2 WHERE session_id = $1', [s.body.sessionId, stranger.pid]);
    worker = h.spawnWorker();
    await waitUntil(
      async () => (await h.api('GET', `/v1/sessions/${s.body.sessionId}`)).body.execution.status === 'vanished',
      'the execution to be marked vanished',
    );
    expect((await h.api('GET', `/v1/sessions/${s.body.sessionId}`)).body.state).toBe('exited');
    expect((await h.api('POST', `/v1/sessions/${s.body.sessionId}/stop`)).status).toBe(200);
    const archived = await h.api('POST', `/v1/tasks/${taskId}/archive`, {});
    await waitForJob(h, archived.body.operationId);
    expect(processAlive(stranger.pid!)).toBe(true);
  });
});

describe('sessions never own files', () => {
  it('deleting every session removes nothing; a later session attaches to the retained workspace', async () => {
    const h = await harness();
    const repo = makeRepo(h.scratch, 'keep');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'keep')]);
    const a = await launch(h, taskId);
    const b = await launch(h, taskId);
    const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), 'keep');
    const before = { branches: branches(repo), worktrees: worktreePaths(repo) };
    for (const s of [a, b]) expect((await h.api('DELETE', `/v1/sessions/${s.body.sessionId}`)).status).toBe(204);
    expect((await h.api('GET', `/v1/tasks/${taskId}`)).body.sessions).toEqual([]);
    expect(existsSync(worktree)).toBe(true);
    expect(branches(repo)).toEqual(before.branches);
    expect(worktreePaths(repo)).toEqual(before.worktrees);
    const c = await launch(h, taskId);
    expect(c.status).toBe(201);
    expect(c.body).toMatchObject({ role: 'attached', taskEnvironmentId: a.body.taskEnvironmentId });
    expect(processCwd(await pidOf(h, c.body.sessionId))).toBe(worktree);
  });

  it('workspace info of a released environment says so, never the source checkout; the next launch materializes it again [R2.2]', async () => {
    const h = await harness();
    const repo = makeRepo(h.scratch, 'fallback');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'fallback')]);
    const a = await launch(h, taskId);
    await h.api('POST', `/v1/sessions/${a.body.sessionId}/stop`);
    const reset = await h.api('POST', `/v1/tasks/${taskId}/environment/reset`, undefined, OPERATOR_TOKEN);
    expect(reset.status).toBe(202);
    await waitForJob(h, reset.body.operationId);
    const released = await h.api('GET', `/v1/sessions/${a.body.sessionId}/workspace`);
    expect(released.body).toEqual({
      taskEnvironmentId: a.body.taskEnvironmentId,
      executorType: 'worktree',
      workspacePath: null,
      repositories: [],
      source: 'released',
    });
    const b = await launch(h, taskId);
    expect(b.body.role).toBe('materialized');
    const now = await h.api('GET', `/v1/sessions/${a.body.sessionId}/workspace`);
    expect(now.body).toMatchObject({
      workspacePath: path.join(h.config.workspaceRoot, taskDirName(taskId), 'fallback'),
      source: 'environment',
    });
  });
});

/**
 * A harness whose worker is a child process on a slowed git (for SIGKILL tests): `kill()` ends
 * the worker mid-step, `replace()` starts the next one, whose git is no longer slowed.
 */
async function crashHarness(slow: { sleepOnWorktreeAdd?: number; sleepOnWorktreeList?: number }) {
  const { gitWrapper, setGitSlow } = await import('./support/world');
  const dir = await scratch();
  const h = await harness({ gitBinary: gitWrapper(dir, slow) }, { inProcessWorker: false });
  const worker = killableWorker(h, cleanups);
  return {
    h,
    async kill() {
      await worker.kill();
      setGitSlow(h.config.gitBinary, false);
    },
    replace: worker.replace,
  };
}

/** Holds a session row (FOR NO KEY UPDATE): marking the session's state waits, inserting its execution does not. */
async function holdSessionRow(h: Harness, sessionId: string): Promise<() => Promise<void>> {
  const blocker = await h.pool.connect();
  cleanups.push(() => blocker.release());
  await blocker.query('BEGIN');
  await blocker.query('SELECT 1 FROM sessions WHERE id = $1 FOR NO KEY UPDATE', [sessionId]);
  return async () => {
    await blocker.query('ROLLBACK');
  };
}

describe('a worker that dies during a first launch', () => {
  it('is replaced: the new worker runs the launch again from its recorded admission, and the same request answers 201 with one worktree and one agent', async () => {
    const { h, kill, replace } = await crashHarness({ sleepOnWorktreeAdd: 2 });
    const repo = makeRepo(h.scratch, 'crash');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'crash')]);
    const pending = launch(h, taskId);
    const sessionId = await admittedSession(h, taskId);
    // Admitted, and its host step is inside `git worktree add` (the wrapper sleeps 2 s first):
    // the workflow task that ran both has not completed, so the history records neither.
    await slowGitStepBegun(h.config.gitBinary, 'add');
    await kill();
    replace();

    const res = await pending;
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ sessionId, role: 'materialized', state: 'running' });
    const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), 'crash');
    expect(worktreePaths(repo)).toEqual([repo, worktree]);
    expect(branches(repo).filter((b) => b !== 'main')).toHaveLength(1);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM sessions WHERE task_id = $1', [taskId])).rows[0].n).toBe(
      1,
    );
    expect((await h.pool.query('SELECT status FROM executions WHERE session_id = $1', [sessionId])).rows).toEqual([
      { status: 'running' },
    ]);
    expect(processCwd(await pidOf(h, sessionId!))).toBe(worktree);
    await expectReRunAfterTimeout(h, `launch/${sessionId}`);
  });
});

describe('a worker that dies during an executor transition', () => {
  it('is replaced: the re-run finds the environment rebound by its own launch and answers 201', async () => {
    const { h, kill, replace } = await crashHarness({ sleepOnWorktreeAdd: 2 });
    const repo = makeRepo(h.scratch, 'transition-crash');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'transition-crash')]);
    const first = await launch(h, taskId, { executorType: 'local' });
    expect(first.status).toBe(201);
    const envId = first.body.taskEnvironmentId;
    const generation = (await h.pool.query('SELECT ownership_generation FROM task_environments WHERE id = $1', [envId]))
      .rows[0].ownership_generation;

    const pending = launch(h, taskId, { executorType: 'worktree' });
    let sessionId: string | undefined;
    await waitUntil(async () => {
      sessionId = (
        await h.pool.query('SELECT id FROM sessions WHERE task_id = $1 AND id <> $2', [taskId, first.body.sessionId])
      ).rows[0]?.id;
      return sessionId !== undefined;
    }, 'the transition to be admitted');
    // Its worktree takes 2 s to create; holding the session row then stops it right after the
    // rebind, before the session is marked running.
    const release = await holdSessionRow(h, sessionId!);
    await waitUntil(
      async () =>
        (await h.pool.query('SELECT executor_type FROM task_environments WHERE id = $1', [envId])).rows[0]
          .executor_type === 'worktree',
      'the rebind',
    );
    await kill();
    await release();
    replace();

    const res = await pending;
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ sessionId, role: 'transitioned', state: 'running', taskEnvironmentId: envId });
    const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), 'transition-crash');
    expect(
      (
        await h.pool.query(
          'SELECT executor_type, workspace_path, ownership_generation FROM task_environments WHERE id = $1',
          [envId],
        )
      ).rows[0],
    ).toEqual({
      executor_type: 'worktree',
      workspace_path: worktree,
      ownership_generation: generation + 1,
    });
    expect((await h.pool.query('SELECT status FROM executions WHERE session_id = $1', [sessionId])).rows).toEqual([
      { status: 'running' },
    ]);
    expect(processCwd(await pidOf(h, sessionId!))).toBe(worktree);
    expect(worktreePaths(repo)).toEqual([repo, worktree]);
    await expectReRunAfterTimeout(h, `launch/${sessionId}`);
  });
});

describe('a worker that dies during a resume', () => {
  it('is replaced: the re-run keeps the agent the first run started instead of stopping it as a previous one', async () => {
    // The resume's validation (`git worktree list`) takes 2 s: time to take the lock below.
    const { h, kill, replace } = await crashHarness({ sleepOnWorktreeList: 2 });
    const repo = makeRepo(h.scratch, 'resume-crash');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'resume-crash')]);
    const s = await launch(h, taskId);
    const first = s.body.executionId;
    const pending = h.api('POST', `/v1/sessions/${s.body.sessionId}/resume`);
    // Once the resume was admitted (and counted), hold the session row: the resume then stops right
    // after its agent started, since the transaction that records the start (and moves the session
    // to running) waits for this lock; the agent itself runs already, known by its spawn intent
    // and its mark, with no execution row committed.
    await waitUntil(
      async () =>
        (await h.pool.query('SELECT admitted_run FROM sessions WHERE id = $1', [s.body.sessionId])).rows[0]
          .admitted_run !== null,
      'the resume admitted',
    );
    const release = await holdSessionRow(h, s.body.sessionId);
    let started: { id: string; pid: number } | undefined;
    await waitUntil(async () => {
      const intent = (
        await h.pool.query('SELECT execution_id FROM spawn_intents WHERE session_id = $1 AND execution_id <> $2', [
          s.body.sessionId,
          first,
        ])
      ).rows[0];
      const marked = intent ? await findMarkedGroup(intent.execution_id) : null;
      started = marked?.leader ? { id: intent.execution_id, pid: marked.leader.pid } : undefined;
      return started !== undefined;
    }, "the resume's agent");
    await kill();
    await release();
    replace();

    const res = await pending;
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      state: 'running',
      execution: { id: started!.id, pid: started!.pid, status: 'running' },
    });
    expect(processAlive(started!.pid)).toBe(true);
    expect(
      (
        await h.pool.query('SELECT id, status FROM executions WHERE session_id = $1 ORDER BY started_at', [
          s.body.sessionId,
        ])
      ).rows,
    ).toEqual([
      { id: first, status: 'stopped' },
      { id: started!.id, status: 'running' },
    ]);
    await expectReRunAfterTimeout(h, await lastResumeRun(h, s.body.sessionId));
    killGroup(started!.pid);
  });
});

describe('stopping a session that is still starting', () => {
  it('cancels its launch, which undoes what it made: no worktree, branch, agent or row is left behind the deleted session', async () => {
    const { gitWrapper } = await import('./support/world');
    const dir = await scratch();
    const h = await harness({ gitBinary: gitWrapper(dir, { sleepOnWorktreeAdd: 2 }) });
    const repo = makeRepo(h.scratch, 'starting');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'starting')]);
    const marker = String(70000 + Math.floor(Math.random() * 9999));
    const pending = launch(h, taskId, { command: ['sleep', marker] });
    const sessionId = await admittedSession(h, taskId);
    const deleted = await h.api('DELETE', `/v1/sessions/${sessionId}`);
    expect(deleted.status).toBe(204);
    const launched = await pending;
    expect(launched.status, JSON.stringify(launched.body)).toBe(409);
    // The contract's rule for it, as the wire carries it: not recoverable, nothing to do.
    expect(launched.body.error).toMatchObject({ code: 'launch_cancelled', recoverable: false, action: 'none' });
    expect((await h.pool.query('SELECT pid FROM executions')).rows).toEqual([]);
    expect((await h.pool.query('SELECT id FROM sessions WHERE task_id = $1', [taskId])).rows).toEqual([]);
    expect(
      (await h.pool.query("SELECT count(*)::int AS n FROM environment_repos WHERE status = 'active'")).rows[0].n,
    ).toBe(0);
    expect(worktreePaths(repo)).toEqual([repo]);
    expect(branches(repo)).toEqual(['main']);
    // The run ended cancelled-and-undone, and the session tells it.
    expect((await h.api('GET', `/v1/sessions/${sessionId}`)).body).toMatchObject({
      id: sessionId,
      taskId,
      state: 'cancelled',
      execution: null,
      error: { code: 'launch_cancelled' },
    });
    // The agent the launch started was stopped before its session was forgotten.
    const { readdirSync, readFileSync } = await import('node:fs');
    const running = readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').join(' ').trim() === `sleep ${marker}`;
        } catch {
          return false;
        }
      });
    expect(running).toEqual([]);
  });
});
