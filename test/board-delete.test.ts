/**
 * Board delete is one durable cleanup trigger like the others [R6]: the dirty refusal over every
 * task before anything changes, ONE preparation transaction (every barrier, snapshot and task
 * deletion, and the board's), then one child cleanup per task that survives its worker's death.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { taskBranchName, taskDirName } from '../domain/task-layout';
import { waitForJob } from './support/cleanup';
import { harnessesPerTest, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { createTask, expectSafeError, launch, pidOf, registerRepo, waitUntil } from './support/scenario';
import { killableWorker } from './support/processes';
import { branches, git, gitWrapper, makeRepo, processAlive, rowCounts, worktreePaths } from './support/world';

const { harness, cleanups } = harnessesPerTest();
const TASKS = 10;

const deleteBoard = (h: Harness, boardId: string, query = '') => h.api('DELETE', `/v1/boards/${boardId}${query ? `?${query}` : ''}`, undefined, OPERATOR_TOKEN);
const count = async (h: Harness, sql: string, params: unknown[]) => Number((await h.pool.query(sql, params)).rows[0].n);

/** A board of TASKS tasks on one repository, each with its worktree and a running agent; the first one's worktree is dirty. */
async function boardOfTasks(h: Harness, name: string) {
  const repo = makeRepo(h.scratch, name);
  const repoId = await registerRepo(h, repo, name);
  const board = (await h.api('POST', '/v1/boards', { name })).body.id as string;
  const tasks: { taskId: string; pid: number; worktree: string }[] = [];
  for (let i = 0; i < TASKS; i++) {
    const taskId = await createTask(h, [repoId], { boardId: board });
    const res = await launch(h, taskId);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    tasks.push({ taskId, pid: await pidOf(h, res.body.sessionId), worktree: path.join(h.config.workspaceRoot, taskDirName(taskId), name) });
  }
  const dirty = tasks[0]!;
  writeFileSync(path.join(dirty.worktree, 'wip.txt'), 'uncommitted work\n');
  return { repo, repoId, board, tasks, dirty };
}

describe('board delete [R6]', () => {
  it('of 10 tasks with one dirty worktree is refused 409 task_delete_dirty_worktree and changes nothing [R6.6]', async () => {
    const h = await harness();
    const b = await boardOfTasks(h, 'refused');
    const before = await rowCounts(h.pool);

    const refused = await deleteBoard(h, b.board);
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expectSafeError(refused.body, 'task_delete_dirty_worktree', [b.repo, h.config.workspaceRoot]);
    expect(refused.body.error.dirtyRepositories).toEqual([b.repoId]);

    // Nothing changed: the board, every task, no job, every worktree, branch and agent.
    expect(await rowCounts(h.pool)).toEqual(before);
    expect(await count(h, 'SELECT count(*) AS n FROM boards WHERE id = $1', [b.board])).toBe(1);
    expect(await count(h, 'SELECT count(*) AS n FROM tasks WHERE board_id = $1', [b.board])).toBe(TASKS);
    expect(await count(h, 'SELECT count(*) AS n FROM cleanup_jobs', [])).toBe(0);
    expect(worktreePaths(b.repo).sort()).toEqual([b.repo, ...b.tasks.map((t) => t.worktree)].sort());
    for (const t of b.tasks) {
      expect(existsSync(t.worktree)).toBe(true);
      expect(branches(b.repo)).toContain(taskBranchName(t.taskId));
      expect(processAlive(t.pid)).toBe(true);
    }
    expect(existsSync(path.join(b.dirty.worktree, 'wip.txt'))).toBe(true);
  });

  it('with discardChanges=true removes every task and worktree, saves the dirty work, and survives a worker SIGKILL mid-way [R6.2] [R6.4]', async () => {
    // Each worktree removal takes a second: the worker dies while the member cleanups run.
    const wrapperDir = mkdtempSync(path.join(os.tmpdir(), 'tws-board-git-'));
    cleanups.push(() => rmSync(wrapperDir, { recursive: true, force: true }));
    const slowRemove = gitWrapper(wrapperDir, { sleepOnWorktreeRemove: 1 });
    const h = await harness({ gitBinary: slowRemove }, { inProcessWorker: false });
    const worker = killableWorker(h, cleanups);
    const b = await boardOfTasks(h, 'consented');

    const accepted = await deleteBoard(h, b.board, 'discardChanges=true');
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    expect(accepted.body.workflowId).toBe(`cascade/board_delete/${b.board}/${accepted.body.operationId}`);
    const operations: { taskId: string; operationId: string }[] = accepted.body.operations;
    expect(operations.map((o) => o.taskId).sort()).toEqual(b.tasks.map((t) => t.taskId).sort());

    // The 202 came after the one preparation transaction: board and tasks gone, every barrier reserved.
    expect(await count(h, 'SELECT count(*) AS n FROM boards WHERE id = $1', [b.board])).toBe(0);
    expect(await count(h, 'SELECT count(*) AS n FROM tasks WHERE id = ANY($1::uuid[])', [b.tasks.map((t) => t.taskId)])).toBe(0);
    const jobs = await h.pool.query("SELECT operation_id, trigger FROM cleanup_jobs WHERE cascade_operation_id = $1 AND state <> 'prepared'", [accepted.body.operationId]);
    expect(jobs.rows.map((r) => r.operation_id).sort()).toEqual(operations.map((o) => o.operationId).sort());
    expect(new Set(jobs.rows.map((r) => r.trigger))).toEqual(new Set(['board_delete']));

    // SIGKILL once the first member finished and before the last: the restarted worker goes on.
    const finished = () => count(h, "SELECT count(*) AS n FROM cleanup_jobs WHERE cascade_operation_id = $1 AND state = 'succeeded'", [accepted.body.operationId]);
    await waitUntil(async () => (await finished()) >= 1, 'the first member cleanup');
    await worker.kill();
    expect(await finished()).toBeLessThan(TASKS);
    worker.replace();

    for (const o of operations) expect(await waitForJob(h, o.operationId, ['succeeded'], 120_000)).toMatchObject({ trigger: 'board_delete', state: 'succeeded' });
    expect((await h.temporal.workflow.getHandle(accepted.body.workflowId).result()) as unknown[]).toHaveLength(TASKS);

    // The world: every worktree gone from disk and from git, every agent stopped, the branches
    // (no commits of their own) removed, the dirty worktree's work on its hidden ref.
    expect(worktreePaths(b.repo)).toEqual([b.repo]);
    for (const t of b.tasks) {
      expect(existsSync(t.worktree)).toBe(false);
      expect(processAlive(t.pid)).toBe(false);
    }
    expect(branches(b.repo)).toEqual(['main']);
    expect(git(b.repo, 'show', `refs/task-workspaces/saved/${b.dirty.taskId}/${b.repoId}:wip.txt`)).toBe('uncommitted work');
    expect(await count(h, 'SELECT count(*) AS n FROM boards WHERE id = $1', [b.board])).toBe(0);
  });

  it('is for operators (403 otherwise), 404 for an unknown board, and an empty board is deleted with no operation', async () => {
    const h = await harness();
    const board = (await h.api('POST', '/v1/boards', { name: 'empty' })).body.id as string;
    const forbidden = await h.api('DELETE', `/v1/boards/${board}`, undefined, USER_TOKEN);
    expect(forbidden.status).toBe(403);
    expect(await count(h, 'SELECT count(*) AS n FROM boards WHERE id = $1', [board])).toBe(1);

    const unknown = await deleteBoard(h, '00000000-0000-4000-8000-000000000000');
    expect(unknown.status).toBe(404);
    expectSafeError(unknown.body, 'not_found');

    const emptied = await deleteBoard(h, board);
    expect(emptied.status, JSON.stringify(emptied.body)).toBe(202);
    expect(emptied.body.operations).toEqual([]);
    expect(await count(h, 'SELECT count(*) AS n FROM boards WHERE id = $1', [board])).toBe(0);
    expect((await h.temporal.workflow.getHandle(emptied.body.workflowId).result()) as unknown[]).toEqual([]);
  });
});
