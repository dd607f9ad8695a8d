/** Executor transition [R3]: nothing of the old environment is reused; rebinding is a compare-and-set after success. */
import { existsSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskBranchName, taskDirName } from '../domain/task-layout';
import { createHarness, OPERATOR_TOKEN, type Harness } from './support/harness';
import { createTask, expectLaunchRefused, expectSafeError, launch, pidOf, registerRepo } from './support/scenario';
import {
  fingerprint,
  git,
  gitWrapper,
  killGroup,
  makeRepo,
  processAlive,
  processCwd,
  rowCounts,
  worktreePaths,
} from './support/world';

let h: Harness;
let n = 0;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

async function taskOn(harness: Harness, executorType: 'worktree' | 'local') {
  const name = `tx-${++n}`;
  const repo = makeRepo(harness.scratch, name);
  const repoId = await registerRepo(harness, repo, name);
  const taskId = await createTask(harness, [repoId]);
  const first = await launch(harness, taskId, { executorType });
  expect(first.status, JSON.stringify(first.body)).toBe(201);
  const worktree = path.join(harness.config.workspaceRoot, taskDirName(taskId), name);
  return {
    repo,
    repoId,
    taskId,
    worktree,
    envId: first.body.taskEnvironmentId,
    firstPid: await pidOf(harness, first.body.sessionId),
  };
}

const envOf = async (harness: Harness, id: string) =>
  (
    await harness.pool.query(
      'SELECT executor_type, workspace_path, ownership_generation, status FROM task_environments WHERE id = $1',
      [id],
    )
  ).rows[0];
const rowsOf = async (harness: Harness, id: string) =>
  (
    await harness.pool.query(
      'SELECT executor_type, worktree_path, status FROM environment_repos WHERE environment_id = $1 ORDER BY created_at',
      [id],
    )
  ).rows;

describe('worktree → local', () => {
  it('runs in the validated source checkout, rebinds the environment, and keeps the old worktree untouched and known as retained', async () => {
    const t = await taskOn(h, 'worktree');
    const before = { worktree: fingerprint(t.worktree), repo: fingerprint(t.repo), env: await envOf(h, t.envId) };
    const res = await launch(h, t.taskId, { executorType: 'local' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ role: 'transitioned', taskEnvironmentId: t.envId });
    const pid = await pidOf(h, res.body.sessionId);
    expect(processCwd(pid)).toBe(t.repo);
    expect(await envOf(h, t.envId)).toEqual({
      executor_type: 'local',
      workspace_path: t.repo,
      ownership_generation: before.env.ownership_generation + 1,
      status: 'ready',
    });
    expect(await rowsOf(h, t.envId)).toEqual([
      { executor_type: 'worktree', worktree_path: t.worktree, status: 'retained' },
      { executor_type: 'local', worktree_path: null, status: 'active' },
    ]);
    expect(fingerprint(t.worktree)).toBe(before.worktree);
    expect(fingerprint(t.repo)).toBe(before.repo);
    expect(worktreePaths(t.repo)).toEqual([t.repo, t.worktree]);
    // The retained worktree is still the task's: the orphan sweep keeps it, however old (its
    // folder is named only by the retained row now), and cleanup removes it.
    const { utimesSync } = await import('node:fs');
    const longAgo = new Date(Date.now() - 48 * 3600_000);
    utimesSync(path.dirname(t.worktree), longAgo, longAgo);
    const sweep = await h.api('POST', '/v1/orphan-sweep', {}, OPERATOR_TOKEN);
    expect(sweep.status, JSON.stringify(sweep.body)).toBe(200);
    expect(sweep.body.removed).toEqual([]);
    expect(sweep.body.kept).toContainEqual(expect.objectContaining({ name: taskDirName(t.taskId), reason: 'live' }));
    expect(fingerprint(t.worktree)).toBe(before.worktree);
    const archived = await h.api('POST', `/v1/tasks/${t.taskId}/archive`, {});
    const { waitForJob } = await import('./support/cleanup');
    const job = await waitForJob(h, archived.body.operationId);
    expect(job.report.worktrees).toEqual([{ repositoryId: t.repoId, worktreePath: t.worktree, outcome: 'removed' }]);
    expect(worktreePaths(t.repo)).toEqual([t.repo]);
  });

  it('regression: the worktree folder was removed; a local launch runs in the source checkout, never in the removed path', async () => {
    const t = await taskOn(h, 'worktree');
    killGroup(t.firstPid);
    rmSync(t.worktree, { recursive: true, force: true });
    const res = await launch(h, t.taskId, { executorType: 'local' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const pid = await pidOf(h, res.body.sessionId);
    expect(processCwd(pid)).toBe(t.repo);
    expect(existsSync(t.worktree)).toBe(false);
    const exec = (await h.pool.query('SELECT cwd FROM executions WHERE session_id = $1', [res.body.sessionId])).rows[0];
    expect(exec.cwd).toBe(t.repo);
    const ws = await h.api('GET', `/v1/sessions/${res.body.sessionId}/workspace`);
    expect(ws.body).toMatchObject({ executorType: 'local', workspacePath: t.repo, source: 'environment' });
  });

  it('is refused before the agent starts when the source checkout is not a git checkout, and nothing is modified [R3.3, R3.4]', async () => {
    const t = await taskOn(h, 'worktree');
    const env = await envOf(h, t.envId);
    const rows = await rowsOf(h, t.envId);
    renameSync(path.join(t.repo, '.git'), path.join(t.repo, '.git-away'));
    try {
      const body = await expectLaunchRefused(h, t.taskId, 'workspace_reuse_unsafe', {
        body: { executorType: 'local' },
        watch: [t.repo, t.worktree],
      });
      expect(body.error.recoverable).toBe(true);
    } finally {
      renameSync(path.join(t.repo, '.git-away'), path.join(t.repo, '.git'));
    }
    expect(await envOf(h, t.envId)).toEqual(env);
    expect(await rowsOf(h, t.envId)).toEqual(rows);
    expect(processAlive(t.firstPid)).toBe(true);
  });
});

describe('local → worktree', () => {
  it('creates the worktree afresh and rebinds; the source checkout is untouched and its row retained', async () => {
    const t = await taskOn(h, 'local');
    const before = fingerprint(path.join(t.repo, 'README.md'));
    const res = await launch(h, t.taskId, { executorType: 'worktree' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.role).toBe('transitioned');
    expect(processCwd(await pidOf(h, res.body.sessionId))).toBe(t.worktree);
    expect(git(t.worktree, 'symbolic-ref', '--short', 'HEAD')).toBe(taskBranchName(t.taskId));
    expect(await envOf(h, t.envId)).toMatchObject({ executor_type: 'worktree', workspace_path: t.worktree });
    expect((await rowsOf(h, t.envId)).map((r) => [r.executor_type, r.status])).toEqual([
      ['local', 'retained'],
      ['worktree', 'active'],
    ]);
    expect(fingerprint(path.join(t.repo, 'README.md'))).toBe(before);
    expect(processCwd(t.firstPid)).toBe(t.repo);
  });

  it('is refused when the worktree cannot be created, leaving the environment as it was', async () => {
    const name = `tx-${++n}`;
    const repo = makeRepo(h.scratch, name, { branches: ['base'] });
    const taskId = await createTask(h, [{ repositoryId: await registerRepo(h, repo, name), baseBranch: 'base' }]);
    const first = await launch(h, taskId, { executorType: 'local' });
    expect(first.status).toBe(201);
    const env = await envOf(h, first.body.taskEnvironmentId);
    git(repo, 'branch', '-D', 'base');
    await expectLaunchRefused(h, taskId, 'workspace_materialization_failed', {
      body: { executorType: 'worktree' },
      watch: [repo],
    });
    expect(await envOf(h, first.body.taskEnvironmentId)).toEqual(env);
    expect(worktreePaths(repo)).toEqual([repo]);
  });

  it('a concurrent change of the environment makes the rebind fail workspace_reuse_unsafe instead of overwriting it', async () => {
    const slow = await createHarness({ gitBinary: gitWrapper(h.scratch, { sleepOnWorktreeAdd: 2 }) });
    try {
      const t = await taskOn(slow, 'local');
      const pending = launch(slow, t.taskId, { executorType: 'worktree' });
      // While the target worktree is being created, someone else changes the environment.
      let seen = false;
      for (let i = 0; i < 100 && !seen; i++) {
        seen =
          Number(
            (
              await slow.pool.query("SELECT count(*) FROM sessions WHERE task_id = $1 AND role = 'transitioned'", [
                t.taskId,
              ])
            ).rows[0].count,
          ) === 1;
        if (!seen) await new Promise((r) => setTimeout(r, 50));
      }
      await slow.pool.query(
        'UPDATE task_environments SET ownership_generation = ownership_generation + 1 WHERE id = $1',
        [t.envId],
      );
      const res = await pending;
      expect(res.status, JSON.stringify(res.body)).toBe(409);
      expect(res.body.error.code).toBe('workspace_reuse_unsafe');
      expect(res.body.error.reason).toBe('environment_changed');
      expect(await envOf(slow, t.envId)).toMatchObject({ executor_type: 'local', workspace_path: t.repo });
      expect((await rowsOf(slow, t.envId)).map((r) => [r.executor_type, r.status])).toEqual([['local', 'active']]);
      // Its agent was stopped and the worktree it created removed.
      const execs = (
        await slow.pool.query(
          "SELECT x.status FROM executions x JOIN sessions s ON s.id = x.session_id WHERE s.role = 'transitioned'",
        )
      ).rows;
      expect(execs.every((x) => x.status !== 'running')).toBe(true);
      expect(worktreePaths(t.repo)).toEqual([t.repo]);
      killGroup(t.firstPid);
    } finally {
      await slow.close();
    }
  });
});

describe('worktree → local → worktree', () => {
  it('comes back to the kept worktree: one row per folder, active again, the agent’s uncommitted file there', async () => {
    const t = await taskOn(h, 'worktree');
    killGroup(t.firstPid);
    const { writeFileSync, readFileSync } = await import('node:fs');
    writeFileSync(path.join(t.worktree, 'notes.txt'), 'kept across two transitions\n');
    const local = await launch(h, t.taskId, { executorType: 'local' });
    expect(local.status, JSON.stringify(local.body)).toBe(201);
    killGroup(await pidOf(h, local.body.sessionId));
    const back = await launch(h, t.taskId, { executorType: 'worktree' });
    expect(back.status, JSON.stringify(back.body)).toBe(201);
    expect(processCwd(await pidOf(h, back.body.sessionId))).toBe(t.worktree);
    expect(readFileSync(path.join(t.worktree, 'notes.txt'), 'utf8')).toBe('kept across two transitions\n');
    const rows = await rowsOf(h, t.envId);
    // Each folder is named by one row: the worktree's is active again, the source checkout's retained.
    expect(rows.filter((r) => r.worktree_path === t.worktree)).toEqual([
      { executor_type: 'worktree', worktree_path: t.worktree, status: 'active' },
    ]);
    expect(rows.filter((r) => r.status === 'active')).toHaveLength(1);
    expect(rows.filter((r) => r.executor_type === 'local').map((r) => r.status)).toEqual(['retained']);
    expect(worktreePaths(t.repo)).toEqual([t.repo, t.worktree]);
  });
});

describe('unsupported executors', () => {
  it('ssh with no target to run on is a 400 naming sshTargetId, and an executor this service does not offer (container without an engine) is a 400 saying so, before any side effect', async () => {
    const t = await taskOn(h, 'worktree');
    const before = { rows: await rowCounts(h.pool), files: [t.repo, t.worktree].map((d) => fingerprint(d)) };
    const noTarget = await launch(h, t.taskId, { executorType: 'ssh' });
    expect(noTarget.status, JSON.stringify(noTarget.body)).toBe(400);
    expectSafeError(noTarget.body, 'invalid_request', [t.repo, t.worktree]);
    expect(noTarget.body.error.message).toMatch(/^executorType ssh needs sshTargetId\b/);
    expect(await rowCounts(h.pool)).toEqual(before.rows);
    expect([t.repo, t.worktree].map((d) => fingerprint(d))).toEqual(before.files);
    const fresh = await createTask(h, [t.repoId]);
    // An executor this service does not offer (no container engine configured): a 400 that says so, nothing created.
    const rows = await rowCounts(h.pool);
    const container = await launch(h, fresh, { executorType: 'container' });
    expect(container.status, JSON.stringify(container.body)).toBe(400);
    expect(container.body.error.offered).toBe(false);
    const { offered: _offered, ...body } = container.body.error;
    expectSafeError({ error: body }, 'executor_unavailable', [t.repo]);
    expect(container.body.error.message).toMatch(/not offered by this service/);
    expect(await rowCounts(h.pool)).toEqual(rows);
    expect(
      Number((await h.pool.query('SELECT count(*) FROM task_environments WHERE task_id = $1', [fresh])).rows[0].count),
    ).toBe(0);
  });
});
