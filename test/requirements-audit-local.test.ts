/**
 * Requirements of the `local` executor and of the workspace view driven end to end: a source
 * checkout that is no longer the registered repository's is never launched in, on a first
 * launch or on a transition [R1.2, R3.2]; a missing source checkout refuses a transition with
 * nothing modified [R3.2-R3.4]; only a session that never had an environment may be shown its
 * source checkout [R2.3].
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { worktreePath } from '../domain/task-layout';
import { archive, waitForJob } from './support/cleanup';
import { createHarness, type Harness } from './support/harness';
import { createTask, expectLaunchRefused, launch, pidOf, registerRepo } from './support/scenario';
import { fingerprint, git, makeRepo, processAlive, processCwd, worktreePaths } from './support/world';

let h: Harness;
let n = 0;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

async function registeredTask() {
  const name = `local-${++n}`;
  const repo = makeRepo(h.scratch, name);
  const repoId = await registerRepo(h, repo, name);
  return { name, repo, repoId, taskId: await createTask(h, [repoId]) };
}

/**
 * The registered folder now holds another repository (its own history, its own .git): the
 * registered one is moved aside. Returns the undo.
 */
function replaceWithAnotherRepository(repo: string): () => void {
  const registered = `${repo}.registered`;
  renameSync(repo, registered);
  const other = makeRepo(h.scratch, `${path.basename(repo)}-other`, { files: { 'OTHER.md': 'another repository\n' } });
  renameSync(other, repo);
  return () => {
    rmSync(repo, { recursive: true, force: true });
    renameSync(registered, repo);
  };
}

const environmentsOf = async (taskId: string) =>
  (
    await h.pool.query(
      'SELECT id, executor_type, status, materialized, workspace_path, ownership_generation FROM task_environments WHERE task_id = $1',
      [taskId],
    )
  ).rows;
const inventoryOf = async (envId: string) =>
  (
    await h.pool.query(
      'SELECT id, executor_type, worktree_id, worktree_path, worktree_branch, status FROM environment_repos WHERE environment_id = $1 ORDER BY created_at',
      [envId],
    )
  ).rows;
const sessionsOf = async (taskId: string) =>
  (await h.pool.query('SELECT id, state FROM sessions WHERE task_id = $1 ORDER BY created_at', [taskId])).rows;

/** A task first launched as `worktree`, its agent running in its worktree. */
async function worktreeTask() {
  const t = await registeredTask();
  const first = await launch(h, t.taskId, { executorType: 'worktree' });
  expect(first.status, JSON.stringify(first.body)).toBe(201);
  const worktree = worktreePath(h.config.workspaceRoot, t.taskId, t.name);
  const firstPid = await pidOf(h, first.body.sessionId);
  expect(processCwd(firstPid)).toBe(worktree);
  return {
    ...t,
    worktree,
    envId: first.body.taskEnvironmentId as string,
    sessionId: first.body.sessionId as string,
    firstPid,
  };
}

describe('a local source checkout that is not the registered repository [R1.2, R3.2]', () => {
  it('a first local launch is refused workspace_reuse_unsafe (repository_mismatch) before any agent starts, nothing made or modified', async () => {
    const t = await registeredTask();
    // Registration recorded the repository's identity: the root of its default branch.
    expect(
      (await h.pool.query('SELECT root_commit FROM repositories WHERE id = $1', [t.repoId])).rows[0].root_commit,
    ).toBe(git(t.repo, 'rev-list', '--max-parents=0', 'main'));
    const restore = replaceWithAnotherRepository(t.repo);
    try {
      const body = await expectLaunchRefused(h, t.taskId, 'workspace_reuse_unsafe', {
        body: { executorType: 'local' },
        watch: [t.repo, `${t.repo}.registered`],
      });
      expect(body.error.reason).toBe('repository_mismatch');
      expect(body.error.recoverable).toBe(true);
      expect(await sessionsOf(t.taskId)).toEqual([]);
      // The refused first launch leaves its environment re-electable, never ready, never pointing at the other checkout.
      const envs = await environmentsOf(t.taskId);
      expect(
        envs.map((e) => ({ status: e.status, materialized: e.materialized, workspace_path: e.workspace_path })),
      ).toEqual([{ status: 'failed', materialized: false, workspace_path: null }]);
      for (const e of envs) expect(await inventoryOf(e.id)).toEqual([]);
    } finally {
      restore();
    }
    // The registered repository back in its place: the same launch runs there.
    const res = await launch(h, t.taskId, { executorType: 'local' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(processCwd(await pidOf(h, res.body.sessionId))).toBe(t.repo);
  });

  it('a transition worktree → local is refused workspace_reuse_unsafe (repository_mismatch): environment, inventory, old worktree and first agent as they were', async () => {
    const t = await worktreeTask();
    const env = await environmentsOf(t.taskId);
    const rows = await inventoryOf(t.envId);
    const restore = replaceWithAnotherRepository(t.repo);
    try {
      const body = await expectLaunchRefused(h, t.taskId, 'workspace_reuse_unsafe', {
        body: { executorType: 'local' },
        watch: [t.repo, `${t.repo}.registered`, t.worktree],
      });
      expect(body.error.reason).toBe('repository_mismatch');
      expect(await environmentsOf(t.taskId)).toEqual(env);
      expect(await inventoryOf(t.envId)).toEqual(rows);
      expect(await sessionsOf(t.taskId)).toEqual([{ id: t.sessionId, state: 'running' }]);
      expect(processAlive(t.firstPid)).toBe(true);
      expect(processCwd(t.firstPid)).toBe(t.worktree);
    } finally {
      restore();
    }
    expect(worktreePaths(t.repo)).toEqual([t.repo, t.worktree]);
  });
});

describe('a transition worktree → local whose source checkout is missing [R3.2, R3.3, R3.4]', () => {
  it('is refused typed before any agent starts; environment, inventory, old worktree and first agent as they were', async () => {
    const t = await worktreeTask();
    const env = await environmentsOf(t.taskId);
    const rows = await inventoryOf(t.envId);
    const away = `${t.repo}.away`;
    const repoBefore = fingerprint(t.repo);
    renameSync(t.repo, away);
    try {
      const body = await expectLaunchRefused(h, t.taskId, 'workspace_reuse_unsafe', {
        body: { executorType: 'local' },
        watch: [away, t.worktree],
      });
      expect(body.error.reason).toBe('not_a_directory');
      expect(body.error.recoverable).toBe(true);
      expect(await environmentsOf(t.taskId)).toEqual(env);
      expect(await inventoryOf(t.envId)).toEqual(rows);
      expect(await sessionsOf(t.taskId)).toEqual([{ id: t.sessionId, state: 'running' }]);
      expect(processAlive(t.firstPid)).toBe(true);
      expect(processCwd(t.firstPid)).toBe(t.worktree);
    } finally {
      renameSync(away, t.repo);
    }
    expect(fingerprint(t.repo)).toBe(repoBefore);
    expect(worktreePaths(t.repo)).toEqual([t.repo, t.worktree]);
  });
});

describe('the workspace view of a session [R2.3]', () => {
  it('a session that never had an environment is shown its task repositories’ source checkouts (legacy_fallback)', async () => {
    const a = makeRepo(h.scratch, `legacy-${++n}`);
    const b = makeRepo(h.scratch, `legacy-${++n}`);
    const ids = [await registerRepo(h, a, path.basename(a)), await registerRepo(h, b, path.basename(b))];
    const taskId = await createTask(h, ids);
    // Legacy data, written directly: a session recorded before environments existed has
    // environment_id NULL, and no launch of today makes such a session through the API.
    const sessionId = randomUUID();
    await h.pool.query(
      "INSERT INTO sessions (id, task_id, environment_id, state, executor_type, agent_profile) VALUES ($1, $2, NULL, 'stopped', 'worktree', 'shell')",
      [sessionId, taskId],
    );
    const res = await h.api('GET', `/v1/sessions/${sessionId}/workspace`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      taskEnvironmentId: null,
      executorType: 'worktree',
      workspacePath: a,
      repositories: [
        { repositoryId: ids[0], worktreePath: a, branch: null },
        { repositoryId: ids[1], worktreePath: b, branch: null },
      ],
      source: 'legacy_fallback',
    });
    expect(await environmentsOf(taskId)).toEqual([]);

    // Once the task has a workspace, the legacy session is shown it, never the source checkout.
    const launched = await launch(h, taskId);
    expect(launched.status, JSON.stringify(launched.body)).toBe(201);
    const now = await h.api('GET', `/v1/sessions/${sessionId}/workspace`);
    expect(now.body).toMatchObject({
      taskEnvironmentId: launched.body.taskEnvironmentId,
      executorType: 'worktree',
      source: 'environment',
    });
    expect(now.body.workspacePath).not.toBe(a);
  });

  it('a session whose environment was released, then failed, is never shown the source checkout (released, failed; no path)', async () => {
    const t = await worktreeTask();
    // Archive and unarchive: the worktree removed, the environment released (its branch kept).
    await h.api('POST', `/v1/sessions/${t.sessionId}/stop`);
    await waitForJob(h, (await archive(h, t.taskId)).operationId);
    expect((await h.api('POST', `/v1/tasks/${t.taskId}/unarchive`)).status).toBe(200);
    expect(worktreePaths(t.repo)).toEqual([t.repo]);
    expect((await environmentsOf(t.taskId)).map((e) => e.status)).toEqual(['released']);
    await expectNoWorkspaceShown(t.sessionId, t.envId, 'released');

    // A plain file where the worktree goes: the resume's re-materialization fails, the environment is failed.
    mkdirSync(path.dirname(t.worktree), { recursive: true });
    writeFileSync(t.worktree, 'in the way\n');
    const resumed = await h.api('POST', `/v1/sessions/${t.sessionId}/resume`, {});
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(409);
    expect(resumed.body.error.code).toBe('workspace_materialization_failed');
    expect((await environmentsOf(t.taskId)).map((e) => e.status)).toEqual(['failed']);
    expect(await sessionsOf(t.taskId)).toEqual([{ id: t.sessionId, state: expect.any(String) }]);
    const failed = await expectNoWorkspaceShown(t.sessionId, t.envId, 'failed');
    expect(JSON.stringify(failed)).not.toContain(t.repo);
  });
});

/** The workspace view of a session whose environment has no workspace now: where it stands, no path. */
async function expectNoWorkspaceShown(sessionId: string, envId: string, source: 'released' | 'failed') {
  const view = await h.api('GET', `/v1/sessions/${sessionId}/workspace`);
  expect(view.status, JSON.stringify(view.body)).toBe(200);
  expect(view.body).toEqual({
    taskEnvironmentId: envId,
    executorType: 'worktree',
    workspacePath: null,
    repositories: [],
    source,
  });
  return view.body;
}
