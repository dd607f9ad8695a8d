/**
 * Environments other tasks use [R6.5]: no environment is left without a live
 * owner or a pending cleanup. A live task's session in any state protects an environment; one
 * kept at archive is cleaned by a `borrow_ended` follow-up once its last borrower is gone; a
 * shared group's environment goes to a live member when its owner is archived.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { environmentsBorrowedBy, reserveEndedBorrows } from '../db/borrow-follow-up';
import { inTransaction } from '../db/pool';
import { OWNERSHIP_MARKER_FILE, taskBranchName, taskDirName } from '../domain/task-layout';
import { archive, waitForJob } from './support/cleanup';
import { createHarness, type Harness } from './support/harness';
import { createGroupTasks, createTask, launch, pidOf, registerRepo, waitUntil } from './support/scenario';
import {
  branches,
  clearGitFault,
  gitWrapper,
  makeRepo,
  processAlive,
  processCwd,
  worktreePaths,
} from './support/world';

let h: Harness;
beforeAll(async () => void (h = await createHarness()));
afterAll(async () => h?.close());

/** A registered repository of its own for each test. */
async function repo(on: Harness = h) {
  const name = `borrow-${randomUUID().slice(0, 8)}`;
  const dir = makeRepo(on.scratch, name);
  return { dir, name, id: await registerRepo(on, dir, name) };
}

async function launched(taskId: string, on: Harness = h) {
  const res = await launch(on, taskId);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return {
    ...(res.body as { sessionId: string; taskEnvironmentId: string; role: string }),
    pid: await pidOf(on, res.body.sessionId),
  };
}

const wt = (taskId: string, name: string, on: Harness = h) =>
  path.join(on.config.workspaceRoot, taskDirName(taskId), name);

/** The task's jobs of one trigger, oldest first. */
async function jobsOf(taskId: string, trigger: string, on: Harness = h): Promise<any[]> {
  const res = await on.api('GET', `/v1/cleanup-jobs?taskId=${taskId}`);
  expect(res.status).toBe(200);
  return res.body.items.filter((j: any) => j.trigger === trigger).reverse();
}

/** The follow-up of the owner's archive, once listed, at its end. */
async function followUpOf(ownerTaskId: string, on: Harness = h, states = ['succeeded']): Promise<any> {
  await waitUntil(async () => (await jobsOf(ownerTaskId, 'borrow_ended', on)).length > 0, 'the follow-up job', 30_000);
  const [job, ...more] = await jobsOf(ownerTaskId, 'borrow_ended', on);
  expect(more).toEqual([]);
  return waitForJob(on, job.operationId, states);
}

const ownerOf = async (environmentId: string, on: Harness = h) =>
  (await on.pool.query('SELECT task_id FROM task_environments WHERE id = $1', [environmentId])).rows[0]?.task_id;

/** An owner with a workspace and a child that borrows it (inherit_parent), both with a running session. */
async function ownerAndBorrower(on: Harness = h) {
  const r = await repo(on);
  const owner = await createTask(on, [r.id]);
  const own = await launched(owner, on);
  const child = await createTask(on, [r.id], { parentTaskId: owner, workspace: { mode: 'inherit_parent' } });
  const borrowed = await launched(child, on);
  expect(borrowed.taskEnvironmentId).toBe(own.taskEnvironmentId);
  return { r, owner, child, own, borrowed, env: own.taskEnvironmentId };
}

/** The owner's archive kept the environment for its borrower: the worktree stays, nothing follows yet. */
async function archiveKeeping(owner: string, env: string, worktree: string, on: Harness = h) {
  const job = await waitForJob(on, (await archive(on, owner)).operationId);
  expect(job.report.borrowed).toMatchObject([{ environmentId: env, action: 'kept', toTaskId: null }]);
  expect(existsSync(worktree)).toBe(true);
  expect(await jobsOf(owner, 'borrow_ended', on)).toEqual([]);
}

/** The archived owner's environment is gone as its archive would have left it: worktree removed from disk and git, branch kept. */
function expectCleanedAsArchive(r: { dir: string; name: string }, owner: string, job: any) {
  expect(job).toMatchObject({ taskId: owner, trigger: 'borrow_ended', state: 'succeeded' });
  expect(job.report.worktrees).toEqual([
    { repositoryId: expect.any(String), worktreePath: wt(owner, r.name), outcome: 'removed' },
  ]);
  expect(existsSync(path.join(h.config.workspaceRoot, taskDirName(owner)))).toBe(false);
  expect(worktreePaths(r.dir)).toEqual([r.dir]);
  expect(branches(r.dir)).toContain(taskBranchName(owner));
}

describe('an environment kept at archive is cleaned when its last borrower is gone [R6.5]', () => {
  it('a kept borrowed environment is cleaned after its borrower’s archive', async () => {
    const { r, owner, child, borrowed, env } = await ownerAndBorrower();
    await archiveKeeping(owner, env, wt(owner, r.name));
    expect(processAlive(borrowed.pid)).toBe(true);

    await waitForJob(h, (await archive(h, child)).operationId);
    const job = await followUpOf(owner);
    expectCleanedAsArchive(r, owner, job);
    expect(job.workflowId).toBe(`cleanup/borrow_ended/${owner}/${job.operationId}`);
    expect(processAlive(borrowed.pid)).toBe(false);
    expect((await h.pool.query('SELECT status FROM task_environments WHERE id = $1', [env])).rows[0].status).toBe(
      'released',
    );
    // The owner stays archived; its environment's rows say the worktree is gone.
    expect((await h.api('GET', `/v1/tasks/${owner}`)).body.state).toBe('archived');
    expect(
      (
        await h.pool.query(
          "SELECT count(*)::int AS n FROM environment_repos WHERE environment_id = $1 AND status = 'active'",
          [env],
        )
      ).rows[0].n,
    ).toBe(0);
  });

  it('deleting the borrower’s sessions, the last one included, removes nothing; the borrower’s archive then cleans it, its sessions gone', async () => {
    const { r, owner, child, borrowed, env } = await ownerAndBorrower();
    const second = await launched(child);
    await archiveKeeping(owner, env, wt(owner, r.name));

    // A session delete is never a cleanup trigger [R6]: not the first, not the last.
    expect((await h.api('DELETE', `/v1/sessions/${borrowed.sessionId}`)).status).toBe(204);
    expect((await h.api('DELETE', `/v1/sessions/${second.sessionId}`)).status).toBe(204);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM sessions WHERE task_id = $1', [child])).rows[0].n).toBe(
      0,
    );
    expect(await jobsOf(owner, 'borrow_ended')).toEqual([]);
    expect(existsSync(wt(owner, r.name))).toBe(true);
    expect(worktreePaths(r.dir)).toContain(wt(owner, r.name));

    // The borrower's own archive ends the borrow (it works in its parent's workspace, sessions or not).
    await waitForJob(h, (await archive(h, child)).operationId);
    expectCleanedAsArchive(r, owner, await followUpOf(owner));
  });

  it('the follow-up keeps a dirty worktree and the branch, as the owner’s archive would have', async () => {
    const { r, owner, child, env } = await ownerAndBorrower();
    await archiveKeeping(owner, env, wt(owner, r.name));
    writeFileSync(path.join(wt(owner, r.name), 'wip.txt'), 'the borrower’s unsaved work\n');
    await waitForJob(h, (await archive(h, child)).operationId);
    const job = await followUpOf(owner);
    expect(job.report.worktrees).toEqual([
      { repositoryId: r.id, worktreePath: wt(owner, r.name), outcome: 'kept_dirty' },
    ]);
    expect(readFileSync(path.join(wt(owner, r.name), 'wip.txt'), 'utf8')).toBe('the borrower’s unsaved work\n');
    expect(worktreePaths(r.dir)).toContain(wt(owner, r.name));
    expect(branches(r.dir)).toContain(taskBranchName(owner));
  });

  it('a follow-up whose start was lost (the process died after the borrower’s archive committed) is started by the consistency check', async () => {
    const { r, owner, child, borrowed, env } = await ownerAndBorrower();
    await archiveKeeping(owner, env, wt(owner, r.name));
    expect((await h.api('POST', `/v1/sessions/${borrowed.sessionId}/stop`)).status).toBe(200);
    // The borrower's archive's transaction, committed, and no start after it (as when the process
    // dies there): the borrower archived, the follow-up reserved with its snapshot.
    const [reserved] = await inTransaction(h.pool, async (client) => {
      await client.query('UPDATE tasks SET archived_at = now() WHERE id = $1', [child]);
      return reserveEndedBorrows(client, await environmentsBorrowedBy(client, child));
    });
    expect((await jobsOf(owner, 'borrow_ended'))[0]).toMatchObject({
      operationId: reserved!.operationId,
      state: 'pending',
    });
    expect(existsSync(wt(owner, r.name))).toBe(true);

    await h.pool.query("UPDATE cleanup_jobs SET updated_at = now() - interval '2 minutes' WHERE operation_id = $1", [
      reserved!.operationId,
    ]);
    const check = await h.temporal.workflow.execute('reconcileRecords', {
      workflowId: `reconcile/${randomUUID()}`,
      taskQueue: h.config.taskQueue,
      args: [{ hostId: h.config.hostId }],
    });
    expect(check).toMatchObject({ records: { repaired: { cleanup_job_resumed: 1 } } });
    expectCleanedAsArchive(r, owner, await followUpOf(owner));
  });

  it('an owner unarchived while its follow-up waits to retry keeps its workspace: the follow-up is cancelled', async () => {
    const base = await createHarness();
    const wrapper = gitWrapper(base.scratch, { failSubcommand: 'worktree remove', failTimes: 1000 });
    const slow = await createHarness({ gitBinary: wrapper, cleanupPolicy: { waitsMs: [600_000], maxAttempts: 8 } });
    try {
      const { r, owner, child, env } = await ownerAndBorrower(slow);
      await archiveKeeping(owner, env, wt(owner, r.name, slow), slow);
      await waitForJob(slow, (await archive(slow, child)).operationId);
      const waiting = await followUpOf(owner, slow, ['retry_wait']);
      clearGitFault(wrapper);

      const unarchived = await slow.api('POST', `/v1/tasks/${owner}/unarchive`);
      expect(unarchived.status, JSON.stringify(unarchived.body)).toBe(200);
      expect(unarchived.body.state).toBe('active');
      expect(await waitForJob(slow, waiting.operationId, ['cancelled'])).toMatchObject({
        trigger: 'borrow_ended',
        state: 'cancelled',
      });
      expect(worktreePaths(r.dir)).toContain(wt(owner, r.name, slow));
      expect((await launch(slow, owner)).status).toBe(201);
    } finally {
      await slow.close();
      await base.close();
    }
  });
});

describe('who protects an environment [R6.5]', () => {
  it('a stopped session of a live task protects the environment at the owner’s archive', async () => {
    const { r, owner, borrowed, env } = await ownerAndBorrower();
    expect((await h.api('POST', `/v1/sessions/${borrowed.sessionId}/stop`)).body.state).toBe('stopped');
    expect(processAlive(borrowed.pid)).toBe(false);
    await archiveKeeping(owner, env, wt(owner, r.name));
    expect(worktreePaths(r.dir)).toContain(wt(owner, r.name));
    expect(
      (
        await h.pool.query(
          "SELECT count(*)::int AS n FROM environment_repos WHERE environment_id = $1 AND status = 'active'",
          [env],
        )
      ).rows[0].n,
    ).toBe(1);
    expect(await ownerOf(env)).toBe(owner);
  });

  it('a task being archived protects nothing: a cascade archive of an owner and its borrowing child cleans the environment in the owner’s own job', async () => {
    const { r, owner, child, borrowed, env } = await ownerAndBorrower();
    const accepted = await archive(h, owner, { cascade: true });
    await waitForJob(h, accepted.operationId);
    const [own] = await jobsOf(owner, 'archive');
    expect(own.report.borrowed).toEqual([]);
    expect(own.report.worktrees).toEqual([{ repositoryId: r.id, worktreePath: wt(owner, r.name), outcome: 'removed' }]);
    expect(await jobsOf(owner, 'borrow_ended')).toEqual([]);
    expect((await h.api('GET', `/v1/tasks/${child}`)).body.state).toBe('archived');
    expect(processAlive(borrowed.pid)).toBe(false);
    expect(worktreePaths(r.dir)).toEqual([r.dir]);
    expect(await ownerOf(env)).toBe(owner);
  });
});

describe('a shared group’s environment [R6.5]', () => {
  async function group(members: number) {
    const r = await repo();
    return { r, ...(await createGroupTasks(h, [r.id], members)) };
  }

  it('a shared group keeps working after its owner is archived: the environment goes to a live member, whose sessions attach to the same workspace', async () => {
    const { r, groupId, tasks } = await group(3);
    const [owner, member, idle] = tasks as [string, string, string];
    const first = await launched(owner);
    expect(first.role).toBe('materialized');
    const attached = await launched(member);
    expect(attached).toMatchObject({ role: 'attached', taskEnvironmentId: first.taskEnvironmentId });
    const env = first.taskEnvironmentId;
    const workspace = wt(owner, r.name);

    const job = await waitForJob(h, (await archive(h, owner)).operationId);
    // The member that works in it takes it; nothing is removed; the owner's agent is stopped, the member's runs on.
    expect(job.report.borrowed).toMatchObject([{ environmentId: env, action: 'handed_over', toTaskId: member }]);
    expect(job.report.worktrees).toEqual([]);
    expect(await ownerOf(env)).toBe(member);
    expect(
      (await h.pool.query('SELECT environment_id FROM workspace_groups WHERE id = $1', [groupId])).rows[0]
        .environment_id,
    ).toBe(env);
    expect(
      JSON.parse(readFileSync(path.join(h.config.workspaceRoot, taskDirName(owner), OWNERSHIP_MARKER_FILE), 'utf8')),
    ).toMatchObject({ taskId: member, environmentId: env });
    expect(processAlive(first.pid)).toBe(false);
    expect(processAlive(attached.pid)).toBe(true);

    for (const t of [member, idle]) {
      const next = await launched(t);
      expect(next).toMatchObject({ role: 'attached', taskEnvironmentId: env });
      expect(processCwd(next.pid)).toBe(workspace);
    }
    expect(worktreePaths(r.dir)).toEqual([r.dir, workspace]);
    expect(await jobsOf(owner, 'borrow_ended')).toEqual([]);
  });

  it('with no live member left, the group environment is cleaned like any other', async () => {
    const { r, tasks } = await group(2);
    const [owner, member] = tasks as [string, string];
    const first = await launched(owner);
    const attached = await launched(member);
    await waitForJob(h, (await archive(h, member)).operationId);
    expect(processAlive(attached.pid)).toBe(false);
    // An archived member takes nothing and protects nothing.
    const job = await waitForJob(h, (await archive(h, owner)).operationId);
    expect(job.report.borrowed).toEqual([]);
    expect(job.report.worktrees).toEqual([{ repositoryId: r.id, worktreePath: wt(owner, r.name), outcome: 'removed' }]);
    expect(await ownerOf(first.taskEnvironmentId)).toBe(owner);
    expect(worktreePaths(r.dir)).toEqual([r.dir]);
    expect(existsSync(path.join(h.config.workspaceRoot, taskDirName(owner)))).toBe(false);
  });
});
