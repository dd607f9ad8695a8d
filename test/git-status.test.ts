/** Git status of a shared environment is one status, and only newer observations of the canonical workspace replace it [R1.5]. */
import { readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observationsOf, recordObservation } from '../db/git-status';
import { taskBranchName, taskDirName } from '../domain/task-layout';
import { createHarness, type Harness } from './support/harness';
import { createTask, launch, pidOf, registerRepo } from './support/scenario';
import { commitOf, git, makeRepo } from './support/world';

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

describe('git status [R1.5]', () => {
  it('reads the canonical workspace, not the source checkout, and says when it was observed', async () => {
    const repo = makeRepo(h.scratch, 'status-1');
    const repoId = await registerRepo(h, repo, 'status-1');
    const taskId = await createTask(h, [repoId]);
    const first = await launch(h, taskId);
    await pidOf(h, first.body.sessionId);
    const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), 'status-1');
    writeFileSync(path.join(worktree, 'README.md'), 'changed in the worktree\n');
    writeFileSync(path.join(worktree, 'new.txt'), 'new\n');
    git(worktree, 'commit', '-q', '--allow-empty', '-m', 'work');
    writeFileSync(path.join(repo, 'only-in-source.txt'), 'the source checkout is not the workspace\n');

    const before = Date.now();
    const res = await h.api('GET', `/v1/tasks/${taskId}/git-status`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.taskEnvironmentId).toBe(first.body.taskEnvironmentId);
    expect(res.body.repositories).toHaveLength(1);
    const status = res.body.repositories[0];
    expect(status).toMatchObject({
      repositoryId: repoId,
      branch: taskBranchName(taskId),
      head: commitOf(worktree, 'HEAD'),
      ahead: 1,
      behind: 0,
    });
    expect(status.files).toEqual([
      { path: 'README.md', status: ' M' },
      { path: 'new.txt', status: '??' },
    ]);
    expect(Date.parse(status.observedAt)).toBeGreaterThanOrEqual(before - 1000);

    // A session of another task attached to the same environment sees the same one status.
    const child = await createTask(h, [repoId], { parentTaskId: taskId, workspace: { mode: 'inherit_parent' } });
    const childStatus = await h.api('GET', `/v1/tasks/${child}/git-status`);
    expect(childStatus.body.taskEnvironmentId).toBe(first.body.taskEnvironmentId);
    expect(childStatus.body.repositories[0].files).toEqual(status.files);
  });

  it('an older observation, or one from a path that is not the workspace, never replaces a newer one', async () => {
    const repo = makeRepo(h.scratch, 'status-2');
    const repoId = await registerRepo(h, repo, 'status-2');
    const taskId = await createTask(h, [repoId]);
    const first = await launch(h, taskId);
    await pidOf(h, first.body.sessionId);
    const envId = first.body.taskEnvironmentId;
    const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), 'status-2');
    const obs = (observedAt: string, workspacePath: string, file: string) => ({
      repositoryId: repoId,
      workspacePath,
      observedAt,
      branch: 'b',
      head: null,
      ahead: 0,
      behind: 0,
      files: [{ path: file, status: '??' }],
    });

    // Out of order: the newest arrives first, then an older one; and one taken in the source checkout.
    expect(await recordObservation(h.pool, envId, obs('2030-01-01T00:00:10.000Z', worktree, 'newest'))).toBe(true);
    expect(await recordObservation(h.pool, envId, obs('2030-01-01T00:00:05.000Z', worktree, 'older'))).toBe(false);
    expect(await recordObservation(h.pool, envId, obs('2030-01-01T00:00:20.000Z', repo, 'from-source-checkout'))).toBe(
      false,
    );
    expect((await observationsOf(h.pool, envId)).map((o) => [o.observedAt, o.files[0]!.path])).toEqual([
      ['2030-01-01T00:00:10.000Z', 'newest'],
    ]);
    // A live read now is older than the stored (future) observation: it does not replace it either.
    const res = await h.api('GET', `/v1/tasks/${taskId}/git-status`);
    expect(res.body.repositories[0].files).toEqual([{ path: 'newest', status: '??' }]);
    expect(await recordObservation(h.pool, envId, obs('2030-01-01T00:00:30.000Z', worktree, 'newer'))).toBe(true);
    expect((await observationsOf(h.pool, envId))[0]!.files[0]!.path).toBe('newer');
  });

  it('a worktree given to its agent uid has its index refreshed once, as that uid: no file is re-read on each status, and a change made afterwards is still seen', async () => {
    const files = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`src/f${i}.txt`, `file ${i}\n`]));
    const repo = makeRepo(h.scratch, 'status-3', { files: { 'README.md': '# same size\n', ...files } });
    const repoId = await registerRepo(h, repo, 'status-3');
    const taskId = await createTask(h, [repoId]);
    const first = await launch(h, taskId);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    await pidOf(h, first.body.sessionId);
    const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), 'status-3');
    const index = git(worktree, 'rev-parse', '--path-format=absolute', '--git-path', 'index').trim();
    const agentUid = statSync(worktree).uid;
    expect(agentUid).not.toBe(0); // given to the agent's uid (the harness runs agents sandboxed)
    const owned = () => {
      const st = statSync(index);
      return { uid: st.uid, gid: st.gid, mode: (st.mode & 0o777).toString(8) };
    };
    // The index stays the agent's, read and written by it alone (git makes it 0666 less the umask).
    const given = owned();
    expect(given).toMatchObject({ uid: agentUid, gid: agentUid });
    expect(Number.parseInt(given.mode, 8) & 0o602).toBe(0o600);
    // Every entry's stat data match its file after the chown: `diff-files` (which never refreshes)
    // names each file whose stat data differ, and names none.
    expect(git(worktree, 'diff-files', '--name-only')).toBe('');
    const status = async () => {
      const res = await h.api('GET', `/v1/tasks/${taskId}/git-status`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.repositories[0].files;
    };
    expect(await status()).toEqual([]);

    // A change of the same size with the mtime put back is still seen (its ctime moved); a plain edit
    // too. git (2.39 here) compares times to the second: the ctime the refresh recorded (the chown's)
    // must be in an earlier second, as it must after any index write for any git, so the edit waits for one.
    await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 20));
    const readme = path.join(worktree, 'README.md');
    const { atime, mtime, mtimeMs } = statSync(readme);
    writeFileSync(readme, '# SAME SIZE\n');
    utimesSync(readme, atime, mtime); // to the millisecond (what node can set)
    expect(Math.abs(statSync(readme).mtimeMs - mtimeMs)).toBeLessThan(1);
    writeFileSync(path.join(worktree, 'src/f7.txt'), 'edited\n');
    expect(await status()).toEqual([
      { path: 'README.md', status: ' M' },
      { path: 'src/f7.txt', status: ' M' },
    ]);
    expect(readFileSync(readme, 'utf8')).toBe('# SAME SIZE\n');
    // The service's reads wrote nothing: the index is the agent's as before.
    expect(owned()).toEqual(given);
  });

  it('answers 404 for a task without a workspace', async () => {
    const taskId = await createTask(h, []);
    const res = await h.api('GET', `/v1/tasks/${taskId}/git-status`);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  });
});
