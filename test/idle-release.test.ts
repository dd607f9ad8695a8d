/**
 * Idle release and restore [R6.9, R6.10]: an idle task's workspace is released through the
 * cleanup path with its uncommitted work saved, and the next launch puts that work back exactly;
 * what is pinned, running or shared with a busy task stays.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ScheduleNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { idleReleaseRecordActivities } from '../activities/idle-release';
import { ensureSchedules } from '../worker/schedules';
import { idleCandidates } from '../db/idle';
import { taskBranchName, taskDirName } from '../domain/task-layout';
import { releaseIdleTask, savedWorkOf, waitForJob } from './support/cleanup';
import { createHarness, OPERATOR_TOKEN, type Harness } from './support/harness';
import { createGroupTasks, createTask, launch, pidOf, registerRepo, waitUntil } from './support/scenario';
import { commitOf, git, gitWrapper, makeRepo, processCwd, rowCounts, worktreePaths } from './support/world';
import { makeWork, statusOf, WORK_REPO_FILES, WORK_STATUS, workOf } from './support/work-of-every-kind';

let h: Harness;
let n = 0;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

async function repo() {
  const name = `idle-${++n}`;
  const dir = makeRepo(h.scratch, name, {
    files: WORK_REPO_FILES,
  });
  return { dir, name, id: await registerRepo(h, dir, name) };
}

const worktreeOf = (taskId: string, name: string) => path.join(h.config.workspaceRoot, taskDirName(taskId), name);

/** A task whose agent ran and was stopped: idle, its worktree on disk. */
async function stoppedTask(r: { id: string }, extra: Record<string, unknown> = {}) {
  const taskId = await createTask(h, [r.id], extra);
  const res = await launch(h, taskId);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect((await h.api('POST', `/v1/sessions/${res.body.sessionId}/stop`)).status).toBe(200);
  return { taskId, sessionId: res.body.sessionId as string, envId: res.body.taskEnvironmentId as string };
}

const releaseNow = (body: Record<string, unknown> = {}) =>
  h.api('POST', '/v1/idle-release', { hostId: h.config.hostId, idleForMs: 1, ...body }, OPERATOR_TOKEN);

/** Work of every kind (makeWork) in a task's worktree: where it is, what it is file by file, and git's status of it. */
function workIn(taskId: string, repositoryName: string) {
  const worktree = worktreeOf(taskId, repositoryName);
  makeWork(worktree);
  return { worktree, before: workOf(worktree), status: statusOf(worktree) };
}

/**
 * A stopped task with work of every kind (makeWork) in its worktree, released idle: its
 * worktree gone, and what the work was, file by file, and git's status of it (index and files).
 */
async function releasedWithWork() {
  const r = await repo();
  const t = await stoppedTask(r);
  const { worktree, before, status } = workIn(t.taskId, r.name);
  const job = await releaseIdleTask(h, t.taskId);
  expect(job.state).toBe('succeeded');
  expect(existsSync(worktree)).toBe(false);
  return { r, t, worktree, before, status };
}

describe('idle release [R6.9]', () => {
  it('releases an idle task on request: work saved on its own ref, worktree removed, branch kept; a dry run changes nothing', async () => {
    const r = await repo();
    const t = await stoppedTask(r);
    const worktree = worktreeOf(t.taskId, r.name);
    makeWork(worktree);
    const branchHead = commitOf(r.dir, taskBranchName(t.taskId));
    // The answer says what each release leaves out, and why: the repository's own patterns.
    const patterns = ['node_modules/', '*.log'];
    expect((await h.api('PATCH', `/v1/repositories/${r.id}`, { rebuildable: patterns }, OPERATOR_TOKEN)).status).toBe(
      200,
    );
    const leavesOut = [{ repositoryId: r.id, patterns, reason: 'rebuildable' }];

    const dry = await releaseNow({ dryRun: true });
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    expect(dry.body.dryRun).toBe(true);
    expect(dry.body.released).toContainEqual({ taskId: t.taskId, operationId: null, leavesOut });
    expect(existsSync(path.join(worktree, 'notes/untracked.bin'))).toBe(true);
    expect(
      (await h.pool.query('SELECT count(*)::int AS n FROM cleanup_jobs WHERE task_id = $1', [t.taskId])).rows[0].n,
    ).toBe(0);

    const res = await releaseNow();
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const mine = res.body.released.find((x: any) => x.taskId === t.taskId);
    expect(mine.operationId).toMatch(/^[0-9a-f-]{36}$/);
    expect(mine.leavesOut).toEqual(leavesOut);
    const job = await waitForJob(h, mine.operationId);
    expect(job).toMatchObject({ trigger: 'idle_release', state: 'succeeded' });
    // Carried out by the release's own run in a batch (its removals in the repositories' shared turns).
    const carrier = await h.pool.query('SELECT batch_workflow_id FROM cleanup_jobs WHERE operation_id = $1', [
      mine.operationId,
    ]);
    expect(carrier.rows[0].batch_workflow_id).toMatch(new RegExp(`^idle-release/${h.config.hostId}/`));
    expect(job.report.worktrees).toEqual([
      expect.objectContaining({ repositoryId: r.id, outcome: 'saved_and_removed' }),
    ]);
    const ref: string = job.report.worktrees[0].savedRef;
    expect(ref.startsWith(`refs/task-workspaces/released/${t.taskId}/${r.id}/`)).toBe(true);

    // The world: no worktree, the branch where it was, the work on the ref, the rows kept.
    expect(existsSync(worktree)).toBe(false);
    expect(worktreePaths(r.dir)).toEqual([r.dir]);
    expect(commitOf(r.dir, taskBranchName(t.taskId))).toBe(branchHead);
    expect(git(r.dir, 'show', `${ref}:README.md`)).toBe('# idle\nedited, not staged');
    expect(git(r.dir, 'ls-tree', '-r', '--name-only', ref).split('\n')).not.toContain('src/gone.txt');
    expect((await h.pool.query('SELECT status FROM task_environments WHERE id = $1', [t.envId])).rows[0].status).toBe(
      'released',
    );
    expect((await h.pool.query('SELECT state FROM sessions WHERE id = $1', [t.sessionId])).rows[0].state).toBe(
      'stopped',
    );
    const task = (await h.api('GET', `/v1/tasks/${t.taskId}`)).body;
    expect(task.state).toBe('active');
    expect(await savedWorkOf(h, r.id, t.taskId)).toEqual([
      expect.objectContaining({ ref, trigger: 'idle_release', restore: null, restoredAt: null }),
    ]);
  });

  it('the next launch restores the saved work byte-for-byte: modified, staged, deleted and untracked files [R6.10]', async () => {
    const { r, t, worktree, before, status } = await releasedWithWork();
    expect(status).toEqual(WORK_STATUS);

    const again = await launch(h, t.taskId);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(workOf(worktree)).toBe(before);
    expect(readFileSync(path.join(worktree, 'notes/untracked.bin'))).toEqual(Buffer.from([0, 1, 2, 255, 10, 13, 0]));
    expect(existsSync(path.join(worktree, 'src/gone.txt'))).toBe(false);
    // The index as it was: staged stays staged, the added file added (with its later change
    // unstaged), the untracked file untracked.
    expect(statusOf(worktree)).toEqual(status);
    expect(git(worktree, 'show', ':src/added.txt')).toBe('added, staged');
    // The hand-written ignored file is back, still ignored; the dependencies were left out, and said so.
    expect(readFileSync(path.join(worktree, '.env'), 'utf8')).toBe('SECRET_OF_MINE=1\n');
    expect(git(worktree, 'check-ignore', '.env')).toBe('.env');
    expect(existsSync(path.join(worktree, 'node_modules'))).toBe(false);
    const session = (await h.api('GET', `/v1/sessions/${again.body.sessionId}`)).body;
    expect(session).toMatchObject({ restore: 'applied', restoreConflictRefs: [] });
    const [entry] = await savedWorkOf(h, r.id, t.taskId);
    expect(entry).toMatchObject({
      restore: 'applied',
      trigger: 'idle_release',
      leftOut: [{ path: 'node_modules/', reason: 'rebuildable' }],
    });
    expect(Date.parse(entry.restoredAt)).toBeGreaterThan(0);
    // Kept until the task is deleted: the ref is still there, and a later launch does not apply it twice.
    expect(git(r.dir, 'rev-parse', '--verify', entry.ref)).toBe(entry.commit);
    await h.api('POST', `/v1/sessions/${again.body.sessionId}/stop`);
    const third = await launch(h, t.taskId);
    expect(third.status).toBe(201);
    expect((await h.api('GET', `/v1/sessions/${third.body.sessionId}`)).body.restore).toBeNull();
    expect(workOf(worktree)).toBe(before);
  });

  it('an abandon after the release starts afresh: the next launch applies nothing, the work stays on its ref, listed abandoned', async () => {
    const { r, t } = await releasedWithWork();
    const reset = await h.api('POST', `/v1/tasks/${t.taskId}/environment/reset`, { abandon: true }, OPERATOR_TOKEN);
    expect(reset.status, JSON.stringify(reset.body)).toBeLessThan(300);
    const again = await launch(h, t.taskId);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    const workspace = (await h.api('GET', `/v1/sessions/${again.body.sessionId}/workspace`)).body;
    const fresh = workspace.repositories[0].worktreePath as string;
    // A new branch from the base, as it is: none of the saved work in it.
    expect(workspace.repositories[0].branch).toMatch(/-r\d+$/);
    expect(git(fresh, 'status', '--porcelain', '--untracked-files=all')).toBe('');
    expect(readFileSync(path.join(fresh, 'README.md'), 'utf8')).toBe('# idle\n');
    expect((await h.api('GET', `/v1/sessions/${again.body.sessionId}`)).body.restore).toBeNull();
    // Nothing lost: the entry is listed, abandoned, and its ref holds the work.
    const [entry] = await savedWorkOf(h, r.id, t.taskId);
    expect(entry).toMatchObject({ restore: 'abandoned', restoredAt: null, trigger: 'idle_release' });
    expect(git(r.dir, 'rev-parse', '--verify', entry.ref)).toBe(entry.commit);
    expect(git(r.dir, 'show', `${entry.commit}:README.md`)).toBe('# idle\nedited, not staged');
  });

  it('a worktree whose only work is an ignored file is saved, not removed as clean; the restore brings the file back [R6.9]', async () => {
    const r = await repo();
    const t = await stoppedTask(r);
    const worktree = worktreeOf(t.taskId, r.name);
    writeFileSync(path.join(worktree, '.env'), 'TOKEN=written by hand\n');
    mkdirSync(path.join(worktree, 'node_modules/dep'), { recursive: true });
    writeFileSync(path.join(worktree, 'node_modules/dep/x.js'), '1\n');
    expect(git(worktree, 'status', '--porcelain')).toBe('');
    const job = await releaseIdleTask(h, t.taskId);
    expect(job.report.worktrees).toEqual([
      expect.objectContaining({
        outcome: 'saved_and_removed',
        leftOut: [{ path: 'node_modules/', reason: 'rebuildable' }],
      }),
    ]);
    expect(existsSync(worktree)).toBe(false);
    const again = await launch(h, t.taskId);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(readFileSync(path.join(worktree, '.env'), 'utf8')).toBe('TOKEN=written by hand\n');
    expect(git(worktree, 'status', '--porcelain', '--untracked-files=all')).toBe('');
  });

  it("a repository's own patterns of rebuilt files: set at registration and by PATCH, null for the default list, a bad one refused", async () => {
    const dir = makeRepo(h.scratch, `patterns-${++n}`);
    const made = await h.api(
      'POST',
      '/v1/repositories',
      { name: `patterns-${n}`, path: dir, rebuildable: ['dist/', '*.log'] },
      OPERATOR_TOKEN,
    );
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body).toMatchObject({ rebuildable: ['dist/', '*.log'], rebuildableDefault: false });
    const patched = await h.api(
      'PATCH',
      `/v1/repositories/${made.body.id}`,
      { rebuildable: ['target/'] },
      OPERATOR_TOKEN,
    );
    expect(patched.body).toMatchObject({ rebuildable: ['target/'], rebuildableDefault: false });
    const reset = await h.api('PATCH', `/v1/repositories/${made.body.id}`, { rebuildable: null }, OPERATOR_TOKEN);
    expect(reset.body.rebuildableDefault).toBe(true);
    expect(reset.body.rebuildable).toContain('node_modules/');
    const listed = (await h.api('GET', '/v1/repositories?limit=200')).body.items.find(
      (x: any) => x.id === made.body.id,
    );
    expect(listed).toEqual(reset.body);
    for (const bad of [['../up'], ['/abs'], ['*'], ['']]) {
      const refused = await h.api('PATCH', `/v1/repositories/${made.body.id}`, { rebuildable: bad }, OPERATOR_TOKEN);
      expect(refused.status, JSON.stringify(bad)).toBe(400);
      expect(refused.body.error.code).toBe('invalid_request');
    }
    expect(
      (await h.api('GET', '/v1/repositories?limit=200')).body.items.find((x: any) => x.id === made.body.id),
    ).toEqual(reset.body);
    expect(
      (
        await h.api(
          'PATCH',
          '/v1/repositories/00000000-0000-4000-8000-000000000000',
          { rebuildable: null },
          OPERATOR_TOKEN,
        )
      ).status,
    ).toBe(404);
  });

  it('a save that fails keeps the worktree and gives the task back at once: the job ends, no retry holds its launches, the failure is in its report', async () => {
    // Its own host, whose git cannot make a save (every `git stash create` fails).
    const failing = await createHarness({
      gitBinary: gitWrapper(h.scratch, { failSubcommand: 'stash create', failTimes: 1000 }),
    });
    try {
      const name = `unsaved-${++n}`;
      const dir = makeRepo(failing.scratch, name, { files: { 'README.md': '# idle\n' } });
      const taskId = await createTask(failing, [await registerRepo(failing, dir, name)]);
      const first = await launch(failing, taskId);
      expect(first.status, JSON.stringify(first.body)).toBe(201);
      expect((await failing.api('POST', `/v1/sessions/${first.body.sessionId}/stop`)).status).toBe(200);
      const worktree = path.join(failing.config.workspaceRoot, taskDirName(taskId), name);
      writeFileSync(path.join(worktree, 'README.md'), '# idle\nwork that cannot be saved\n');

      const job = await releaseIdleTask(failing, taskId);
      expect(job).toMatchObject({ state: 'succeeded', attempts: 1, lastError: null });
      expect(job.report.worktrees).toEqual([
        { repositoryId: expect.any(String), worktreePath: worktree, outcome: 'kept_dirty', reason: 'save_failed' },
      ]);
      // Nothing removed, nothing lost, nothing saved.
      expect(readFileSync(path.join(worktree, 'README.md'), 'utf8')).toBe('# idle\nwork that cannot be saved\n');
      expect(worktreePaths(dir)).toEqual([dir, worktree]);
      expect(
        await savedWorkOf(failing, (await failing.pool.query('SELECT id FROM repositories')).rows[0].id, taskId),
      ).toEqual([]);
      // The task launches at once, in the same worktree with its work.
      const again = await launch(failing, taskId, { command: ['sh', '-c', 'cat README.md; sleep 600'] });
      expect(again.status, JSON.stringify(again.body)).toBe(201);
      expect(processCwd(await pidOf(failing, again.body.sessionId))).toBe(worktree);
    } finally {
      await failing.close();
    }
  });

  it("a child working in its parent's workspace (inherit_parent) materializes the parent's released environment again, with the work restored [R6.10]", async () => {
    const { r, t, worktree, before, status } = await releasedWithWork();
    const child = await createTask(h, [r.id], { parentTaskId: t.taskId, workspace: { mode: 'inherit_parent' } });

    const res = await launch(h, child);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    // The parent's own environment made again where it was, never one of the child's.
    expect(res.body).toMatchObject({ role: 'materialized', taskEnvironmentId: t.envId });
    expect(processCwd(await pidOf(h, res.body.sessionId))).toBe(worktree);
    expect(workOf(worktree)).toBe(before);
    expect(statusOf(worktree)).toEqual(status);
    expect(
      (await h.pool.query('SELECT count(*)::int AS n FROM task_environments WHERE task_id = $1', [child])).rows[0].n,
    ).toBe(0);
    const [entry] = await savedWorkOf(h, r.id, t.taskId);
    expect(entry).toMatchObject({ restore: 'applied', trigger: 'idle_release' });
    // The parent's next launch attaches to it.
    const parentLaunch = await launch(h, t.taskId);
    expect(parentLaunch.body).toMatchObject({ role: 'attached', taskEnvironmentId: t.envId });
  });

  it("a workspace whose child's session (inherit_parent) is stopped is released with its parent's: the child's resume makes it again, the work restored [R6.9, R6.10]", async () => {
    const r = await repo();
    const t = await stoppedTask(r);
    const child = await createTask(h, [r.id], { parentTaskId: t.taskId, workspace: { mode: 'inherit_parent' } });
    const childLaunch = await launch(h, child);
    expect(childLaunch.body).toMatchObject({ role: 'attached', taskEnvironmentId: t.envId });
    const childSession = childLaunch.body.sessionId as string;
    expect((await h.api('POST', `/v1/sessions/${childSession}/stop`)).status).toBe(200);
    const { worktree, before, status } = workIn(t.taskId, r.name);

    // Every task using it is idle: released for all of them, the work saved, nothing kept aside.
    const job = await releaseIdleTask(h, t.taskId);
    expect(job.state).toBe('succeeded');
    expect(job.report.borrowed).toEqual([]);
    expect(existsSync(worktree)).toBe(false);
    expect(await savedWorkOf(h, r.id, t.taskId)).toMatchObject([{ restore: null, trigger: 'idle_release' }]);
    expect((await h.pool.query('SELECT status FROM task_environments WHERE id = $1', [t.envId])).rows[0].status).toBe(
      'released',
    );

    const resumed = await h.api('POST', `/v1/sessions/${childSession}/resume`, {});
    expect([200, 201], JSON.stringify(resumed.body)).toContain(resumed.status);
    expect(processCwd(await pidOf(h, childSession))).toBe(worktree);
    expect(workOf(worktree)).toBe(before);
    expect(statusOf(worktree)).toEqual(status);
    expect(
      (await h.pool.query('SELECT count(*)::int AS n FROM task_environments WHERE task_id = $1', [child])).rows[0].n,
    ).toBe(0);
  });

  it('a resume of the released session materializes again and restores the work, as a launch does [R6.10]', async () => {
    const { r, t, worktree, before } = await releasedWithWork();

    const resumed = await h.api('POST', `/v1/sessions/${t.sessionId}/resume`, {});
    expect([200, 201], JSON.stringify(resumed.body)).toContain(resumed.status);
    expect(workOf(worktree)).toBe(before);
    expect(readFileSync(path.join(worktree, 'notes/untracked.bin'))).toEqual(Buffer.from([0, 1, 2, 255, 10, 13, 0]));
    const session = (await h.api('GET', `/v1/sessions/${t.sessionId}`)).body;
    expect(session).toMatchObject({ state: 'running', restore: 'applied', restoreConflictRefs: [] });
    const [entry] = await savedWorkOf(h, r.id, t.taskId);
    expect(entry).toMatchObject({ restore: 'applied', trigger: 'idle_release' });
    expect(Date.parse(entry.restoredAt)).toBeGreaterThan(0);
    expect((await h.pool.query('SELECT status FROM task_environments WHERE id = $1', [t.envId])).rows[0].status).toBe(
      'ready',
    );
  });

  it('a branch that moved since the save: the launch succeeds on the clean branch, the view says conflict, the ref stays', async () => {
    const r = await repo();
    const t = await stoppedTask(r);
    const worktree = worktreeOf(t.taskId, r.name);
    writeFileSync(path.join(worktree, 'README.md'), '# idle\nmy edit\n');
    writeFileSync(path.join(worktree, 'mine.txt'), 'untracked of mine\n');
    const job = await releaseIdleTask(h, t.taskId);
    const ref: string = job.report.worktrees[0].savedRef;
    // Someone commits to the kept branch meanwhile, on the same lines.
    const side = path.join(h.scratch, `side-${randomUUID()}`);
    git(r.dir, 'worktree', 'add', '-q', side, taskBranchName(t.taskId));
    writeFileSync(path.join(side, 'README.md'), '# idle\ntheir edit\n');
    git(side, 'commit', '-q', '-am', 'moved on');
    const moved = commitOf(side, 'HEAD');
    git(r.dir, 'worktree', 'remove', side);

    const again = await launch(h, t.taskId);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    // Never half-applied: the worktree is the branch as it is, not one file of the save.
    expect(commitOf(worktree, 'HEAD')).toBe(moved);
    expect(git(worktree, 'status', '--porcelain', '--untracked-files=all')).toBe('');
    expect(existsSync(path.join(worktree, 'mine.txt'))).toBe(false);
    const session = (await h.api('GET', `/v1/sessions/${again.body.sessionId}`)).body;
    expect(session).toMatchObject({ restore: 'conflict', restoreConflictRefs: [ref] });
    expect(await savedWorkOf(h, r.id, t.taskId)).toEqual([
      expect.objectContaining({ ref, restore: 'conflict', restoredAt: null }),
    ]);
    expect(git(r.dir, 'show', `${ref}:mine.txt`)).toBe('untracked of mine');
  });

  it('leaves alone what is pinned, running, or shared with a task that runs (a group, a child inheriting it); a pin shows on the task', async () => {
    const r = await repo();
    const pinned = await stoppedTask(r);
    const pin = await h.api('POST', `/v1/tasks/${pinned.taskId}/pin`);
    expect(pin.status).toBe(200);
    expect(pin.body.pinned).toBe(true);

    const runningTask = await createTask(h, [r.id]);
    expect((await launch(h, runningTask)).status).toBe(201);

    const group = await createGroupTasks(h, [r.id], 2);
    const owner = await launch(h, group.tasks[0]!);
    expect((await h.api('POST', `/v1/sessions/${owner.body.sessionId}/stop`)).status).toBe(200);
    expect((await launch(h, group.tasks[1]!)).status).toBe(201);

    // A parent whose child works in its workspace (inherit_parent) while the parent's own agent is stopped.
    const parent = await stoppedTask(r);
    const child = await createTask(h, [r.id], { parentTaskId: parent.taskId, workspace: { mode: 'inherit_parent' } });
    const inherited = await launch(h, child);
    expect(inherited.status, JSON.stringify(inherited.body)).toBe(201);
    expect(inherited.body.taskEnvironmentId).toBe(parent.envId);

    const res = await releaseNow();
    expect(res.status).toBe(200);
    const released = res.body.released.map((x: any) => x.taskId);
    for (const kept of [pinned.taskId, runningTask, group.tasks[0], parent.taskId])
      expect(released).not.toContain(kept);
    expect(res.body.kept).toEqual(
      expect.arrayContaining([
        { taskId: pinned.taskId, reason: 'pinned' },
        { taskId: runningTask, reason: 'running' },
        { taskId: group.tasks[0], reason: 'shared_task_running' },
        { taskId: parent.taskId, reason: 'shared_task_running' },
      ]),
    );
    for (const taskId of [pinned.taskId, runningTask, group.tasks[0]!, parent.taskId])
      expect(existsSync(path.join(h.config.workspaceRoot, taskDirName(taskId)))).toBe(true);

    // Unpinned, it is idle like any other.
    const unpin = await h.api('DELETE', `/v1/tasks/${pinned.taskId}/pin`);
    expect(unpin.body.pinned).toBe(false);
    const later = await releaseNow({ dryRun: true });
    expect(later.body.released).toContainEqual(expect.objectContaining({ taskId: pinned.taskId, operationId: null }));
  });

  it('pinned and busy environments never take the places of releasable ones in a run (its candidates are limited)', async () => {
    const r = await repo();
    const older = await stoppedTask(r);
    const newer = await stoppedTask(r);
    // The older one would come first by age alone; pinned, it must not fill a run's only place.
    expect((await h.api('POST', `/v1/tasks/${older.taskId}/pin`)).status).toBe(200);
    await h.pool.query(`UPDATE tasks SET last_activity_at = now() - interval '30 days' WHERE id = $1`, [older.taskId]);
    const all = await idleCandidates(h.pool, { hostId: h.config.hostId });
    const held = (f: { pinned: boolean; busy: boolean }) => f.pinned || f.busy;
    const firstHeld = all.findIndex(held);
    expect(firstHeld).toBeGreaterThanOrEqual(0);
    expect(all.slice(firstHeld).every(held)).toBe(true); // every releasable one comes before every held one
    expect(all.find((f) => f.ownerTaskId === older.taskId)).toMatchObject({ pinned: true });
    const releasable = all.filter((f) => !held(f)).length;
    const limited = await idleCandidates(h.pool, { hostId: h.config.hostId }, releasable);
    expect(limited.map((f) => f.ownerTaskId)).toContain(newer.taskId);
    expect(limited.some(held)).toBe(false);
    expect((await h.api('DELETE', `/v1/tasks/${older.taskId}/pin`)).status).toBe(200);
  });

  it('a task used again since the judgement is not released (the preparation looks again under the lock)', async () => {
    const r = await repo();
    const t = await stoppedTask(r);
    // A cleanup job of this trigger whose cutoff predates the task's last activity: refused, nothing touched.
    const stale = new Date(Date.now() - 3_600_000).toISOString();
    const handle = await h.temporal.workflow.start('cleanupTask', {
      workflowId: `cleanup/idle_release/${t.taskId}/${randomUUID()}`,
      taskQueue: h.config.taskQueue,
      args: [
        {
          operationId: randomUUID(),
          taskId: t.taskId,
          trigger: 'idle_release',
          discardChanges: false,
          policy: h.config.cleanupPolicy,
          alreadyPrepared: false,
          idleCutoff: stale,
        },
      ],
    });
    await expect(handle.result()).rejects.toThrow();
    expect(existsSync(worktreeOf(t.taskId, r.name))).toBe(true);
    expect(
      (await h.pool.query('SELECT count(*)::int AS n FROM cleanup_jobs WHERE task_id = $1', [t.taskId])).rows[0].n,
    ).toBe(0);
  });

  it('a run prepares each release on its own: one pinned since the judgement is left as it is, the other prepared once, however often the step runs', async () => {
    const r = await repo();
    const [kept, released] = [await stoppedTask(r), await stoppedTask(r)];
    expect((await h.api('POST', `/v1/tasks/${kept.taskId}/pin`)).status).toBe(200);
    const steps = idleReleaseRecordActivities({ pool: h.pool, config: h.config, logger: pino({ level: 'silent' }) });
    const releases = [kept, released].map((t) => {
      const operationId = randomUUID();
      return { taskId: t.taskId, operationId, workflowId: `cleanup/idle_release/${t.taskId}/${operationId}` };
    });
    // Judged idle up to a moment after every activity of both.
    const idleCutoff = new Date(Date.now() + 60_000).toISOString();
    expect(await steps.prepareIdleReleases({ idleCutoff, releases })).toEqual([releases[1]]);
    expect(await steps.prepareIdleReleases({ idleCutoff, releases })).toEqual([releases[1]]); // a re-run
    const jobs = async (taskId: string) =>
      (await h.pool.query('SELECT operation_id, state FROM cleanup_jobs WHERE task_id = $1', [taskId])).rows;
    expect(await jobs(kept.taskId)).toEqual([]);
    expect(await jobs(released.taskId)).toEqual([{ operation_id: releases[1]!.operationId, state: 'pending' }]);
    expect(existsSync(worktreeOf(kept.taskId, r.name))).toBe(true);
    // The prepared job is carried out by a run of its own, as any job a batch lets go.
    await h.temporal.workflow.execute('cleanupTask', {
      workflowId: releases[1]!.workflowId,
      taskQueue: h.config.taskQueue,
      args: [
        {
          operationId: releases[1]!.operationId,
          taskId: released.taskId,
          trigger: 'idle_release',
          discardChanges: false,
          policy: h.config.cleanupPolicy,
          alreadyPrepared: true,
        },
      ],
    });
    expect((await waitForJob(h, releases[1]!.operationId)).state).toBe('succeeded');
    expect(existsSync(worktreeOf(released.taskId, r.name))).toBe(false);
    expect(existsSync(worktreeOf(kept.taskId, r.name))).toBe(true);
    expect((await h.api('DELETE', `/v1/tasks/${kept.taskId}/pin`)).status).toBe(200);
  });

  it('the per-host schedule releases an idle task (idle-release-<hostId>)', async () => {
    const r = await repo();
    const t = await stoppedTask(r);
    const suffix = `-${randomUUID()}`;
    const ids = await ensureSchedules(h.temporal, { ...h.config, idleReleaseAfterMs: 1 }, suffix);
    try {
      expect(ids.idleRelease).toBe(`idle-release-${h.config.hostId}${suffix}`);
      await h.temporal.schedule.getHandle(ids.idleRelease).trigger();
      let job: any;
      await waitUntil(async () => {
        job = (await h.api('GET', `/v1/cleanup-jobs?taskId=${t.taskId}`)).body.items[0];
        return Boolean(job);
      }, 'the schedule to start a release');
      expect(job.trigger).toBe('idle_release');
      expect((await waitForJob(h, job.operationId)).state).toBe('succeeded');
      expect(existsSync(worktreeOf(t.taskId, r.name))).toBe(false);
    } finally {
      for (const id of Object.values(ids)) await h.temporal.schedule.getHandle(id).delete();
    }
  });

  it('TWS_IDLE_RELEASE_AFTER=off removes the schedule an earlier start made; a release on request is for operators', async () => {
    const suffix = `-${randomUUID()}`;
    const ids = await ensureSchedules(h.temporal, { ...h.config, idleReleaseAfterMs: 60_000 }, suffix);
    try {
      expect((await h.temporal.schedule.getHandle(ids.idleRelease).describe()).scheduleId).toBe(ids.idleRelease);
      await ensureSchedules(h.temporal, { ...h.config, idleReleaseAfterMs: null }, suffix);
      await expect(h.temporal.schedule.getHandle(ids.idleRelease).describe()).rejects.toBeInstanceOf(
        ScheduleNotFoundError,
      );
      // The other schedules of the host stay.
      expect((await h.temporal.schedule.getHandle(ids.orphanSweep).describe()).scheduleId).toBe(ids.orphanSweep);
    } finally {
      for (const id of Object.values(ids))
        await h.temporal.schedule
          .getHandle(id)
          .delete()
          .catch(() => {});
    }
    const before = await rowCounts(h.pool);
    const refused = await h.api('POST', '/v1/idle-release', { hostId: h.config.hostId, idleForMs: 1 });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('forbidden');
    expect(await rowCounts(h.pool)).toEqual(before);
  });
});
