/** Archive and delete through the API: barrier, snapshot, audited removal, branches, dirty work [R6]. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskBranchName, taskDirName } from '../domain/task-layout';
import { archive, deleteTask, waitForJob } from './support/cleanup';
import { createHarness, type Harness } from './support/harness';
import { createTask, expectSafeError, launch, pidOf, registerRepo } from './support/scenario';
import { branches, commitOf, git, makeRepo, processAlive, worktreePaths } from './support/world';

let h: Harness;
let n = 0;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

async function runningTask() {
  const name = `clean-${++n}`;
  const repo = makeRepo(h.scratch, name);
  const repoId = await registerRepo(h, repo, name);
  const taskId = await createTask(h, [repoId]);
  const first = await launch(h, taskId);
  expect(first.status, JSON.stringify(first.body)).toBe(201);
  const pid = await pidOf(h, first.body.sessionId);
  const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), name);
  return { repo, repoId, taskId, worktree, pid, sessionId: first.body.sessionId, envId: first.body.taskEnvironmentId };
}

describe('archive [R6.3, R6.6]', () => {
  it('stops the agent, removes the worktree, keeps the branch, and the job tells the story', async () => {
    const t = await runningTask();
    git(t.worktree, 'commit', '-q', '--allow-empty', '-m', 'agent work');
    const head = commitOf(t.worktree, 'HEAD');
    const accepted = await archive(h, t.taskId);
    expect(accepted.workflowId).toBe(`cleanup/archive/${t.taskId}/${accepted.operationId}`);
    // This engine (TEMPORAL_ADDRESS, headless) has no UI anyone named: no link to where nothing listens.
    expect(accepted.links).toEqual({});
    // 202 means the task is already archived and barred.
    expect((await h.api('GET', `/v1/tasks/${t.taskId}`)).body.state).toBe('archived');
    const job = await waitForJob(h, accepted.operationId);
    expect(job).toMatchObject({
      taskId: t.taskId,
      trigger: 'archive',
      state: 'succeeded',
      attempts: 1,
      lastError: null,
    });
    expect(job.report.worktrees).toEqual([{ repositoryId: t.repoId, worktreePath: t.worktree, outcome: 'removed' }]);
    expect(job.report.branches).toEqual([
      { repositoryId: t.repoId, branch: taskBranchName(t.taskId), outcome: 'kept' },
    ]);
    expect(processAlive(t.pid)).toBe(false);
    expect(existsSync(t.worktree)).toBe(false);
    expect(existsSync(path.dirname(t.worktree))).toBe(false);
    expect(worktreePaths(t.repo)).toEqual([t.repo]);
    expect(commitOf(t.repo, taskBranchName(t.taskId))).toBe(head);
    expect(
      (await h.pool.query('SELECT status FROM environment_repos WHERE environment_id = $1', [t.envId])).rows,
    ).toEqual([{ status: 'deleted' }]);
    expect((await h.pool.query('SELECT state FROM sessions WHERE id = $1', [t.sessionId])).rows[0].state).toBe(
      'stopped',
    );
    const progress = await h.temporal.workflow.getHandle(accepted.workflowId).query('progress');
    expect(progress).toMatchObject({ state: 'succeeded', attempts: 1 });
  });

  it('keeps a dirty worktree on disk and reports it; unarchive and launch give the same path back from the kept branch', async () => {
    const t = await runningTask();
    writeFileSync(path.join(t.worktree, 'wip.txt'), 'work in progress\n');
    const accepted = await archive(h, t.taskId);
    const job = await waitForJob(h, accepted.operationId);
    expect(job.report.worktrees).toEqual([{ repositoryId: t.repoId, worktreePath: t.worktree, outcome: 'kept_dirty' }]);
    expect(readFileSync(path.join(t.worktree, 'wip.txt'), 'utf8')).toBe('work in progress\n');
    const relaunchRefused = await launch(h, t.taskId);
    expect(relaunchRefused.status).toBe(409);
    expectSafeError(relaunchRefused.body, 'task_archived');

    const unarchived = await h.api('POST', `/v1/tasks/${t.taskId}/unarchive`);
    expect(unarchived.status).toBe(200);
    expect(unarchived.body.state).toBe('active');
    const again = await launch(h, t.taskId);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    await pidOf(h, again.body.sessionId);
    expect(readFileSync(path.join(t.worktree, 'wip.txt'), 'utf8')).toBe('work in progress\n');
    expect(worktreePaths(t.repo)).toEqual([t.repo, t.worktree]);
  });

  it('unarchive after a finished archive recreates the worktree from the kept branch at the same path', async () => {
    const t = await runningTask();
    git(t.worktree, 'commit', '-q', '--allow-empty', '-m', 'kept on the branch');
    const head = commitOf(t.worktree, 'HEAD');
    await waitForJob(h, (await archive(h, t.taskId)).operationId);
    expect(existsSync(t.worktree)).toBe(false);
    expect((await h.api('POST', `/v1/tasks/${t.taskId}/unarchive`)).status).toBe(200);
    const again = await launch(h, t.taskId);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(again.body.taskEnvironmentId).toBe(t.envId);
    await pidOf(h, again.body.sessionId);
    expect(commitOf(t.worktree, 'HEAD')).toBe(head);
    expect(git(t.worktree, 'symbolic-ref', '--short', 'HEAD')).toBe(taskBranchName(t.taskId));
  });
});

describe('tasks without a workspace', () => {
  it('archive and delete of a task that never launched answer 202 and finish at once', async () => {
    const name = `clean-${++n}`;
    const repoId = await registerRepo(h, makeRepo(h.scratch, name), name);
    for (const trigger of ['archive', 'delete'] as const) {
      const taskId = await createTask(h, [repoId]);
      const res =
        trigger === 'archive' ? await h.api('POST', `/v1/tasks/${taskId}/archive`, {}) : await deleteTask(h, taskId);
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      const job = await waitForJob(h, res.body.operationId);
      expect(job).toMatchObject({ trigger, state: 'succeeded', attempts: 1 });
      expect(job.report.worktrees).toEqual([]);
    }
  });
});

describe('delete [R6.6]', () => {
  it('refuses a dirty worktree with 409 before any change; with consent saves the work on a hidden ref and removes everything', async () => {
    const t = await runningTask();
    writeFileSync(path.join(t.worktree, 'README.md'), 'edited\n');
    writeFileSync(path.join(t.worktree, 'untracked.txt'), 'untracked\n');
    const refused = await deleteTask(h, t.taskId);
    expect(refused.status).toBe(409);
    expectSafeError(refused.body, 'task_delete_dirty_worktree');
    expect(refused.body.error.dirtyRepositories).toEqual([t.repoId]);
    // It names the consent and who may give it.
    expect(refused.body.error.message).toMatch(/discardChanges=true \(an operator token\)/);
    expect((await h.api('GET', `/v1/tasks/${t.taskId}`)).status).toBe(200);
    expect(processAlive(t.pid)).toBe(true);
    expect(
      Number((await h.pool.query('SELECT count(*) FROM cleanup_jobs WHERE task_id = $1', [t.taskId])).rows[0].count),
    ).toBe(0);

    const accepted = await deleteTask(h, t.taskId, 'discardChanges=true');
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    expect((await h.api('GET', `/v1/tasks/${t.taskId}`)).status).toBe(404);
    const job = await waitForJob(h, accepted.body.operationId);
    const saved = job.report.worktrees[0];
    expect(saved).toMatchObject({ repositoryId: t.repoId, outcome: 'saved_and_removed' });
    // The snapshot ref holds the files: tracked edits and untracked files.
    expect(git(t.repo, 'show', `${saved.savedRef}:README.md`)).toBe('edited');
    expect(git(t.repo, 'show', `${saved.savedRef}:untracked.txt`)).toBe('untracked');
    expect(existsSync(t.worktree)).toBe(false);
    expect(worktreePaths(t.repo)).toEqual([t.repo]);
    // The task branch had no commits of its own: contained in the base branch, so it is removed.
    expect(branches(t.repo)).toEqual(['main']);
    expect(job.report.branches).toEqual([
      { repositoryId: t.repoId, branch: taskBranchName(t.taskId), outcome: 'deleted_merged' },
    ]);
    expect(
      Number((await h.pool.query('SELECT count(*) FROM task_environments WHERE id = $1', [t.envId])).rows[0].count),
    ).toBe(0);
  });

  it('keeps an unmerged task branch and reports it', async () => {
    const t = await runningTask();
    git(t.worktree, 'commit', '-q', '--allow-empty', '-m', 'unique work');
    const head = commitOf(t.worktree, 'HEAD');
    const accepted = await deleteTask(h, t.taskId);
    expect(accepted.status).toBe(202);
    const job = await waitForJob(h, accepted.body.operationId);
    expect(job.report.branches).toEqual([
      { repositoryId: t.repoId, branch: taskBranchName(t.taskId), outcome: 'kept_unmerged' },
    ]);
    expect(commitOf(t.repo, taskBranchName(t.taskId))).toBe(head);
    expect(worktreePaths(t.repo)).toEqual([t.repo]);
  });
});
