/** Every cleanup trigger through the API, borrowed environments, and the launch-versus-archive race [R6]. */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSchedules } from '../worker/schedules';
import { TaskIdAttr } from '../domain/search-attributes';
import { taskBranchName, taskDirName } from '../domain/task-layout';
import { archive, deleteTask, waitForJob } from './support/cleanup';
import { createHarness, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { repositories, createTask, expectSafeError, launch, pidOf } from './support/scenario';
import { branches, commitOf, git, listDir, processAlive, worktreePaths } from './support/world';

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

const repo = repositories(() => h, 'trig');

async function launched(taskId: string, body: Record<string, unknown> = {}) {
  const res = await launch(h, taskId, body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { ...res.body, pid: await pidOf(h, res.body.sessionId) };
}

const wt = (taskId: string, name: string) => path.join(h.config.workspaceRoot, taskDirName(taskId), name);

describe('triggers', () => {
  it('archive finds the worktree after the last session was deleted and the worker restarted [R6.1]', async () => {
    const r = await repo();
    const taskId = await createTask(h, [r.id]);
    const s = await launched(taskId);
    const del = await h.api('DELETE', `/v1/sessions/${s.sessionId}`);
    expect(del.status).toBe(204);
    // Deleting the last session removed nothing.
    expect(existsSync(wt(taskId, r.name))).toBe(true);
    expect(branches(r.dir)).toContain(taskBranchName(taskId));
    expect(processAlive(s.pid)).toBe(false);
    await h.stopWorker();
    await h.startWorker();
    const job = await waitForJob(h, (await archive(h, taskId)).operationId);
    expect(job.report.worktrees).toEqual([
      { repositoryId: r.id, worktreePath: wt(taskId, r.name), outcome: 'removed' },
    ]);
    expect(worktreePaths(r.dir)).toEqual([r.dir]);
  });

  it('cascade archive reserves every barrier, then cleans the tree deepest-first', async () => {
    const r = await repo();
    const root = await createTask(h, [r.id]);
    const child = await createTask(h, [r.id], { parentTaskId: root });
    const grandchild = await createTask(h, [r.id], { parentTaskId: child });
    for (const t of [root, child, grandchild]) await launched(t);
    const accepted = await archive(h, root, { cascade: true });
    expect(accepted.workflowId).toBe(`cascade/archive/${root}/${accepted.operationId}`);
    for (const t of [root, child, grandchild])
      expect((await h.api('GET', `/v1/tasks/${t}`)).body.state).toBe('archived');
    const jobs = (await h.api('GET', `/v1/cleanup-jobs?taskId=${root}`)).body.items;
    expect(jobs).toHaveLength(1);
    await waitForJob(h, accepted.operationId);
    const all = await h.pool.query(
      'SELECT task_id, state, finished_at FROM cleanup_jobs WHERE task_id = ANY($1::uuid[])',
      [[root, child, grandchild]],
    );
    expect(all.rows.every((j) => j.state === 'succeeded')).toBe(true);
    const finished = Object.fromEntries(all.rows.map((j) => [j.task_id, j.finished_at.getTime()]));
    expect(finished[grandchild]).toBeLessThanOrEqual(finished[child]);
    expect(finished[child]).toBeLessThanOrEqual(finished[root]);
    expect(worktreePaths(r.dir)).toEqual([r.dir]);
  });

  it('archiving an archived task says the same plain or cascaded: 409 task_archived, no second job; a cascade still archives the live children and names what it left out', async () => {
    const r = await repo();
    const root = await createTask(h, [r.id]);
    const child = await createTask(h, [r.id], { parentTaskId: root });
    for (const t of [root, child]) await launched(t);
    // The parent alone first: its child stays live.
    await waitForJob(h, (await archive(h, root)).operationId);
    expect((await h.api('GET', `/v1/tasks/${child}`)).body.state).not.toBe('archived');
    const plain = await h.api('POST', `/v1/tasks/${root}/archive`, {});
    expect(plain.status).toBe(409);
    expectSafeError(plain.body, 'task_archived');

    const cascade = await archive(h, root, { cascade: true });
    const childJobs = await h.pool.query<{ operation_id: string }>(
      'SELECT operation_id FROM cleanup_jobs WHERE task_id = $1',
      [child],
    );
    expect(childJobs.rows).toHaveLength(1);
    expect(cascade).toMatchObject({
      operations: [{ taskId: child, operationId: childJobs.rows[0]!.operation_id }],
      skipped: [{ taskId: root, reason: 'already_archived' }],
    });
    await waitForJob(h, childJobs.rows[0]!.operation_id);
    expect((await h.api('GET', `/v1/tasks/${child}`)).body.state).toBe('archived');
    expect(worktreePaths(r.dir)).toEqual([r.dir]);

    // The whole tree archived: a cascade is refused as the plain archive is.
    const again = await h.api('POST', `/v1/tasks/${root}/archive`, { cascade: true });
    expect(again.status).toBe(409);
    expectSafeError(again.body, 'task_archived');
    const jobs = await h.pool.query('SELECT task_id FROM cleanup_jobs WHERE task_id = ANY($1::uuid[])', [
      [root, child],
    ]);
    expect(jobs.rows).toHaveLength(2);
  });

  it('two cascade archives of one tree at once give what one after the other gives: one 202, one 409 task_archived, one job per task', async () => {
    const r = await repo();
    const root = await createTask(h, [r.id]);
    const child = await createTask(h, [r.id], { parentTaskId: root });
    const both = await Promise.all([0, 1].map(() => h.api('POST', `/v1/tasks/${root}/archive`, { cascade: true })));
    expect(both.map((b) => b.status).sort()).toEqual([202, 409]);
    const refused = both.find((b) => b.status === 409)!;
    expectSafeError(refused.body, 'task_archived');
    const accepted = both.find((b) => b.status === 202)!.body;
    expect(accepted.skipped).toEqual([]);
    expect(accepted.operations.map((o: { taskId: string }) => o.taskId)).toEqual([child, root]);
    const jobs = await h.pool.query('SELECT task_id FROM cleanup_jobs WHERE task_id = ANY($1::uuid[])', [
      [root, child],
    ]);
    expect(jobs.rows.map((j) => j.task_id).sort()).toEqual([root, child].sort());
    await waitForJob(h, accepted.operationId);
  });

  it('cascade delete refuses a dirty worktree anywhere in the tree before any change; with consent deletes the whole tree', async () => {
    const r = await repo();
    const root = await createTask(h, [r.id]);
    const child = await createTask(h, [r.id], { parentTaskId: root });
    for (const t of [root, child]) await launched(t);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(path.join(wt(child, r.name), 'wip.txt'), 'child work');
    const refused = await deleteTask(h, root, 'cascade=true');
    expect(refused.status).toBe(409);
    expectSafeError(refused.body, 'task_delete_dirty_worktree');
    expect(refused.body.error.dirtyRepositories).toEqual([r.id]);
    for (const t of [root, child]) expect((await h.api('GET', `/v1/tasks/${t}`)).status).toBe(200);
    const accepted = await deleteTask(h, root, 'cascade=true&discardChanges=true');
    expect(accepted.status).toBe(202);
    expect(accepted.body.workflowId).toBe(`cascade/delete/${root}/${accepted.body.operationId}`);
    await waitForJob(h, accepted.body.operationId);
    const jobs = (await h.pool.query('SELECT state, report FROM cleanup_jobs WHERE task_id = $1', [child])).rows;
    expect(jobs.map((j) => j.state)).toEqual(['succeeded']);
    expect(jobs[0].report.worktrees[0].outcome).toBe('saved_and_removed');
    for (const t of [root, child]) expect((await h.api('GET', `/v1/tasks/${t}`)).status).toBe(404);
    expect(worktreePaths(r.dir)).toEqual([r.dir]);
  });

  it('environment reset is refused while a session runs; then removes the environment, keeps the branch, and the next launch materializes afresh', async () => {
    const r = await repo();
    const taskId = await createTask(h, [r.id]);
    const s = await launched(taskId);
    git(wt(taskId, r.name), 'commit', '-q', '--allow-empty', '-m', 'kept');
    const head = commitOf(wt(taskId, r.name), 'HEAD');
    const refused = await h.api('POST', `/v1/tasks/${taskId}/environment/reset`, undefined, OPERATOR_TOKEN);
    expect(refused.status).toBe(409);
    expectSafeError(refused.body, 'session_running');
    expect((await h.api('POST', `/v1/sessions/${s.sessionId}/stop`)).body.state).toBe('stopped');
    expect(processAlive(s.pid)).toBe(false);
    const accepted = await h.api('POST', `/v1/tasks/${taskId}/environment/reset`, undefined, OPERATOR_TOKEN);
    expect(accepted.status).toBe(202);
    await waitForJob(h, accepted.body.operationId);
    expect(existsSync(wt(taskId, r.name))).toBe(false);
    expect(commitOf(r.dir, taskBranchName(taskId))).toBe(head);
    const again = await launched(taskId);
    expect(again.role).toBe('materialized');
    expect(commitOf(wt(taskId, r.name), 'HEAD')).toBe(head);
  });

  it('archive leaves alone an environment a session of another task uses; delete hands it to that task [R6.5]', async () => {
    const r = await repo();
    const parent = await createTask(h, [r.id]);
    await launched(parent);
    const child = await createTask(h, [r.id], { parentTaskId: parent, workspace: { mode: 'inherit_parent' } });
    const borrower = await launched(child);
    const env = borrower.taskEnvironmentId;

    const archived = await waitForJob(h, (await archive(h, parent)).operationId);
    expect(archived.report.borrowed).toMatchObject([{ environmentId: env, action: 'kept', toTaskId: null }]);
    expect(existsSync(wt(parent, r.name))).toBe(true);
    expect(processAlive(borrower.pid)).toBe(true);
    expect((await h.api('POST', `/v1/tasks/${parent}/unarchive`)).status).toBe(200);

    const deleted = await deleteTask(h, parent);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(202);
    const job = await waitForJob(h, deleted.body.operationId);
    expect(job.report.borrowed).toMatchObject([{ environmentId: env, action: 'handed_over', toTaskId: child }]);
    expect((await h.pool.query('SELECT task_id FROM task_environments WHERE id = $1', [env])).rows[0].task_id).toBe(
      child,
    );
    expect(
      Number(
        (
          await h.pool.query("SELECT count(*) FROM environment_repos WHERE environment_id = $1 AND status = 'active'", [
            env,
          ])
        ).rows[0].count,
      ),
    ).toBe(1);
    expect(existsSync(wt(parent, r.name))).toBe(true);
    expect(processAlive(borrower.pid)).toBe(true);
    // The new owner's next session attaches to the same workspace.
    const next = await launched(child);
    expect(next).toMatchObject({ role: 'attached', taskEnvironmentId: env });
  });

  it('quick-chat expiry deletes quick chats idle longer than the limit, through the cleanup path, saving their uncommitted work first', async () => {
    const r = await repo();
    const idle = await createTask(h, [r.id], { quickChat: true });
    const busy = await createTask(h, [r.id], { quickChat: true });
    await launched(idle);
    await h.api('POST', `/v1/sessions/${(await h.api('GET', `/v1/tasks/${idle}`)).body.sessions[0].id}/stop`);
    // Work no one can consent to lose: saved on the task's hidden ref before the worktree goes.
    writeFileSync(path.join(wt(idle, r.name), 'unsaved.txt'), 'a quick thought\n');
    await h.pool.query("UPDATE tasks SET last_activity_at = now() - interval '8 days' WHERE id = $1", [idle]);
    const suffix = `-${randomUUID()}`;
    const ids = await ensureSchedules(h.temporal, { ...h.config, quickChatIdleMs: 7 * 24 * 3600_000 }, suffix);
    try {
      await h.temporal.schedule.getHandle(ids.quickChatExpiry).trigger();
      let job: any;
      for (let i = 0; i < 100 && !job; i++) {
        job = (await h.api('GET', `/v1/cleanup-jobs?taskId=${idle}`)).body.items[0];
        if (!job) await new Promise((res) => setTimeout(res, 100));
      }
      expect(job.trigger).toBe('quick_chat_expiry');
      // Started by the tagged Schedule: the cleanup run carries the project's search attributes.
      expect(
        (await h.temporal.workflow.getHandle(job.workflowId).describe()).typedSearchAttributes.get(TaskIdAttr),
      ).toBe(idle);
      const done = await waitForJob(h, job.operationId);
      expect((await h.api('GET', `/v1/tasks/${idle}`)).status).toBe(404);
      expect((await h.api('GET', `/v1/tasks/${busy}`)).body.state).toBe('active');
      expect(existsSync(wt(idle, r.name))).toBe(false);
      expect(done.report.worktrees[0].outcome).toBe('saved_and_removed');
      const [saved] = git(r.dir, 'for-each-ref', '--format=%(refname)', `refs/task-workspaces/saved/${idle}/`)
        .split('\n')
        .filter(Boolean);
      expect(git(r.dir, 'show', `${saved}:unsaved.txt`)).toBe('a quick thought');
    } finally {
      for (const id of Object.values(ids)) await h.temporal.schedule.getHandle(id).delete();
    }
  });

  it('the launch-versus-archive race, repeated: no worktree ever escapes the snapshot', async () => {
    const r = await repo();
    for (let i = 0; i < 8; i++) {
      const taskId = await createTask(h, [r.id]);
      const [launchRes, archiveRes] = await Promise.all([
        launch(h, taskId),
        h.api('POST', `/v1/tasks/${taskId}/archive`, {}),
      ]);
      expect(archiveRes.status).toBe(202);
      expect([201, 409]).toContain(launchRes.status);
      if (launchRes.status === 409)
        expect(['task_archived', 'task_cleanup_in_progress']).toContain(launchRes.body.error.code);
      await waitForJob(h, archiveRes.body.operationId);
      // Whatever won, nothing of this task remains registered or on disk.
      expect(worktreePaths(r.dir).filter((p) => p.includes(taskId))).toEqual([]);
      expect(existsSync(path.join(h.config.workspaceRoot, taskDirName(taskId)))).toBe(false);
    }
  });
});

describe('orphan sweep [R6.7]', () => {
  it('removes only unreferenced folders older than the grace period; keeps live, young and doubtful ones', async () => {
    const r = await repo();
    const live = await createTask(h, [r.id]);
    await launched(live);
    const root = h.config.workspaceRoot;
    const old = (name: string) => {
      mkdirSync(path.join(root, name, 'sub'), { recursive: true });
      writeFileSync(path.join(root, name, 'sub', 'f.txt'), 'x');
      const t = new Date(Date.now() - 48 * 3600_000);
      utimesSync(path.join(root, name), t, t);
    };
    old('orphan-old');
    mkdirSync(path.join(root, 'orphan-young'));
    // An unknown worktree with uncommitted work: doubt keeps it.
    const strayTask = randomUUID();
    git(r.dir, 'worktree', 'add', '-q', '-b', `stray-${strayTask}`, path.join(root, 'stray', 'wt'));
    writeFileSync(path.join(root, 'stray', 'wt', 'dirty.txt'), 'uncommitted');
    const t = new Date(Date.now() - 48 * 3600_000);
    utimesSync(path.join(root, 'stray'), t, t);
    utimesSync(path.join(root, taskDirName(live)), t, t);
    // A folder an inventory row names in any state (here a `deleted` row: an undo that git would
    // not let remove a dirty worktree leaves one) is the records' business, never the sweep's.
    old('deleted-row-leftover');
    const env = (await h.pool.query('SELECT id FROM task_environments WHERE task_id = $1', [live])).rows[0].id;
    await h.pool.query(
      `INSERT INTO environment_repos (id, environment_id, repository_id, branch_slug, executor_type, worktree_id, worktree_path, worktree_branch, position, status)
       VALUES ($1, $2, $3, 'leftover', 'worktree', 'leftover', $4, 'leftover', 9, 'deleted')`,
      [randomUUID(), env, r.id, path.join(root, 'deleted-row-leftover', 'sub')],
    );

    const forbidden = await h.api('POST', '/v1/orphan-sweep', { dryRun: true }, USER_TOKEN);
    expect(forbidden.status).toBe(403);
    const dry = await h.api('POST', '/v1/orphan-sweep', { dryRun: true }, OPERATOR_TOKEN);
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    expect(dry.body.removed).toEqual(['orphan-old']);
    expect(dry.body.dryRun).toBe(true);
    expect(existsSync(path.join(root, 'orphan-old'))).toBe(true);

    const res = await h.api('POST', '/v1/orphan-sweep', {}, OPERATOR_TOKEN);
    expect(res.body.removed).toEqual(['orphan-old']);
    const kept = Object.fromEntries(res.body.kept.map((k: any) => [k.name, k.reason]));
    expect(kept[taskDirName(live)]).toBe('live');
    expect(kept['orphan-young']).toBe('young');
    expect(kept['stray']).toBe('doubt');
    expect(kept['deleted-row-leftover']).toBe('live');
    expect(existsSync(path.join(root, 'deleted-row-leftover', 'sub', 'f.txt'))).toBe(true);
    expect(listDir(root)).not.toContain('orphan-old');
    expect(existsSync(path.join(root, 'stray', 'wt', 'dirty.txt'))).toBe(true);
    expect(existsSync(wt(live, r.name))).toBe(true);
  });

  it('an inventory read failure keeps everything', async () => {
    const root = h.config.workspaceRoot;
    mkdirSync(path.join(root, 'orphan-unreadable'));
    const t = new Date(Date.now() - 48 * 3600_000);
    utimesSync(path.join(root, 'orphan-unreadable'), t, t);
    // The inventory cannot be read (the table is renamed away for the duration of the sweep).
    await h.pool.query('ALTER TABLE environment_repos RENAME TO environment_repos_away');
    try {
      const res = await h.api('POST', '/v1/orphan-sweep', {}, OPERATOR_TOKEN);
      expect(res.status).toBe(500);
    } finally {
      await h.pool.query('ALTER TABLE environment_repos_away RENAME TO environment_repos');
    }
    expect(existsSync(path.join(root, 'orphan-unreadable'))).toBe(true);
  });
});
