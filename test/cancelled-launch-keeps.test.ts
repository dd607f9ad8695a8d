/**
 * A cancelled launch that published its worktree never strands work in it.
 * The launch (or a resume that materializes again) is stopped while it is still starting, and by
 * the time its undo runs the worktree holds uncommitted work (the agent's, written as it starts,
 * and a file written into it meanwhile). The undo cannot remove it: it keeps the worktree with its
 * branch (never deleted while checked out) and its marker, the environment is `released` with the
 * worktree's row, as an archive that kept a dirty worktree leaves it; the task launches again on
 * that worktree, the work there. A worktree whose branch is gone (what older undos left) is
 * repaired at its last HEAD on the next launch.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { taskBranchName, worktreePath } from '../domain/task-layout';
import { archive, waitForJob } from './support/cleanup';
import { harnessesPerTest, USER_TOKEN, type Harness } from './support/harness';
import { agentOutputUntil, createTask, launch, registerRepo, waitUntil } from './support/scenario';
import { branches, git, gitWrapper, makeRepo, processCwd, setGitSlow, worktreePaths } from './support/world';
import { pidOf } from './support/scenario';

const { harness, scratch } = harnessesPerTest();
const AGENT = ['sh', '-c', 'echo agent > agent.txt; sleep 600'];

async function asyncPost(h: Harness, route: string, body: unknown) {
  const res = await fetch(`${h.baseUrl}${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${USER_TOKEN}`, 'content-type': 'application/json', prefer: 'respond-async' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

/** Stops the session while its run is still making the worktree (git's add is slowed), and writes into the worktree once it exists, before the undo's (slowed) removal. */
async function cancelWhileStarting(h: Harness, sessionId: string, worktree: string): Promise<void> {
  const stopping = h.api('POST', `/v1/sessions/${sessionId}/stop`);
  await waitUntil(async () => existsSync(path.join(worktree, '.git')), 'the worktree to exist', 30_000);
  writeFileSync(path.join(worktree, 'notes.txt'), 'work done while it started\n');
  expect((await stopping).status).toBeLessThan(500);
}

async function expectKeptAndLaunchable(
  h: Harness,
  repo: string,
  taskId: string,
  worktree: string,
  environmentId: string,
): Promise<void> {
  // Kept, registered, on its branch, named by a row, the work in it.
  expect(worktreePaths(repo)).toContain(worktree);
  expect(branches(repo)).toContain(taskBranchName(taskId));
  expect(git(worktree, 'branch', '--show-current')).toBe(taskBranchName(taskId));
  expect(readFileSync(path.join(worktree, 'notes.txt'), 'utf8')).toBe('work done while it started\n');
  const env = (await h.pool.query('SELECT status FROM task_environments WHERE id = $1', [environmentId])).rows[0];
  expect(env.status).toBe('released');
  const rows = (
    await h.pool.query("SELECT worktree_path FROM environment_repos WHERE environment_id = $1 AND status = 'active'", [
      environmentId,
    ])
  ).rows;
  expect(rows).toEqual([{ worktree_path: worktree }]);
  // Launchable again, on that worktree, with the work there for the agent.
  const again = await launch(h, taskId, { command: ['sh', '-c', 'cat notes.txt; echo ready; sleep 600'] });
  expect(again.status, JSON.stringify(again.body)).toBe(201);
  expect(again.body.taskEnvironmentId).toBe(environmentId);
  expect(await agentOutputUntil(h, again.body.executionId, 'ready')).toContain('work done while it started');
  expect(processCwd(await pidOf(h, again.body.sessionId))).toBe(worktree);
}

describe('a cancelled launch keeps the work it cannot remove', () => {
  it('a first launch (respond-async) stopped while starting: the dirty worktree is kept with its branch and row; the task launches again on it', async () => {
    const dir = await scratch();
    const h = await harness({
      gitBinary: gitWrapper(dir, { sleepOnWorktreeAdd: 2, sleepOnWorktreeRemove: 2 }),
    });
    const repo = makeRepo(h.scratch, 'kept');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'kept')]);
    const started = await asyncPost(h, `/v1/tasks/${taskId}/sessions`, {
      executorType: 'worktree',
      agentProfile: 'shell',
      command: AGENT,
    });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const worktree = worktreePath(h.config.workspaceRoot, taskId, 'kept');
    await cancelWhileStarting(h, started.body.sessionId, worktree);
    await waitUntil(
      async () =>
        (await h.pool.query('SELECT status FROM task_environments WHERE task_id = $1', [taskId])).rows[0]?.status ===
        'released',
      'the environment released',
      30_000,
    );
    const environmentId = (await h.pool.query('SELECT id FROM task_environments WHERE task_id = $1', [taskId])).rows[0]
      .id;
    await expectKeptAndLaunchable(h, repo, taskId, worktree, environmentId);
  });

  it('an async resume that materializes again (launch, stop, archive, unarchive) stopped while starting: the same', async () => {
    const dir = await scratch();
    const wrapper = gitWrapper(dir, { sleepOnWorktreeAdd: 2, sleepOnWorktreeRemove: 2 });
    setGitSlow(wrapper, false); // the set-up's launch and archive at git's own pace: only the resume is slowed
    const h = await harness({ gitBinary: wrapper });
    const repo = makeRepo(h.scratch, 'again');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'again')]);
    const first = await launch(h, taskId);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect((await h.api('POST', `/v1/sessions/${first.body.sessionId}/stop`)).status).toBe(200);
    await waitForJob(h, (await archive(h, taskId)).operationId);
    expect((await h.api('POST', `/v1/tasks/${taskId}/unarchive`)).status).toBe(200);
    const worktree = worktreePath(h.config.workspaceRoot, taskId, 'again');
    expect(existsSync(worktree)).toBe(false);
    setGitSlow(wrapper, true);
    const resumed = await asyncPost(h, `/v1/sessions/${first.body.sessionId}/resume`, { args: [] });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(202);
    await cancelWhileStarting(h, first.body.sessionId, worktree);
    await waitUntil(
      async () =>
        (await h.pool.query('SELECT status FROM task_environments WHERE id = $1', [first.body.taskEnvironmentId]))
          .rows[0]?.status === 'released',
      'the environment released',
      30_000,
    );
    await expectKeptAndLaunchable(h, repo, taskId, worktree, first.body.taskEnvironmentId);
  });

  it('a registered worktree whose branch is gone is repaired at its last HEAD by the next launch, never "not readable" forever', async () => {
    const h = await harness();
    const repo = makeRepo(h.scratch, 'repaired');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'repaired')]);
    const first = await launch(h, taskId);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const worktree = worktreePath(h.config.workspaceRoot, taskId, 'repaired');
    writeFileSync(path.join(worktree, 'notes.txt'), 'work done while it started\n');
    git(worktree, 'add', 'notes.txt');
    git(worktree, 'commit', '-q', '-m', 'committed work');
    const head = git(worktree, 'rev-parse', 'HEAD');
    expect((await h.api('POST', `/v1/sessions/${first.body.sessionId}/stop`)).status).toBe(200);
    writeFileSync(path.join(worktree, 'untracked.txt'), 'keeps it dirty\n');
    await waitForJob(h, (await archive(h, taskId)).operationId);
    expect((await h.api('POST', `/v1/tasks/${taskId}/unarchive`)).status).toBe(200);
    // What an older undo did: the branch deleted under the worktree that has it checked out.
    git(repo, 'update-ref', '-d', `refs/heads/${taskBranchName(taskId)}`);
    const again = await launch(h, taskId, { command: ['sh', '-c', 'cat notes.txt; echo ready; sleep 600'] });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(git(repo, 'rev-parse', taskBranchName(taskId))).toBe(head);
    expect(await agentOutputUntil(h, again.body.executionId, 'ready')).toContain('work done while it started');
    expect(readFileSync(path.join(worktree, 'untracked.txt'), 'utf8')).toBe('keeps it dirty\n');
  });
});
