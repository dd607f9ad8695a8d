import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchAgentActivities } from '../activities/launch-agent';
import { launchRecordActivities } from '../activities/launch-records';
import { hostTaskQueue, launchWorkflowId } from '../domain/workflow-ids';
import { OWNERSHIP_MARKER_FILE, taskBranchName, taskDirName } from '../domain/task-layout';
import { createHarness, type Harness } from './support/harness';
import { closedWorkflowIds } from './support/history-fixtures';
import { createTask, expectSafeError, launch, pidOf, registerRepo, waitUntil } from './support/scenario';
import {
  branches,
  commitOf,
  git,
  gitWrapper,
  killGroup,
  listDir,
  makeRepo,
  processAlive,
  processCwd,
  worktreePaths,
} from './support/world';

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

describe('first launch of a new task materializes the workspace [R1]', () => {
  it('a new workspace shows its size within seconds, long before the next measurement round (10 minutes here)', async () => {
    expect(h.config.diskMeasureEveryMs).toBeGreaterThanOrEqual(10 * 60_000);
    const repo = makeRepo(h.scratch, 'measured-soon');
    writeFileSync(path.join(repo, 'data.bin'), Buffer.alloc(256 * 1024, 7));
    git(repo, 'add', 'data.bin');
    git(repo, 'commit', '-q', '-m', 'data');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'measured-soon')]);
    const res = await launch(h, taskId);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    let disk: { bytes: number; measuredAt: string } | null = null;
    await waitUntil(
      async () => (disk = (await h.api('GET', `/v1/tasks/${taskId}`)).body.disk) !== null,
      "the new workspace's size in the task view",
      30_000,
      async () => disk,
    );
    // The checkout's file alone is 256 KiB.
    expect(disk!.bytes).toBeGreaterThan(256 * 1024);
  });

  it('creates exactly one worktree on a new task branch at the base commit, publishes the inventory and starts the agent there', async () => {
    const repo = makeRepo(h.scratch, 'alpha', { branches: ['develop'] });
    git(repo, 'checkout', '-q', 'develop');
    git(repo, 'commit', '-q', '--allow-empty', '-m', 'develop only');
    git(repo, 'checkout', '-q', 'main');
    const repoId = await registerRepo(h, repo, 'alpha');
    const taskId = await createTask(h, [{ repositoryId: repoId, baseBranch: 'develop' }]);
    const before = branches(repo);

    const res = await launch(h, taskId);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ role: 'materialized', state: 'running' });

    const expectedPath = path.join(h.config.workspaceRoot, taskDirName(taskId), 'alpha');
    // Exactly one new worktree, at the expected path, on a new branch equal to the base branch.
    expect(worktreePaths(repo)).toEqual([repo, expectedPath]);
    expect(branches(repo)).toEqual([...before, taskBranchName(taskId)].sort());
    expect(commitOf(repo, taskBranchName(taskId))).toBe(commitOf(repo, 'develop'));
    expect(git(expectedPath, 'symbolic-ref', '--short', 'HEAD')).toBe(taskBranchName(taskId));
    expect(commitOf(repo, 'develop')).not.toBe(commitOf(repo, 'main'));
    const marker = JSON.parse(
      readFileSync(path.join(h.config.workspaceRoot, taskDirName(taskId), OWNERSHIP_MARKER_FILE), 'utf8'),
    );
    expect(marker).toMatchObject({ taskId, environmentId: res.body.taskEnvironmentId });

    // The inventory is complete and the environment is ready.
    const env = (await h.pool.query('SELECT * FROM task_environments WHERE task_id = $1', [taskId])).rows;
    expect(env).toHaveLength(1);
    expect(env[0]).toMatchObject({
      id: res.body.taskEnvironmentId,
      status: 'ready',
      executor_type: 'worktree',
      workspace_path: expectedPath,
      materialized: true,
      materializer_session_id: res.body.sessionId,
    });
    const rows = (await h.pool.query('SELECT * FROM environment_repos WHERE environment_id = $1', [env[0].id])).rows;
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      repository_id: repoId,
      status: 'active',
      worktree_path: expectedPath,
      worktree_branch: taskBranchName(taskId),
      head_commit: commitOf(repo, 'develop'),
    });
    expect(rows[0].worktree_id).toBeTruthy();
    expect(existsSync(path.join(repo, '.git/worktrees', rows[0].worktree_id))).toBe(true);

    // The agent process is alive, in the worktree, and recorded with its identity.
    const pid = await pidOf(h, res.body.sessionId);
    expect(processAlive(pid)).toBe(true);
    expect(processCwd(pid)).toBe(expectedPath);
    const exec = (await h.pool.query('SELECT * FROM executions WHERE id = $1', [res.body.executionId])).rows[0];
    expect(exec).toMatchObject({
      session_id: res.body.sessionId,
      pid,
      cwd: expectedPath,
      status: 'running',
      host_id: h.config.hostId,
    });
    expect(exec.process_start_time).toMatch(/^\d+$/);
    const session = await h.api('GET', `/v1/sessions/${res.body.sessionId}`);
    expect(session.body).toMatchObject({
      id: res.body.sessionId,
      taskId,
      state: 'running',
      taskEnvironmentId: env[0].id,
      executorType: 'worktree',
      execution: { pid, hostId: h.config.hostId },
    });

    // The workspace view is the environment's.
    const ws = await h.api('GET', `/v1/sessions/${res.body.sessionId}/workspace`);
    expect(ws.body).toEqual({
      taskEnvironmentId: env[0].id,
      executorType: 'worktree',
      workspacePath: expectedPath,
      repositories: [{ repositoryId: repoId, worktreePath: expectedPath, branch: taskBranchName(taskId) }],
      source: 'environment',
    });

    // The task shows its environment and session.
    const task = await h.api('GET', `/v1/tasks/${taskId}`);
    expect(task.body.environment).toEqual({
      id: env[0].id,
      executorType: 'worktree',
      status: 'ready',
      hostId: h.config.hostId,
      ownerTaskId: taskId,
      borrowed: false,
      // Its repository asks for no copies and no setup.
      preparation: { setup: null, copied: null },
    });
    expect(task.body.sessions.map((s: any) => s.id)).toEqual([res.body.sessionId]);

    // The workflow history shows the steps, under a readable id with search attributes.
    const handle = h.temporal.workflow.getHandle(launchWorkflowId(res.body.sessionId));
    const history = await handle.fetchHistory();
    const scheduled = history
      .events!.filter((e) => e.activityTaskScheduledEventAttributes)
      .map((e) => e.activityTaskScheduledEventAttributes!.activityType!.name);
    // On this host's queue every step is a local activity of one workflow task: no queue trips.
    expect(history.events![0]!.workflowExecutionStartedEventAttributes!.taskQueue!.name).toBe(
      hostTaskQueue(h.config.taskQueue, h.config.hostId),
    );
    expect(scheduled).toEqual([]);
    const localActivities = history
      .events!.filter((e) => e.markerRecordedEventAttributes)
      .map((e) => {
        const data = e.markerRecordedEventAttributes!.details!.data!.payloads![0]!.data!;
        return JSON.parse(Buffer.from(data).toString()).activity_type;
      });
    expect(localActivities).toEqual(['admitLaunch', 'materializeAndLaunch']);
    const description = await handle.describe();
    expect(description.status.name).toBe('COMPLETED');
    expect(
      description.typedSearchAttributes
        .getAll()
        .filter((p) => p.key.name !== 'BuildIds')
        .map((p) => [p.key.name, p.value])
        .sort(),
    ).toEqual(
      [
        ['ExecutorType', 'worktree'],
        ['Phase', 'running'],
        ['SessionId', res.body.sessionId],
        ['TaskId', taskId],
      ].sort(),
    );
  });

  it('gives each repository of a multi-repository task its worktree under the task folder, and the agent works in the task folder', async () => {
    const repos = ['one', 'two', 'three'].map((name) => makeRepo(h.scratch, `multi-${name}`));
    const ids = await Promise.all(repos.map((repo, i) => registerRepo(h, repo, `multi-${['one', 'two', 'three'][i]}`)));
    const taskId = await createTask(h, ids);
    const res = await launch(h, taskId);
    expect(res.status, JSON.stringify(res.body)).toBe(201);

    const folder = path.join(h.config.workspaceRoot, taskDirName(taskId));
    expect(listDir(folder)).toEqual([OWNERSHIP_MARKER_FILE, 'multi-one', 'multi-three', 'multi-two']);
    for (const [i, repo] of repos.entries()) {
      const wt = path.join(folder, path.basename(repo));
      expect(worktreePaths(repo)).toEqual([repo, wt]);
      expect(commitOf(wt, 'HEAD')).toBe(commitOf(repo, 'main'));
      expect(git(wt, 'symbolic-ref', '--short', 'HEAD')).toBe(taskBranchName(taskId));
      const row = (await h.pool.query('SELECT * FROM environment_repos WHERE repository_id = $1', [ids[i]])).rows;
      expect(row).toHaveLength(1);
      expect(row[0]).toMatchObject({ worktree_path: wt, position: i, status: 'active' });
    }
    const pid = await pidOf(h, res.body.sessionId);
    expect(processCwd(pid)).toBe(folder);
    const ws = await h.api('GET', `/v1/sessions/${res.body.sessionId}/workspace`);
    expect(ws.body.workspacePath).toBe(folder);
    expect(ws.body.repositories).toHaveLength(3);
  });

  it('lets exactly one of two concurrent first launches materialize; the other is refused workspace_preparing and leaves no session row', async () => {
    // A slow `git worktree add` (through the configured git binary) holds the first launch in `creating`.
    const slowGit = gitWrapper(h.scratch, { sleepOnWorktreeAdd: 2 });
    const slow = await createHarness({ gitBinary: slowGit });
    try {
      const repo = makeRepo(slow.scratch, 'race');
      const repoId = await registerRepo(slow, repo, 'race');
      const taskId = await createTask(slow, [repoId]);
      const [a, b] = await Promise.all([launch(slow, taskId), launch(slow, taskId)]);
      const statuses = [a.status, b.status].sort();
      expect(statuses).toEqual([201, 409]);
      const winner = a.status === 201 ? a : b;
      const loser = a.status === 201 ? b : a;
      expect(winner.body.role).toBe('materialized');
      expectSafeError(loser.body, 'workspace_preparing');
      expect(loser.body.error).toMatchObject({ recoverable: true, retryAfterMs: 1000, action: 'retry' });
      const sessions = (await slow.pool.query('SELECT id FROM sessions WHERE task_id = $1', [taskId])).rows;
      expect(sessions.map((s) => s.id)).toEqual([winner.body.sessionId]);
      expect(worktreePaths(repo)).toHaveLength(2);
      expect((await slow.api('GET', `/v1/sessions/${winner.body.sessionId}`)).body.execution.status).toBe('running');
    } finally {
      await slow.close();
    }
  });

  it('undoes a worktree git made but cannot read back: no worktree, no task branch, no folder, typed 409 [R1.4]', async () => {
    // git adds the worktree, then the read of its identity fails (through the configured git binary).
    const blind = await createHarness({
      gitBinary: gitWrapper(h.scratch, { failSubcommand: 'rev-parse --absolute-git-dir', failTimes: 1 }),
    });
    try {
      const repo = makeRepo(blind.scratch, 'unreadable');
      const taskId = await createTask(blind, [await registerRepo(blind, repo, 'unreadable')]);
      const before = branches(repo);
      const res = await launch(blind, taskId);
      expect(res.status).toBe(409);
      expectSafeError(res.body, 'workspace_materialization_failed');
      expect(worktreePaths(repo)).toEqual([repo]);
      expect(branches(repo)).toEqual(before);
      expect(existsSync(path.join(blind.config.workspaceRoot, taskDirName(taskId)))).toBe(false);
      // The next launch (git reads again) materializes afresh.
      const again = await launch(blind, taskId);
      expect(again.status, JSON.stringify(again.body)).toBe(201);
      expect(worktreePaths(repo)).toHaveLength(2);
    } finally {
      await blind.close();
    }
  });

  it('rolls back a launch whose worktree creation fails: nothing on disk, no branch, environment failed, typed 409', async () => {
    const good = makeRepo(h.scratch, 'fail-good');
    const bad = makeRepo(h.scratch, 'fail-bad', { branches: ['release'] });
    const goodId = await registerRepo(h, good, 'fail-good');
    const badId = await registerRepo(h, bad, 'fail-bad');
    const taskId = await createTask(h, [goodId, { repositoryId: badId, baseBranch: 'release' }]);
    git(bad, 'branch', '-D', 'release'); // the base branch vanishes after the task was created
    const before = { good: branches(good), bad: branches(bad) };

    const res = await launch(h, taskId);
    expect(res.status).toBe(409);
    expectSafeError(res.body, 'workspace_materialization_failed');

    expect(existsSync(path.join(h.config.workspaceRoot, taskDirName(taskId)))).toBe(false);
    expect(worktreePaths(good)).toEqual([good]);
    expect(worktreePaths(bad)).toEqual([bad]);
    expect(branches(good)).toEqual(before.good);
    expect(branches(bad)).toEqual(before.bad);
    const env = (await h.pool.query('SELECT status, materialized FROM task_environments WHERE task_id = $1', [taskId]))
      .rows;
    expect(env).toEqual([{ status: 'failed', materialized: false }]);
    expect(
      (
        await h.pool.query(
          'SELECT count(*)::int AS n FROM environment_repos er JOIN task_environments e ON e.id = er.environment_id WHERE e.task_id = $1',
          [taskId],
        )
      ).rows[0].n,
    ).toBe(0);
    expect(
      (
        await h.pool.query(
          'SELECT count(*)::int AS n FROM executions x JOIN sessions s ON s.id = x.session_id WHERE s.task_id = $1',
          [taskId],
        )
      ).rows[0].n,
    ).toBe(0);
    // A failed first launch leaves no session row [R1.4], whatever point it failed at (here after its first worktree).
    expect((await h.pool.query('SELECT id FROM sessions WHERE task_id = $1', [taskId])).rows).toEqual([]);
    expect(listDir(h.config.workspaceRoot)).not.toContain(taskDirName(taskId));

    // A failed environment that never materialized is re-elected once the cause is fixed.
    git(bad, 'branch', 'release');
    const again = await launch(h, taskId);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(again.body.role).toBe('materialized');
    expect(worktreePaths(bad)).toHaveLength(2);
  });

  it("never writes over a task folder marker it cannot read (it may be another task's): typed 409, the marker as it was, no worktree", async () => {
    const repo = makeRepo(h.scratch, 'unreadable-marker');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'unreadable-marker')]);
    const folder = path.join(h.config.workspaceRoot, taskDirName(taskId));
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, OWNERSHIP_MARKER_FILE), '{"kind":"task-workspaces/own');

    const res = await launch(h, taskId);
    expect(res.status).toBe(409);
    expectSafeError(res.body, 'workspace_materialization_failed');
    expect(readFileSync(path.join(folder, OWNERSHIP_MARKER_FILE), 'utf8')).toBe('{"kind":"task-workspaces/own');
    expect(worktreePaths(repo)).toEqual([repo]);
    expect(branches(repo)).toEqual(['main']);
  });

  it('a second launch on the ready workspace attaches to it and starts its own agent [R1.3]', async () => {
    const repo = makeRepo(h.scratch, 'attach-basic');
    const repoId = await registerRepo(h, repo, 'attach-basic');
    const taskId = await createTask(h, [repoId]);
    const first = await launch(h, taskId);
    const second = await launch(h, taskId);
    expect(second.status, JSON.stringify(second.body)).toBe(201);
    expect(second.body).toMatchObject({ role: 'attached', taskEnvironmentId: first.body.taskEnvironmentId });
    expect(second.body.executionId).not.toBe(first.body.executionId);
    const [p1, p2] = [await pidOf(h, first.body.sessionId), await pidOf(h, second.body.sessionId)];
    expect(p1).not.toBe(p2);
    expect(processCwd(p2)).toBe(processCwd(p1));
    expect(worktreePaths(repo)).toHaveLength(2);
  });

  it("a first launch's host step run again after a crash adopts its worktree, finds its inventory published and its agent started: one of each", async () => {
    const repo = makeRepo(h.scratch, 'rerun');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'rerun')]);
    const deps = { pool: h.pool, config: h.config, logger: pino({ level: 'silent' }) };
    const sessionId = randomUUID();
    const plan = await launchRecordActivities(deps).admitLaunch({
      sessionId,
      taskId,
      executorType: 'worktree',
      agentProfile: 'shell',
      command: ['sleep', '60'],
      name: null,
      hostId: h.config.hostId,
    });
    expect(plan.role).toBe('materialized');
    const input = {
      plan,
      command: ['sleep', '60'],
      executionId: randomUUID(),
      site: 'launch' as const,
      validate: false,
      markRunningFrom: ['starting' as const],
    };
    const { materializeAndLaunch } = launchAgentActivities(deps);

    const first = await materializeAndLaunch(input);
    const again = await materializeAndLaunch(input); // what a worker that died before recording the result re-runs
    expect(again).toEqual(first);
    expect(worktreePaths(repo)).toEqual([repo, plan.workspacePath]);
    expect(
      (await h.pool.query('SELECT status FROM task_environments WHERE id = $1', [plan.environmentId])).rows,
    ).toEqual([{ status: 'ready' }]);
    expect(
      (
        await h.pool.query(
          "SELECT count(*)::int AS n FROM environment_repos WHERE environment_id = $1 AND status = 'active'",
          [plan.environmentId],
        )
      ).rows[0].n,
    ).toBe(1);
    expect((await h.pool.query('SELECT id FROM executions WHERE session_id = $1', [sessionId])).rows).toEqual([
      { id: input.executionId },
    ]);
    expect((await h.pool.query('SELECT state FROM sessions WHERE id = $1', [sessionId])).rows[0].state).toBe('running');
    expect(processAlive(first.pid)).toBe(true);
    killGroup(first.pid);
  });
});

describe('a first launch whose agent cannot start [R1.4]', () => {
  it('answers 400 agent_command_not_startable and leaves nothing: no worktree, no branch, no active inventory row, the environment re-electable', async () => {
    const repo = makeRepo(h.scratch, 'no-agent');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'no-agent')]);
    const res = await launch(h, taskId, { command: ['/nonexistent/agent'] });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', reason: 'agent_command_not_startable' });
    expectSafeError(res.body, 'invalid_request');
    expect(worktreePaths(repo)).toEqual([repo]);
    expect(branches(repo)).toEqual(['main']);
    expect(
      (
        await h.pool.query(
          "SELECT count(*)::int AS n FROM environment_repos r JOIN task_environments e ON e.id = r.environment_id WHERE e.task_id = $1 AND r.status = 'active'",
          [taskId],
        )
      ).rows[0].n,
    ).toBe(0);
    expect(
      (await h.pool.query('SELECT status, materialized FROM task_environments WHERE task_id = $1', [taskId])).rows,
    ).toEqual([{ status: 'failed', materialized: false }]);
    expect(
      (
        await h.pool.query(
          'SELECT count(*)::int AS n FROM executions x JOIN sessions s ON s.id = x.session_id WHERE s.task_id = $1',
          [taskId],
        )
      ).rows[0].n,
    ).toBe(0);
    expect((await h.pool.query('SELECT id FROM sessions WHERE task_id = $1', [taskId])).rows).toEqual([]);
    // The workflow history keeps the evidence.
    const [failedRun] = await closedWorkflowIds(h.temporal, `WorkflowType = 'launchSession' AND TaskId = '${taskId}'`);
    expect((await h.temporal.workflow.getHandle(failedRun!).describe()).status.name).toBe('FAILED');
    // Re-electable: the next launch materializes afresh and runs.
    const again = await launch(h, taskId);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(again.body.role).toBe('materialized');
    expect(worktreePaths(repo)).toHaveLength(2);
  });
});
