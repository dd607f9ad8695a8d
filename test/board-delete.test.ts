/**
 * Board delete is one durable cleanup trigger like the others [R6]: the dirty refusal over every
 * task before anything changes, ONE preparation transaction (every barrier, snapshot and task
 * deletion, and the board's), then the tasks' cleanups in batches (one host step for many tasks,
 * their removals in shared turns of the repository's lock; each task keeps its job row), a task
 * whose batched attempt failed going on in a run of its own; all of it survives its worker's death.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import pino from 'pino';
import { cleanupRecordActivities } from '../activities/cleanup-records';
import { startPreparedJob } from '../executors/support/follow-up-starts';
import { taskBranchName, taskDirName } from '../domain/task-layout';
import { cleanupWorkflowId } from '../domain/workflow-ids';
import { waitForJob } from './support/cleanup';
import { harnessesPerTest, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { createTask, expectSafeError, launch, pidOf, registerRepo, waitUntil } from './support/scenario';
import { expectReRunAfterTimeout, killableWorker } from './support/processes';
import {
  branches,
  clearGitFault,
  git,
  gitWrapper,
  loggedGitCommands,
  makeRepo,
  processAlive,
  rowCounts,
  setGitSlow,
  worktreePaths,
} from './support/world';

const { harness, cleanups } = harnessesPerTest();
const TASKS = 10;

const deleteBoard = (h: Harness, boardId: string, query = '') =>
  h.api('DELETE', `/v1/boards/${boardId}${query ? `?${query}` : ''}`, undefined, OPERATOR_TOKEN);
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
    tasks.push({
      taskId,
      pid: await pidOf(h, res.body.sessionId),
      worktree: path.join(h.config.workspaceRoot, taskDirName(taskId), name),
    });
  }
  const dirty = tasks[0]!;
  writeFileSync(path.join(dirty.worktree, 'wip.txt'), 'uncommitted work\n');
  return { repo, repoId, board, tasks, dirty };
}

/**
 * Holds the COMMIT of any transaction that deleted a board (a deferred trigger waits on an
 * advisory lock the test holds): the worker dies while the preparation's commit is under way,
 * and the commit completes once released, with no one left to tell the engine.
 */
async function holdBoardDeleteCommit(h: Harness) {
  const holder = await h.pool.connect();
  await holder.query('SELECT pg_advisory_lock(7013)');
  await h.pool.query(
    'CREATE FUNCTION board_delete_hold() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_xact_lock_shared(7013); RETURN OLD; END $$',
  );
  await h.pool.query(
    'CREATE CONSTRAINT TRIGGER board_delete_hold AFTER DELETE ON boards DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION board_delete_hold()',
  );
  return {
    held: () =>
      waitUntil(
        async () =>
          (await h.pool.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")).rowCount! > 0,
        'a board delete commit held',
      ),
    async release() {
      await holder.query('SELECT pg_advisory_unlock(7013)');
      holder.release();
    },
  };
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
    const gitLog = path.join(wrapperDir, 'git.log');
    const slowRemove = gitWrapper(wrapperDir, { sleepOnWorktreeRemove: 1, logTo: gitLog });
    const removalsStarted = () => loggedGitCommands(gitLog).filter((c) => c.startsWith('worktree remove')).length;
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
    expect(
      await count(h, 'SELECT count(*) AS n FROM tasks WHERE id = ANY($1::uuid[])', [b.tasks.map((t) => t.taskId)]),
    ).toBe(0);
    const jobs = await h.pool.query(
      "SELECT operation_id, trigger FROM cleanup_jobs WHERE cascade_operation_id = $1 AND state <> 'prepared'",
      [accepted.body.operationId],
    );
    expect(jobs.rows.map((r) => r.operation_id).sort()).toEqual(operations.map((o) => o.operationId).sort());
    expect(new Set(jobs.rows.map((r) => r.trigger))).toEqual(new Set(['board_delete']));

    // SIGKILL once the first removal is done and the second under way (removals of one repository
    // share turns of its lock, one after another, and a turn's members finish together at its end,
    // so a finished job is no sign of "mid-way"): the restarted worker goes on from a half-removed board.
    const finished = () =>
      count(h, "SELECT count(*) AS n FROM cleanup_jobs WHERE cascade_operation_id = $1 AND state = 'succeeded'", [
        accepted.body.operationId,
      ]);
    await waitUntil(async () => removalsStarted() >= 2, 'the second worktree removal');
    await worker.kill();
    setGitSlow(slowRemove, false); // the restarted worker's removals at git's own pace
    expect(await finished()).toBeLessThan(TASKS);
    expect(b.tasks.filter((t) => existsSync(t.worktree)).length).toBeGreaterThan(0);
    worker.replace();

    for (const o of operations)
      expect(await waitForJob(h, o.operationId, ['succeeded'], 120_000)).toMatchObject({
        trigger: 'board_delete',
        state: 'succeeded',
      });
    expect((await h.temporal.workflow.getHandle(accepted.body.workflowId).result()) as unknown[]).toHaveLength(TASKS);

    // The world: every worktree gone from disk and from git, every agent stopped, the branches
    // (no commits of their own) removed, the dirty worktree's work on its hidden ref.
    expect(worktreePaths(b.repo)).toEqual([b.repo]);
    for (const t of b.tasks) {
      expect(existsSync(t.worktree)).toBe(false);
      expect(processAlive(t.pid)).toBe(false);
    }
    expect(branches(b.repo)).toEqual(['main']);
    expect(git(b.repo, 'show', `refs/task-workspaces/saved/${b.dirty.taskId}/${b.repoId}:wip.txt`)).toBe(
      'uncommitted work',
    );
    expect(await count(h, 'SELECT count(*) AS n FROM boards WHERE id = $1', [b.board])).toBe(0);
  });

  // Without consent the preparation follows recorded host steps (the dirty check): its own re-run
  // finds what it committed. With consent every step is local to one workflow task: the
  // workflow's re-run starts over and finds its members.
  it.each(['', 'discardChanges=true'])(
    'whose preparation committed while its worker died is continued by the re-run (%s): 202, one job per task, the board gone is no refusal',
    async (query) => {
      const h = await harness({}, { inProcessWorker: false });
      const worker = killableWorker(h, cleanups);
      const repo = makeRepo(h.scratch, 'rerun');
      const repoId = await registerRepo(h, repo, 'rerun');
      const board = (await h.api('POST', '/v1/boards', { name: 'rerun' })).body.id as string;
      const tasks = [
        await createTask(h, [repoId], { boardId: board }),
        await createTask(h, [repoId], { boardId: board }),
      ];
      for (const taskId of tasks) expect((await launch(h, taskId)).status).toBe(201);

      const hold = await holdBoardDeleteCommit(h);
      const pending = deleteBoard(h, board, query);
      await hold.held();
      await worker.kill();
      await hold.release();
      await waitUntil(
        async () => (await count(h, 'SELECT count(*) AS n FROM boards WHERE id = $1', [board])) === 0,
        'the committed preparation',
      );
      worker.replace();

      const accepted = await pending;
      expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
      expect(accepted.body.operations.map((o: { taskId: string }) => o.taskId).sort()).toEqual([...tasks].sort());
      for (const o of accepted.body.operations) await waitForJob(h, o.operationId, ['succeeded'], 90_000);
      // The re-run prepared nothing twice: one job per task, all under this operation.
      expect(await count(h, 'SELECT count(*) AS n FROM cleanup_jobs WHERE task_id = ANY($1::uuid[])', [tasks])).toBe(2);
      expect(
        await count(h, 'SELECT count(*) AS n FROM cleanup_jobs WHERE cascade_operation_id = $1', [
          accepted.body.operationId,
        ]),
      ).toBe(2);
      expect(worktreePaths(repo)).toEqual([repo]);
      expect((await h.temporal.workflow.getHandle(accepted.body.workflowId).result()) as unknown[]).toHaveLength(2);
      await expectReRunAfterTimeout(h, accepted.body.workflowId);
    },
  );

  it('leaves a task under a cleanup job of its own out (detached, its job goes on); each member job waits for and is retried by an operator on its own', async () => {
    const wrapperDir = mkdtempSync(path.join(os.tmpdir(), 'tws-board-git-'));
    cleanups.push(() => rmSync(wrapperDir, { recursive: true, force: true }));
    const failingRemove = gitWrapper(wrapperDir, { failSubcommand: 'worktree remove', failTimes: 1000 });
    const h = await harness({ gitBinary: failingRemove });
    const repo = makeRepo(h.scratch, 'busy');
    const repoId = await registerRepo(h, repo, 'busy');
    const board = (await h.api('POST', '/v1/boards', { name: 'busy' })).body.id as string;
    const [archived, member] = [
      await createTask(h, [repoId], { boardId: board }),
      await createTask(h, [repoId], { boardId: board }),
    ];
    for (const taskId of [archived!, member!]) expect((await launch(h, taskId)).status).toBe(201);
    const archiveJob = (await h.api('POST', `/v1/tasks/${archived}/archive`, {})).body.operationId as string;
    await waitForJob(h, archiveJob, ['needs_operator']);

    const accepted = await deleteBoard(h, board);
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    expect(accepted.body.operations.map((o: { taskId: string }) => o.taskId)).toEqual([member]);
    expect(await count(h, 'SELECT count(*) AS n FROM boards WHERE id = $1', [board])).toBe(0);
    expect((await h.pool.query('SELECT board_id, archived_at FROM tasks WHERE id = $1', [archived])).rows).toEqual([
      { board_id: null, archived_at: expect.any(Date) },
    ]);
    expect((await waitForJob(h, archiveJob, ['needs_operator'])).trigger).toBe('archive');

    const memberJob = accepted.body.operations[0].operationId as string;
    expect(await waitForJob(h, memberJob, ['needs_operator'])).toMatchObject({
      trigger: 'board_delete',
      lastError: 'git_worktree_remove_failed',
    });
    clearGitFault(failingRemove);
    for (const job of [memberJob, archiveJob])
      expect((await h.api('POST', `/v1/cleanup-jobs/${job}/retry`, undefined, OPERATOR_TOKEN)).status).toBe(202);
    for (const job of [memberJob, archiveJob]) await waitForJob(h, job);
    expect(worktreePaths(repo)).toEqual([repo]);
    expect(await count(h, 'SELECT count(*) AS n FROM tasks WHERE id = $1', [archived])).toBe(1);
    expect(await count(h, 'SELECT count(*) AS n FROM tasks WHERE id = $1', [member])).toBe(0);
  });

  it('removes the workspace a child of the board works in with its parent (inherit_parent), instead of handing it to the child deleted with it [R6.5]', async () => {
    const h = await harness();
    const repo = makeRepo(h.scratch, 'family');
    const repoId = await registerRepo(h, repo, 'family');
    const board = (await h.api('POST', '/v1/boards', { name: 'family' })).body.id as string;
    const parent = await createTask(h, [repoId], { boardId: board });
    expect((await launch(h, parent)).status).toBe(201);
    const child = await createTask(h, [repoId], {
      boardId: board,
      parentTaskId: parent,
      workspace: { mode: 'inherit_parent' },
    });
    const attached = await launch(h, child);
    expect(attached.body.role, JSON.stringify(attached.body)).toBe('attached');
    const workspace = path.join(h.config.workspaceRoot, taskDirName(parent), 'family');
    expect(worktreePaths(repo)).toEqual([repo, workspace]);

    const accepted = await deleteBoard(h, board);
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    for (const o of accepted.body.operations) await waitForJob(h, o.operationId);
    expect(worktreePaths(repo)).toEqual([repo]);
    expect(existsSync(workspace)).toBe(false);
    expect(branches(repo)).toEqual(['main']);
  });

  it('carries its tasks out in batches: one host step for many tasks, their removals in shared turns of the repository lock; each task keeps its job row, and the board delete shows every outcome', async () => {
    const wrapperDir = mkdtempSync(path.join(os.tmpdir(), 'tws-board-git-'));
    cleanups.push(() => rmSync(wrapperDir, { recursive: true, force: true }));
    const gitLog = path.join(wrapperDir, 'git.log');
    const h = await harness({ gitBinary: gitWrapper(wrapperDir, { logTo: gitLog }) });
    const name = 'batched';
    const repo = makeRepo(h.scratch, name);
    const repoId = await registerRepo(h, repo, name);
    const board = (await h.api('POST', '/v1/boards', { name })).body.id as string;
    const tasks: { taskId: string; pid: number }[] = [];
    for (let i = 0; i < 12; i++) {
      const taskId = await createTask(h, [repoId], { boardId: board });
      const launched = await launch(h, taskId);
      expect(launched.status).toBe(201);
      tasks.push({ taskId, pid: await pidOf(h, launched.body.sessionId) });
    }
    // Three tasks committed work of their own: their branches are not in main, so they are kept.
    const committed = tasks.slice(0, 3).map((t) => t.taskId);
    for (const taskId of committed) {
      const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), name);
      writeFileSync(path.join(worktree, 'work.txt'), `work of ${taskId}\n`);
      git(worktree, 'add', 'work.txt');
      git(worktree, 'commit', '-q', '-m', 'work');
    }
    writeFileSync(gitLog, '');

    const accepted = await deleteBoard(h, board, 'discardChanges=true');
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    const parent = h.temporal.workflow.getHandle(accepted.body.workflowId);
    const results = (await parent.result()) as {
      operationId: string;
      taskId: string;
      state: string;
      attempts: number;
      report: { worktrees: { outcome: string }[]; branches: { branch: string; outcome: string }[] };
    }[];
    // The run shows each task's outcome, in the operation's order.
    expect(results.map((r) => r.operationId)).toEqual(
      (accepted.body.operations as { operationId: string }[]).map((o) => o.operationId),
    );
    expect(results.map((r) => [r.state, r.attempts, r.report.worktrees.map((w) => w.outcome)])).toEqual(
      Array(12).fill(['succeeded', 1, ['removed']]),
    );
    expect(results.map((r) => r.report.branches.map((b) => [b.branch, b.outcome]))).toEqual(
      results.map((r) => [
        [taskBranchName(r.taskId), committed.includes(r.taskId) ? 'kept_unmerged' : 'deleted_merged'],
      ]),
    );
    // Each task's job row: its own state, attempts and report, naming the batch's workflow (the run an operator opens).
    const rows = await h.pool.query(
      'SELECT state, attempts, last_error, batch_workflow_id FROM cleanup_jobs WHERE cascade_operation_id = $1',
      [accepted.body.operationId],
    );
    expect(rows.rows).toEqual(
      Array(12).fill({
        state: 'succeeded',
        attempts: 1,
        last_error: null,
        batch_workflow_id: accepted.body.workflowId,
      }),
    );
    const view = await h.api('GET', `/v1/cleanup-jobs/${results[0]!.operationId}`, undefined, OPERATOR_TOKEN);
    expect(view.body).toMatchObject({ state: 'succeeded', batchWorkflowId: accepted.body.workflowId });
    // No child run: the batches did the work.
    const history = await parent.fetchHistory();
    expect(history.events!.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)).toHaveLength(0);
    // Shared turns: 12 removals, and fewer listings than tasks (a removal alone lists twice).
    const commands = loggedGitCommands(gitLog);
    expect(commands.filter((c) => c.startsWith('worktree remove'))).toHaveLength(12);
    expect(commands.filter((c) => c.startsWith('worktree list')).length).toBeLessThan(12);
    // The branches too: their commits and what main contains read for many at once, then each
    // merged one deleted (guarded by the commit read); no per-branch reads.
    expect(commands.filter((c) => c.startsWith('for-each-ref')).length).toBeLessThan(12);
    expect(commands.filter((c) => c.startsWith('rev-list') || c.startsWith('rev-parse --verify'))).toEqual([]);
    expect(commands.filter((c) => c.startsWith('update-ref -d'))).toHaveLength(9);
    // No clean worktree's status was read: git's own refusal is the check.
    expect(commands.filter((c) => c.startsWith('status'))).toEqual([]);
    // The world: every worktree gone, the committed work's branches kept, every agent stopped.
    expect(worktreePaths(repo)).toEqual([repo]);
    expect(branches(repo).sort()).toEqual(['main', ...committed.map(taskBranchName)].sort());
    for (const t of tasks) expect(processAlive(t.pid)).toBe(false);
  });

  it("a job its batch carries out is the batch's: the consistency check leaves it, and an operator's cancel waits for the batch and answers that the job ended", async () => {
    const wrapperDir = mkdtempSync(path.join(os.tmpdir(), 'tws-board-git-'));
    cleanups.push(() => rmSync(wrapperDir, { recursive: true, force: true }));
    const h = await harness({ gitBinary: gitWrapper(wrapperDir, { sleepOnWorktreeRemove: 3 }) });
    const repo = makeRepo(h.scratch, 'held');
    const repoId = await registerRepo(h, repo, 'held');
    const board = (await h.api('POST', '/v1/boards', { name: 'held' })).body.id as string;
    for (let i = 0; i < 3; i++)
      expect((await launch(h, await createTask(h, [repoId], { boardId: board }))).status).toBe(201);
    const accepted = await deleteBoard(h, board, 'discardChanges=true');
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    const ops = (accepted.body.operations as { operationId: string }[]).map((o) => o.operationId);
    const held = () =>
      h.pool.query(
        "SELECT operation_id FROM cleanup_jobs WHERE cascade_operation_id = $1 AND state = 'running' AND batch_workflow_id = $2",
        [accepted.body.operationId, accepted.body.workflowId],
      );
    await waitUntil(async () => (await held()).rowCount === 3, 'the batch holding every job');

    // Old enough for the check, whose own runs do not exist: still the batch's, no run started.
    await h.pool.query(
      "UPDATE cleanup_jobs SET updated_at = now() - interval '2 minutes' WHERE cascade_operation_id = $1",
      [accepted.body.operationId],
    );
    const check = await h.temporal.workflow.execute('reconcileRecords', {
      workflowId: `reconcile/${randomUUID()}`,
      taskQueue: h.config.taskQueue,
      args: [{ hostId: h.config.hostId }],
    });
    expect(check).toMatchObject({ records: { repaired: {} } });
    const last = ops.at(-1)!;
    const lastRow = (await h.pool.query('SELECT workflow_id FROM cleanup_jobs WHERE operation_id = $1', [last]))
      .rows[0];
    await expect(h.temporal.workflow.getHandle(lastRow.workflow_id).describe()).rejects.toThrow();

    // The cancel's run waits while the batch holds the job; the batch finishes it: nothing was cancelled.
    const cancel = await h.api('POST', `/v1/cleanup-jobs/${last}/cancel`, undefined, OPERATOR_TOKEN);
    expect(cancel.status, JSON.stringify(cancel.body)).toBe(409);
    expect(cancel.body.error.code).toBe('cleanup_job_finished');
    const results = (await h.temporal.workflow.getHandle(accepted.body.workflowId).result()) as { state: string }[];
    expect(results.map((r) => r.state)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(
      (await h.pool.query('SELECT state, attempts FROM cleanup_jobs WHERE operation_id = $1', [last])).rows,
    ).toEqual([{ state: 'succeeded', attempts: 1 }]);
    expect(worktreePaths(repo)).toEqual([repo]);
  });

  it('a task whose job the consistency check started before its batch reached it goes on in that run (its batched attempt, if any, let go to it), the others are not held up, and the board delete shows its outcome', async () => {
    const h = await harness();
    const name = 'lanes';
    const repo = makeRepo(h.scratch, name);
    const repoId = await registerRepo(h, repo, name);
    const board = (await h.api('POST', '/v1/boards', { name })).body.id as string;
    const tasks: string[] = [];
    for (let i = 0; i < 12; i++) {
      const taskId = await createTask(h, [repoId], { boardId: board });
      // Agents that ignore SIGTERM: each cleanup waits out the stop's grace, so the last lanes start late.
      expect((await launch(h, taskId, { command: ['sh', '-c', 'trap "" TERM; sleep 600'] })).status).toBe(201);
      tasks.push(taskId);
    }
    const accepted = await deleteBoard(h, board);
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    // The member cleaned last: its marker now names another task, and the consistency check's start
    // of a job with no run is done here by hand, before the board delete reaches it. That run waits
    // for an operator (still running) once its audit refuses.
    const last = (accepted.body.operations as { taskId: string; operationId: string }[]).at(-1)!;
    const lastFolder = path.join(h.config.workspaceRoot, taskDirName(last.taskId));
    const markerPath = path.join(lastFolder, '.task-workspace.json');
    const marker = readFileSync(markerPath, 'utf8');
    writeFileSync(
      markerPath,
      JSON.stringify({ ...JSON.parse(marker), taskId: '00000000-0000-4000-8000-000000000000' }),
    );
    const started = await startPreparedJob(h.temporal, h.config, {
      operationId: last.operationId,
      taskId: last.taskId,
      trigger: 'board_delete',
      workflowId: cleanupWorkflowId('board_delete', last.taskId, last.operationId),
    });
    expect(started).toBe(true);
    await waitForJob(h, last.operationId, ['needs_operator']);
    // Every other task is cleaned meanwhile; the board delete waits for that one's run, as for a child of its own.
    for (const op of (accepted.body.operations as { operationId: string }[]).filter(
      (op) => op.operationId !== last.operationId,
    ))
      await waitForJob(h, op.operationId);
    expect(worktreePaths(repo)).toEqual([repo, path.join(lastFolder, name)]);
    const parent = h.temporal.workflow.getHandle(accepted.body.workflowId);
    expect((await parent.describe()).status.name).toBe('RUNNING');
    // The operator puts the marker back and retries: that run finishes the job, and the board delete shows its outcome.
    writeFileSync(markerPath, marker);
    expect((await h.api('POST', `/v1/cleanup-jobs/${last.operationId}/retry`, {}, OPERATOR_TOKEN)).status).toBe(202);
    const results = (await parent.result()) as { operationId: string; state: string }[];
    expect(results.map((r) => r.state)).toEqual(Array(12).fill('succeeded'));
    expect(results.map((r) => r.operationId)).toEqual(
      (accepted.body.operations as { operationId: string }[]).map((op) => op.operationId),
    );
    expect(worktreePaths(repo)).toEqual([repo]);
  });

  it('a preparation that ran past its step timeout and committed while its retry waited for the board is continued by the retry, never dropped as gone', async () => {
    const h = await harness();
    const repoId = await registerRepo(h, makeRepo(h.scratch, 'slow-prep'), 'slow-prep');
    const board = (await h.api('POST', '/v1/boards', { name: 'slow-prep' })).body.id as string;
    const tasks = [
      await createTask(h, [repoId], { boardId: board }),
      await createTask(h, [repoId], { boardId: board }),
    ];
    const cascadeOperationId = randomUUID();
    const members = tasks.map((taskId) => {
      const operationId = randomUUID();
      return { taskId, operationId, workflowId: cleanupWorkflowId('board_delete', taskId, operationId) };
    });
    const steps = cleanupRecordActivities({ pool: h.pool, config: h.config, logger: pino({ level: 'silent' }) });
    const hold = await holdBoardDeleteCommit(h);
    // The first try's commit is held (as a step still running past its timeout would be); its retry starts meanwhile.
    const step = () =>
      new MockActivityEnvironment(undefined, { client: h.temporal }).run(steps.prepareBoardDelete, {
        boardId: board,
        members,
        cascadeOperationId,
      });
    const first = step();
    await hold.held();
    const retry = step();
    await waitUntil(
      async () => (await h.pool.query('SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted')).rows[0].n >= 2,
      'the retry waiting for the board',
    );
    await hold.release();
    expect(((await first) as { kind: string }).kind).toBe('prepared');
    const continued = (await retry) as { kind: string; members?: { operationId: string }[] };
    expect(continued.kind).toBe('prepared');
    expect(continued.members?.map((m) => m.operationId).sort()).toEqual(members.map((m) => m.operationId).sort());
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
    // Bad input is a 400 that changes nothing.
    expect((await deleteBoard(h, 'not-a-board-id')).status).toBe(400);
    expect((await deleteBoard(h, board, 'discardChanges=yes')).status).toBe(400);
    expect(await count(h, 'SELECT count(*) AS n FROM boards WHERE id = $1', [board])).toBe(1);

    const emptied = await deleteBoard(h, board);
    expect(emptied.status, JSON.stringify(emptied.body)).toBe(202);
    expect(emptied.body.operations).toEqual([]);
    expect(await count(h, 'SELECT count(*) AS n FROM boards WHERE id = $1', [board])).toBe(0);
    expect((await h.temporal.workflow.getHandle(emptied.body.workflowId).result()) as unknown[]).toEqual([]);
  });
});
