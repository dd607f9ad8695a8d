/** Cleanup under injected faults: bounded retries, needs_operator, operator retry, killed worker, restarted Temporal [R6.4, R6.8]. */
import { execFile, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitForPhase } from './support/phases';
import { runTemporalDevServer } from './support/processes';
import { archive, deleteTask, waitForJob } from './support/cleanup';
import { createHarness, freePort, OPERATOR_TOKEN, scratchFolder, USER_TOKEN, type Harness } from './support/harness';
import { createTask, expectSafeError, launch, registerRepo, waitUntil } from './support/scenario';
import { taskBranchName } from '../domain/task-layout';
import { clearGitFault, git, gitWrapper, makeRepo, setGitSlow, slowGitStepBegun, worktreePaths } from './support/world';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

async function harness(...args: Parameters<typeof createHarness>): Promise<Harness> {
  const h = await createHarness(...args);
  cleanups.push(() => h.close());
  return h;
}

async function taskWithWorktree(h: Harness, name: string) {
  const repo = makeRepo(h.scratch, name);
  const taskId = await createTask(h, [await registerRepo(h, repo, name)]);
  const res = await launch(h, taskId);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { repo, taskId };
}

describe('bounded retries through a failing git [R6.4]', () => {
  it('retries on the schedule and succeeds once the fault clears by itself', async () => {
    const dir = await scratchFolder(cleanups);
    const wrapper = gitWrapper(dir, { failSubcommand: 'worktree remove', failTimes: 2 });
    const h = await harness({ gitBinary: wrapper });
    const t = await taskWithWorktree(h, 'flaky');
    const accepted = await archive(h, t.taskId);
    const job = await waitForJob(h, accepted.operationId);
    expect(job).toMatchObject({ state: 'succeeded', attempts: 3, lastError: null });
    expect(worktreePaths(t.repo)).toEqual([t.repo]);
    const history = await h.temporal.workflow.getHandle(accepted.workflowId).fetchHistory();
    const timers = history
      .events!.filter((e) => e.timerStartedEventAttributes)
      .map(
        (e) =>
          Number(e.timerStartedEventAttributes!.startToFireTimeout!.seconds ?? 0) * 1000 +
          Math.round((e.timerStartedEventAttributes!.startToFireTimeout!.nanos ?? 0) / 1e6),
      );
    expect(timers).toEqual([200, 400]);
  });

  it('reaches needs_operator after the last attempt; only an operator retry gives it a fresh round, which succeeds once the fault is gone', async () => {
    const dir = await scratchFolder(cleanups);
    const wrapper = gitWrapper(dir, { failSubcommand: 'worktree remove', failTimes: 1000 });
    const h = await harness({ gitBinary: wrapper });
    const t = await taskWithWorktree(h, 'broken');
    const accepted = await archive(h, t.taskId);
    const stuck = await waitForJob(h, accepted.operationId, ['needs_operator']);
    expect(stuck).toMatchObject({
      state: 'needs_operator',
      attempts: 3,
      lastError: 'git_worktree_remove_failed',
      nextAttemptAt: null,
    });
    const progress = await h.temporal.workflow.getHandle(accepted.workflowId).query('progress');
    expect(progress).toMatchObject({ state: 'needs_operator', attempts: 3, lastError: 'git_worktree_remove_failed' });
    expect(existsSync(path.join(h.config.workspaceRoot, `task-${t.taskId}`, 'broken'))).toBe(true);
    expect(
      (await h.api('GET', '/v1/cleanup-jobs?state=needs_operator')).body.items.map((j: any) => j.operationId),
    ).toEqual([accepted.operationId]);
    // The launch barrier holds while the job waits.
    const barred = await launch(h, t.taskId);
    expect(barred.status).toBe(409);

    const forbidden = await h.api('POST', `/v1/cleanup-jobs/${accepted.operationId}/retry`, undefined, USER_TOKEN);
    expect(forbidden.status).toBe(403);
    expectSafeError(forbidden.body, 'forbidden', [USER_TOKEN, OPERATOR_TOKEN]);

    // A retry while the fault persists runs a fresh round of 3 attempts and stops again.
    expect(
      (await h.api('POST', `/v1/cleanup-jobs/${accepted.operationId}/retry`, undefined, OPERATOR_TOKEN)).status,
    ).toBe(202);
    await waitForJob(h, accepted.operationId, ['running', 'retry_wait']);
    const again = await waitForJob(h, accepted.operationId, ['needs_operator']);
    expect(again.attempts).toBe(6);

    clearGitFault(wrapper);
    // The operator CLI does the same as the route.
    // Not a synchronous child: the gateway it calls runs in this process.
    const { stdout: out } = await promisify(execFile)('bin/tws.mjs', ['retry', accepted.operationId], {
      env: { ...process.env, TWS_API_URL: h.baseUrl, TWS_OPERATOR_TOKEN: OPERATOR_TOKEN },
      encoding: 'utf8',
    });
    expect(out).toContain('retry requested');
    const done = await waitForJob(h, accepted.operationId);
    expect(done).toMatchObject({ state: 'succeeded', attempts: 7 });
    expect(worktreePaths(t.repo)).toEqual([t.repo]);
    const notRetryable = await h.api(
      'POST',
      `/v1/cleanup-jobs/${accepted.operationId}/retry`,
      undefined,
      OPERATOR_TOKEN,
    );
    expect(notRetryable.status).toBe(409);
    expectSafeError(notRetryable.body, 'cleanup_job_not_retryable');
  });

  it('a task branch that gains a commit after the delete read it is not deleted: the guarded deletion fails, the retry keeps it as unmerged', async () => {
    // The first `update-ref -d` of a task branch finds it moved on: a commit lands on it between
    // the turn's read (its commit, contained in main) and the deletion, as a push would.
    const dir = await scratchFolder(cleanups);
    const mark = path.join(dir, 'moved-commit');
    const wrapper = path.join(dir, 'git-moves-branch');
    writeFileSync(
      wrapper,
      `#!/usr/bin/env bash
if [ "$1" = "update-ref" ] && [ "$2" = "-d" ] && [ ! -e '${mark}' ]; then
  old=$(git rev-parse "$3")
  c=$(GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com git commit-tree "$old^{tree}" -p "$old" -m 'pushed meanwhile')
  git update-ref "$3" "$c" "$old"
  echo "$c" > '${mark}'
fi
exec git "$@"
`,
    );
    chmodSync(wrapper, 0o755);
    const h = await harness({ gitBinary: wrapper });
    const t = await taskWithWorktree(h, 'moving');
    const branch = taskBranchName(t.taskId);
    const deleted = await deleteTask(h, t.taskId);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(202);
    const job = await waitForJob(h, deleted.body.operationId);
    expect(job).toMatchObject({ state: 'succeeded', attempts: 2 });
    expect(job.report.branches).toEqual([expect.objectContaining({ branch, outcome: 'kept_unmerged' })]);
    // The commit that landed is on the branch, which is still there; the worktree is gone.
    const moved = readFileSync(mark, 'utf8').trim();
    expect(git(t.repo, 'rev-parse', `refs/heads/${branch}`)).toBe(moved);
    expect(worktreePaths(t.repo)).toEqual([t.repo]);
  });

  it('a task branch that cannot be read is never counted deleted: the job waits for an operator with branch_cleanup_failed, and their retry deletes it once git reads again', async () => {
    const dir = await scratchFolder(cleanups);
    const wrapper = gitWrapper(dir, {
      failSubcommand: 'for-each-ref --format=%(objectname) %(refname)',
      failTimes: 1000,
    });
    // No fault for the launch (it reads branches the same way): the counter starts past its limit.
    clearGitFault(wrapper);
    const h = await harness({ gitBinary: wrapper });
    const t = await taskWithWorktree(h, 'unreadable');
    const branch = taskBranchName(t.taskId);
    writeFileSync(`${wrapper}.count`, '0');
    const deleted = await deleteTask(h, t.taskId);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(202);
    const stuck = await waitForJob(h, deleted.body.operationId, ['needs_operator']);
    expect(stuck).toMatchObject({ state: 'needs_operator', attempts: 3, lastError: 'branch_cleanup_failed' });
    // The worktree is gone, the branch is not, and nothing says it was deleted.
    expect(worktreePaths(t.repo)).toEqual([t.repo]);
    expect(git(t.repo, 'branch', '--list', branch)).toContain(branch);
    expect(stuck.report.branches ?? []).not.toContainEqual(expect.objectContaining({ outcome: 'deleted_merged' }));

    clearGitFault(wrapper);
    expect(
      (await h.api('POST', `/v1/cleanup-jobs/${deleted.body.operationId}/retry`, undefined, OPERATOR_TOKEN)).status,
    ).toBe(202);
    const done = await waitForJob(h, deleted.body.operationId);
    expect(done.report.branches).toEqual([expect.objectContaining({ branch, outcome: 'deleted_merged' })]);
    expect(git(t.repo, 'branch', '--list', branch)).toBe('');
  });
});

describe('unarchive [R6]', () => {
  it('cancels a pending archive cleanup; the task is active and its workspace usable again', async () => {
    const dir = await scratchFolder(cleanups);
    const wrapper = gitWrapper(dir, { failSubcommand: 'worktree remove', failTimes: 1000 });
    const h = await harness({ gitBinary: wrapper, cleanupPolicy: { waitsMs: [60_000], maxAttempts: 8 } });
    const t = await taskWithWorktree(h, 'pending');
    const accepted = await archive(h, t.taskId);
    await waitForJob(h, accepted.operationId, ['retry_wait']);
    const unarchived = await h.api('POST', `/v1/tasks/${t.taskId}/unarchive`);
    expect(unarchived.status, JSON.stringify(unarchived.body)).toBe(200);
    expect(unarchived.body.state).toBe('active');
    const job = await waitForJob(h, accepted.operationId, ['cancelled']);
    expect(job).toMatchObject({ state: 'cancelled', attempts: 1 });
    expect(await h.temporal.workflow.getHandle(accepted.workflowId).result()).toMatchObject({ state: 'cancelled' });
    clearGitFault(wrapper);
    const again = await launch(h, t.taskId);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(worktreePaths(t.repo)).toHaveLength(2);
  });
});

describe('restarts in the middle of a cleanup [R6.4]', () => {
  it('a worker killed with SIGKILL mid-removal: a new worker finishes the cleanup, exactly once', async () => {
    const dir = await scratchFolder(cleanups);
    const wrapper = gitWrapper(dir, { sleepOnWorktreeRemove: 4 });
    const h = await harness({ gitBinary: wrapper }, { inProcessWorker: false });
    let worker: ChildProcess = h.spawnWorker();
    cleanups.push(async () => void worker.kill('SIGKILL'));
    const t = await taskWithWorktree(h, 'killed');
    const accepted = await archive(h, t.taskId);
    await waitForPhase(h, accepted.workflowId, 'cleaning');
    await slowGitStepBegun(wrapper, 'remove'); // killed inside the removal
    worker.kill('SIGKILL');
    await new Promise((r) => worker.once('exit', r));
    setGitSlow(wrapper, false); // the new worker's removal at git's own pace
    worker = h.spawnWorker();
    const job = await waitForJob(h, accepted.operationId, ['succeeded'], 120_000);
    expect(job.state).toBe('succeeded');
    expect(job.report.worktrees).toHaveLength(1);
    expect(worktreePaths(t.repo)).toEqual([t.repo]);
    expect(
      Number((await h.pool.query('SELECT count(*) FROM cleanup_jobs WHERE task_id = $1', [t.taskId])).rows[0].count),
    ).toBe(1);
    const result = await h.temporal.workflow.getHandle(accepted.workflowId).result();
    expect(result).toMatchObject({ state: 'succeeded' });
    expect((await h.temporal.workflow.getHandle(accepted.workflowId).describe()).status.name).toBe('COMPLETED');
  });

  it('a worker killed with SIGKILL in the middle of an idle release: nothing lost, the job finishes, the next launch restores [R6.9]', async () => {
    const dir = await scratchFolder(cleanups);
    const wrapper = gitWrapper(dir, { sleepOnWorktreeRemove: 4 });
    const h = await harness({ gitBinary: wrapper }, { inProcessWorker: false });
    let worker: ChildProcess = h.spawnWorker();
    cleanups.push(async () => void worker.kill('SIGKILL'));
    const t = await taskWithWorktree(h, 'killed-release');
    const sessions = (await h.api('GET', `/v1/tasks/${t.taskId}/sessions`)).body.items;
    expect((await h.api('POST', `/v1/sessions/${sessions[0].id}/stop`)).status).toBe(200);
    const worktree = (await h.api('GET', `/v1/sessions/${sessions[0].id}/workspace`)).body.repositories[0].worktreePath;
    writeFileSync(path.join(worktree, 'README.md'), 'edited before the release\n');
    writeFileSync(path.join(worktree, 'untracked.txt'), 'new before the release\n');

    const res = await h.api('POST', '/v1/idle-release', { hostId: h.config.hostId, idleForMs: 1 }, OPERATOR_TOKEN);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.released.map((r: any) => r.taskId)).toEqual([t.taskId]);
    const operationId = res.body.released[0].operationId;
    // The release's own run carries the job out in a batch: killed while that batch removes it.
    await waitUntil(
      async () =>
        (
          await h.pool.query(
            "SELECT 1 FROM cleanup_jobs WHERE operation_id = $1 AND state = 'running' AND batch_workflow_id IS NOT NULL",
            [operationId],
          )
        ).rowCount === 1,
      'the release under way in its batch',
    );
    await slowGitStepBegun(wrapper, 'remove'); // killed inside the removal, after the save
    worker.kill('SIGKILL');
    await new Promise((r) => worker.once('exit', r));
    setGitSlow(wrapper, false); // the new worker's removal at git's own pace
    worker = h.spawnWorker();

    const job = await waitForJob(h, operationId, ['succeeded'], 120_000);
    expect(job.state).toBe('succeeded');
    expect(worktreePaths(t.repo)).toEqual([t.repo]);
    expect(git(t.repo, 'rev-parse', '--verify', taskBranchName(t.taskId))).toMatch(/^[0-9a-f]{40}$/);
    // Saved exactly once, with the work in it.
    const saved = (await h.pool.query('SELECT ref FROM saved_work WHERE task_id = $1', [t.taskId])).rows;
    expect(saved).toHaveLength(1);
    expect(git(t.repo, 'show', `${saved[0].ref}:README.md`)).toBe('edited before the release');
    expect(git(t.repo, 'show', `${saved[0].ref}:untracked.txt`)).toBe('new before the release');

    const again = await launch(h, t.taskId);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(readFileSync(path.join(worktree, 'README.md'), 'utf8')).toBe('edited before the release\n');
    expect(readFileSync(path.join(worktree, 'untracked.txt'), 'utf8')).toBe('new before the release\n');
  });

  it('a Temporal dev server restarted (same SQLite file) in the middle of a cleanup: it finishes', async () => {
    const dir = await scratchFolder(cleanups);
    const port = await freePort();
    const db = path.join(dir, 'temporal.sqlite');
    const startServer = () => runTemporalDevServer(port, db);
    let server = await startServer();
    cleanups.push(async () => void server.kill('SIGKILL'));
    const wrapper = gitWrapper(dir, { failSubcommand: 'worktree remove', failTimes: 1 });
    const h = await harness(
      { gitBinary: wrapper, cleanupPolicy: { waitsMs: [6000], maxAttempts: 3 } },
      { temporalAddress: `127.0.0.1:${port}` },
    );
    const t = await taskWithWorktree(h, 'restarted');
    const accepted = await archive(h, t.taskId);
    await waitForJob(h, accepted.operationId, ['retry_wait']);
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    server = await startServer();
    const job = await waitForJob(h, accepted.operationId, ['succeeded'], 90_000);
    expect(job).toMatchObject({ state: 'succeeded', attempts: 2 });
    expect(worktreePaths(t.repo)).toEqual([t.repo]);
  });
});
