/**
 * Dirty decisions fail closed and are taken after the barrier; one ledger: a status that cannot
 * be read is dirty; a file an agent writes after a delete's preview (here: as it is stopped) is
 * saved with consent, kept without, never lost; what a removed task leaves stays an inventory row
 * owned by its job; saved work is listed per repository and restores with the README's command.
 */
import { existsSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskBranchName, taskDirName } from '../domain/task-layout';
import { archive, deleteTask, waitForJob } from './support/cleanup';
import { createHarness, OPERATOR_TOKEN, type Harness } from './support/harness';
import { repositories, createTask, expectSafeError, launch, pidOf, waitUntil } from './support/scenario';
import { branches, git, processAlive, worktreePaths } from './support/world';

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

const repo = repositories(() => h, 'ledger');

const wt = (taskId: string, name: string) => path.join(h.config.workspaceRoot, taskDirName(taskId), name);

/** An agent that writes a file only when it is told to stop: after any preview, before any removal. */
const WRITES_WHEN_STOPPED = [
  'sh',
  '-c',
  'trap "echo written-while-stopping > late.txt; exit 0" TERM; echo ready; while :; do sleep 0.1; done',
];

async function taskWithAgent(command: string[]) {
  const r = await repo();
  const taskId = await createTask(h, [r.id]);
  const res = await launch(h, taskId, { command });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  // Its trap is set once it says so (a stop before that would end it without writing).
  if (command === WRITES_WHEN_STOPPED)
    await waitUntil(
      async () => (await h.api('GET', `/v1/sessions/${res.body.sessionId}/logs`)).body === 'ready\n',
      'the agent is ready',
    );
  return { r, taskId, sessionId: res.body.sessionId as string, pid: await pidOf(h, res.body.sessionId) };
}

const inventory = async (worktreePath: string) =>
  (
    await h.pool.query(
      'SELECT environment_id, cleanup_operation_id, status FROM environment_repos WHERE worktree_path = $1',
      [worktreePath],
    )
  ).rows;

describe('a status that cannot be read is dirty', () => {
  it('a worktree whose git status fails refuses the delete, changing nothing, and an archive keeps it', async () => {
    const { r, taskId, sessionId } = await taskWithAgent(['sleep', '600']);
    await h.api('POST', `/v1/sessions/${sessionId}/stop`);
    // A corrupt index: `git status` (and `git worktree remove`) fail in this worktree.
    const gitdir = git(wt(taskId, r.name), 'rev-parse', '--absolute-git-dir');
    writeFileSync(path.join(gitdir, 'index'), 'not an index');

    const refused = await deleteTask(h, taskId);
    expect(refused.status).toBe(409);
    expectSafeError(refused.body, 'task_delete_dirty_worktree');
    expect(refused.body.error.dirtyRepositories).toEqual([r.id]);
    expect((await h.api('GET', `/v1/tasks/${taskId}`)).status).toBe(200);
    expect(
      (await h.pool.query('SELECT count(*)::int AS n FROM cleanup_jobs WHERE task_id = $1', [taskId])).rows[0].n,
    ).toBe(0);

    const job = await waitForJob(h, (await archive(h, taskId)).operationId);
    expect(job.report.worktrees).toEqual([
      { repositoryId: r.id, worktreePath: wt(taskId, r.name), outcome: 'kept_dirty' },
    ]);
    expect(existsSync(path.join(wt(taskId, r.name), 'README.md'))).toBe(true);
    expect(worktreePaths(r.dir)).toContain(wt(taskId, r.name));
    expect(branches(r.dir)).toContain(taskBranchName(taskId));
  });
});

describe('a delete decides on what it sees after the barrier stands and the agents are stopped', () => {
  it('without consent: the file written after the preview is kept, its worktree an inventory row `kept` owned by the job, which the orphan sweep keeps', async () => {
    const { r, taskId, pid } = await taskWithAgent(WRITES_WHEN_STOPPED);
    // The preview sees a clean worktree, so the delete is accepted.
    const res = await deleteTask(h, taskId);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const job = await waitForJob(h, res.body.operationId);
    expect(processAlive(pid)).toBe(false);
    expect(job.report.worktrees).toEqual([
      { repositoryId: r.id, worktreePath: wt(taskId, r.name), outcome: 'kept_dirty' },
    ]);
    expect(readFileSync(path.join(wt(taskId, r.name), 'late.txt'), 'utf8')).toBe('written-while-stopping\n');
    expect(branches(r.dir)).toContain(taskBranchName(taskId));
    // The task is gone; its worktree is not forgotten.
    expect((await h.api('GET', `/v1/tasks/${taskId}`)).status).toBe(404);
    expect(await inventory(wt(taskId, r.name))).toEqual([
      { environment_id: null, cleanup_operation_id: res.body.operationId, status: 'kept' },
    ]);

    const old = new Date(Date.now() - 48 * 3600_000);
    utimesSync(path.join(h.config.workspaceRoot, taskDirName(taskId)), old, old);
    const sweep = await h.api('POST', '/v1/orphan-sweep', {}, OPERATOR_TOKEN);
    expect(sweep.status).toBe(200);
    expect(sweep.body.removed).not.toContain(taskDirName(taskId));
    expect(existsSync(path.join(wt(taskId, r.name), 'late.txt'))).toBe(true);
  });

  it('with consent: exactly what is there after the stop is saved, listed under the repository, and restores with the README command', async () => {
    const { r, taskId, pid } = await taskWithAgent(WRITES_WHEN_STOPPED);
    writeFileSync(path.join(wt(taskId, r.name), 'early.txt'), 'before the delete\n');
    const res = await deleteTask(h, taskId, 'discardChanges=true');
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const job = await waitForJob(h, res.body.operationId);
    expect(processAlive(pid)).toBe(false);
    expect(existsSync(wt(taskId, r.name))).toBe(false);
    expect(worktreePaths(r.dir)).toEqual([r.dir]);
    const [entry] = job.report.worktrees;
    expect(entry).toMatchObject({
      repositoryId: r.id,
      outcome: 'saved_and_removed',
      savedRef: `refs/task-workspaces/saved/${taskId}/${r.id}`,
    });
    expect(await inventory(wt(taskId, r.name))).toEqual([
      { environment_id: null, cleanup_operation_id: res.body.operationId, status: 'deleted' },
    ]);

    const listed = await h.api('GET', `/v1/repositories/${r.id}/saved-work`);
    expect(listed.status).toBe(200);
    expect(listed.body.nextCursor).toBeNull();
    expect(listed.body.items).toEqual([
      {
        taskId,
        repositoryId: r.id,
        ref: entry.savedRef,
        commit: entry.savedCommit,
        savedAt: expect.any(String),
        trigger: 'delete',
        restoredAt: null,
        restore: null,
        leftOut: [],
      },
    ]);
    expect(git(r.dir, 'rev-parse', entry.savedRef)).toBe(entry.savedCommit);

    // The README's restore: `git stash apply <ref>` in any checkout of the repository.
    const restore = path.join(h.scratch, `restore-${taskId}`);
    git(r.dir, 'worktree', 'add', '-q', '--detach', restore);
    git(restore, 'stash', 'apply', entry.savedRef);
    expect(readFileSync(path.join(restore, 'late.txt'), 'utf8')).toBe('written-while-stopping\n');
    expect(readFileSync(path.join(restore, 'early.txt'), 'utf8')).toBe('before the delete\n');
  });
});

describe('GET /v1/repositories/:id/saved-work', () => {
  it('pages newest first with an opaque cursor; a bad cursor or limit is a 400, an unknown repository a 404', async () => {
    const r = await repo();
    const tasks: string[] = [];
    for (let i = 0; i < 3; i++) {
      const taskId = await createTask(h, [r.id]);
      const res = await launch(h, taskId);
      expect(res.status).toBe(201);
      writeFileSync(path.join(wt(taskId, r.name), `work-${i}.txt`), `${i}\n`);
      await waitForJob(h, (await deleteTask(h, taskId, 'discardChanges=true')).body.operationId);
      tasks.push(taskId);
    }
    const first = await h.api('GET', `/v1/repositories/${r.id}/saved-work?limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.items.map((i: any) => i.taskId)).toEqual([tasks[2], tasks[1]]);
    expect(typeof first.body.nextCursor).toBe('string');
    const second = await h.api('GET', `/v1/repositories/${r.id}/saved-work?limit=2&cursor=${first.body.nextCursor}`);
    expect(second.body).toEqual({ items: [expect.objectContaining({ taskId: tasks[0] })], nextCursor: null });

    for (const query of [
      'limit=0',
      'limit=201',
      'limit=x',
      'cursor=%00',
      `cursor=${Buffer.from('{"t":"x","r":1}').toString('base64url')}`,
      'other=1',
    ]) {
      const bad = await h.api('GET', `/v1/repositories/${r.id}/saved-work?${query}`);
      expect(bad.status, query).toBe(400);
      expect(bad.body.error.code).toBe('invalid_request');
    }
    expect((await h.api('GET', '/v1/repositories/00000000-0000-4000-8000-000000000000/saved-work')).status).toBe(404);
    expect((await h.api('GET', '/v1/repositories/not-an-id/saved-work')).status).toBe(400);
  });
});
