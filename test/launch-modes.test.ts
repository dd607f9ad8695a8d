/** The workspace modes of the admission table [R1]: parent and group environments, abandoned and failed materializations. */
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchWorkflowId } from '../domain/workflow-ids';
import { taskDirName } from '../domain/task-layout';
import { createHarness, type Harness } from './support/harness';
import {
  createGroupTasks,
  createTask,
  expectLaunchRefused,
  expectSafeError,
  launch,
  pidOf,
  registerRepo,
  waitUntil,
} from './support/scenario';
import { branches, git, gitWrapper, listDir, makeRepo, processCwd, worktreePaths } from './support/world';

let h: Harness;
let n = 0;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

async function repoFor(harness: Harness = h) {
  const name = `modes-${++n}`;
  const repo = makeRepo(harness.scratch, name);
  return { repo, repoId: await registerRepo(harness, repo, name), name };
}

const lastActivityOf = async (taskId: string): Promise<Date> =>
  (await h.pool.query<{ at: Date }>('SELECT last_activity_at AS at FROM tasks WHERE id = $1', [taskId])).rows[0]!.at;

const envCount = async (harness: Harness = h) =>
  Number((await harness.pool.query('SELECT count(*) FROM task_environments')).rows[0].count);

/** A repository whose branch `feature` has a commit of its own; main stays checked out. */
async function featureRepo(harness: Harness) {
  const name = `modes-${++n}`;
  const repo = makeRepo(harness.scratch, name, { branches: ['feature'] });
  git(repo, 'checkout', '-q', 'feature');
  writeFileSync(path.join(repo, 'feature.txt'), 'on the feature branch\n');
  git(repo, 'add', 'feature.txt');
  git(repo, 'commit', '-q', '-m', 'feature work');
  git(repo, 'checkout', '-q', 'main');
  return { repo, name, repoId: await registerRepo(harness, repo, name) };
}

const countOf = async (harness: Harness, table: string) =>
  Number((await harness.pool.query(`SELECT count(*) FROM ${table}`)).rows[0].count);

describe('an existing branch checked out (checkoutBranch)', () => {
  it('is refused 400 checkout_branch_unsupported where agents run sandboxed: no task, no branch, nothing on disk', async () => {
    expect(h.config.agentSandbox).not.toBe('none');
    const { repo, repoId } = await featureRepo(h);
    const before = { tasks: await countOf(h, 'tasks'), slots: await countOf(h, 'task_repositories') };
    const branchesBefore = branches(repo);
    const workspaces = listDir(h.config.workspaceRoot);
    const res = await h.api('POST', '/v1/tasks', {
      title: 'on feature',
      repositories: [{ repositoryId: repoId, checkoutBranch: 'feature' }],
    });
    expect(res.status).toBe(400);
    expectSafeError(res.body, 'checkout_branch_unsupported', ['feature']);
    expect(res.body.error).toMatchObject({ recoverable: false, action: 'fix_request' });
    expect(res.body.error.message).toContain('baseBranch');
    expect({ tasks: await countOf(h, 'tasks'), slots: await countOf(h, 'task_repositories') }).toEqual(before);
    expect(branches(repo)).toEqual(branchesBefore);
    expect(listDir(h.config.workspaceRoot)).toEqual(workspaces);
    // What the refusal advises works: the same branch as the base of the task's own branch.
    const advised = await h.api('POST', '/v1/tasks', {
      title: 'from feature',
      repositories: [{ repositoryId: repoId, baseBranch: 'feature' }],
    });
    expect(advised.status, JSON.stringify(advised.body)).toBe(201);
  });

  it('a task that asked for it before (created unsandboxed) is refused at launch where worktree agents are sandboxed', async () => {
    const { repo, repoId } = await featureRepo(h);
    const taskId = await createTask(h, [repoId]);
    // As a service with TWS_AGENT_SANDBOX=none recorded it.
    await h.pool.query(
      `UPDATE task_repositories SET checkout_branch = 'feature', branch_slug = 'feature' WHERE task_id = $1`,
      [taskId],
    );
    const body = await expectLaunchRefused(h, taskId, 'checkout_branch_unsupported', {
      status: 400,
      watch: [repo],
      secrets: ['feature'],
    });
    expect(body.error).toMatchObject({ recoverable: false, action: 'fix_request' });
    expect(
      (await h.pool.query('SELECT count(*)::int AS n FROM task_environments WHERE task_id = $1', [taskId])).rows[0].n,
    ).toBe(0);
  });

  it('a session of such a task is refused at resume too, its session and executions as they were', async () => {
    const { repo, repoId } = await featureRepo(h);
    const taskId = await createTask(h, [repoId]);
    const first = await launch(h, taskId);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect((await h.api('POST', `/v1/sessions/${first.body.sessionId}/stop`)).status).toBe(200);
    // As a service with TWS_AGENT_SANDBOX=none recorded it.
    await h.pool.query(`UPDATE task_repositories SET checkout_branch = 'feature' WHERE task_id = $1`, [taskId]);
    const executions = async () =>
      (await h.pool.query('SELECT count(*)::int AS n FROM executions WHERE session_id = $1', [first.body.sessionId]))
        .rows[0].n;
    const before = {
      executions: await executions(),
      state: (await h.api('GET', `/v1/sessions/${first.body.sessionId}`)).body.state,
    };
    const res = await h.api('POST', `/v1/sessions/${first.body.sessionId}/resume`, { args: [] });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expectSafeError(res.body, 'checkout_branch_unsupported', ['feature', repo]);
    expect({
      executions: await executions(),
      state: (await h.api('GET', `/v1/sessions/${first.body.sessionId}`)).body.state,
    }).toEqual(before);
  });

  describe('with agents unsandboxed (TWS_AGENT_SANDBOX=none)', () => {
    let open: Harness;
    beforeAll(async () => {
      open = await createHarness({ agentSandbox: 'none' });
    });
    afterAll(async () => open?.close());

    it('the worktree executor checks it out as it is (no task branch made) and its agent commits on it', async () => {
      const { repo, name, repoId } = await featureRepo(open);
      const featureAt = git(repo, 'rev-parse', 'feature');
      const before = branches(repo);
      const res = await open.api('POST', '/v1/tasks', {
        title: 'on feature',
        repositories: [{ repositoryId: repoId, checkoutBranch: 'feature' }],
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      const commit =
        'git add agent.txt && git -c user.name=agent -c user.email=agent@example.invalid commit -q -m "agent work"';
      const launched = await launch(open, res.body.id, {
        executorType: 'worktree',
        command: [
          'sh',
          '-c',
          `test "$(cat feature.txt)" = "on the feature branch" && echo by the agent > agent.txt && ${commit} && sleep 600`,
        ],
      });
      expect(launched.status, JSON.stringify(launched.body)).toBe(201);
      const pid = await pidOf(open, launched.body.sessionId);
      const worktree = path.join(open.config.workspaceRoot, taskDirName(res.body.id), name);
      expect(processCwd(pid)).toBe(worktree);
      expect(git(worktree, 'symbolic-ref', '--short', 'HEAD')).toBe('feature');
      await waitUntil(async () => git(repo, 'rev-parse', 'feature') !== featureAt, 'the agent commits on feature');
      expect(git(repo, 'log', '-1', '--format=%s', 'feature')).toBe('agent work');
      expect(git(repo, 'rev-parse', 'feature^')).toBe(featureAt);
      expect(git(repo, 'show', 'feature:agent.txt')).toBe('by the agent');
      expect(branches(repo)).toEqual(before);
    });

    it('a container launch of it is refused 400 checkout_branch_unsupported, nothing made: its agents never move that branch', async () => {
      const { repo, repoId } = await featureRepo(open);
      const res = await open.api('POST', '/v1/tasks', {
        title: 'on feature',
        repositories: [{ repositoryId: repoId, checkoutBranch: 'feature' }],
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      await expectLaunchRefused(open, res.body.id, 'checkout_branch_unsupported', {
        status: 400,
        body: { executorType: 'container' },
        watch: [repo],
        secrets: ['feature'],
      });
      expect(
        (await open.pool.query('SELECT count(*)::int AS n FROM task_environments WHERE task_id = $1', [res.body.id]))
          .rows[0].n,
      ).toBe(0);
    });
  });
});

describe('inherit_parent', () => {
  it('attaches the child to the parent environment and never creates one of its own', async () => {
    const { repo, repoId, name } = await repoFor();
    const parent = await createTask(h, [repoId]);
    const first = await launch(h, parent);
    await pidOf(h, first.body.sessionId);
    const child = await createTask(h, [repoId], { parentTaskId: parent, workspace: { mode: 'inherit_parent' } });
    const envs = await envCount();
    const res = await launch(h, child);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ role: 'attached', taskEnvironmentId: first.body.taskEnvironmentId });
    const pid = await pidOf(h, res.body.sessionId);
    expect(processCwd(pid)).toBe(path.join(h.config.workspaceRoot, taskDirName(parent), name));
    expect(await envCount()).toBe(envs);
    expect(
      (await h.pool.query('SELECT count(*)::int AS n FROM task_environments WHERE task_id = $1', [child])).rows[0].n,
    ).toBe(0);
    expect(worktreePaths(repo)).toHaveLength(2);
    const grandchild = await createTask(h, [repoId], { parentTaskId: child, workspace: { mode: 'inherit_parent' } });
    const deep = await launch(h, grandchild);
    expect(deep.body).toMatchObject({ role: 'attached', taskEnvironmentId: first.body.taskEnvironmentId });
    await pidOf(h, deep.body.sessionId);
  });

  it('refuses when the parent has no environment, or is archived, or belongs to another executor', async () => {
    const { repo, repoId } = await repoFor();
    const parent = await createTask(h, [repoId]);
    const child = await createTask(h, [repoId], { parentTaskId: parent, workspace: { mode: 'inherit_parent' } });
    const envs = await envCount();
    await expectLaunchRefused(h, child, 'workspace_reuse_unsafe', { watch: [repo] });
    expect(await envCount()).toBe(envs);

    const first = await launch(h, parent);
    await pidOf(h, first.body.sessionId);
    await expectLaunchRefused(h, child, 'workspace_reuse_unsafe', { body: { executorType: 'local' }, watch: [repo] });
    await h.pool.query('UPDATE tasks SET archived_at = now() WHERE id = $1', [parent]);
    await expectLaunchRefused(h, child, 'workspace_reuse_unsafe', { watch: [repo] });
  });
});

describe('shared_group', () => {
  it('elects one materializer for the group; other members attach to the group environment', async () => {
    const { repo, repoId, name } = await repoFor();
    const { groupId, tasks } = await createGroupTasks(h, [repoId], 2);
    const [a, b] = tasks as [string, string];
    const first = await launch(h, b);
    expect(first.body.role).toBe('materialized');
    await pidOf(h, first.body.sessionId);
    const second = await launch(h, a);
    expect(second.status, JSON.stringify(second.body)).toBe(201);
    expect(second.body).toMatchObject({ role: 'attached', taskEnvironmentId: first.body.taskEnvironmentId });
    const pid = await pidOf(h, second.body.sessionId);
    expect(processCwd(pid)).toBe(path.join(h.config.workspaceRoot, taskDirName(b), name));
    expect(
      (await h.pool.query('SELECT environment_id FROM workspace_groups WHERE id = $1', [groupId])).rows[0]
        .environment_id,
    ).toBe(first.body.taskEnvironmentId);
    expect(worktreePaths(repo)).toHaveLength(2);
  });

  it('two concurrent first launches of two members: exactly one materializes, the other is refused workspace_preparing', async () => {
    const slow = await createHarness({ gitBinary: gitWrapper(h.scratch, { sleepOnWorktreeAdd: 2 }) });
    try {
      const { repo, repoId } = await repoFor(slow);
      const [a, b] = (await createGroupTasks(slow, [repoId], 2)).tasks as [string, string];
      const results = await Promise.all([launch(slow, a), launch(slow, b)]);
      expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
      const loser = results.find((r) => r.status === 409)!;
      expect(loser.body.error.code).toBe('workspace_preparing');
      const winner = results.find((r) => r.status === 201)!;
      await pidOf(slow, winner.body.sessionId);
      expect(Number((await slow.pool.query('SELECT count(*) FROM task_environments')).rows[0].count)).toBe(1);
      expect(Number((await slow.pool.query('SELECT count(*) FROM sessions')).rows[0].count)).toBe(1);
      expect(worktreePaths(repo)).toHaveLength(2);
    } finally {
      await slow.close();
    }
  });
});

describe('abandoned and failed materializations', () => {
  /** Admits a first launch on a slow `git worktree add` (3 s) and terminates its workflow meanwhile. */
  async function terminateMaterializer(slow: Harness) {
    const { repo, repoId } = await repoFor(slow);
    const taskId = await createTask(slow, [repoId]);
    const pending = launch(slow, taskId);
    let materializer: string | undefined;
    // Within a minute: a launch the gateway could not start eagerly waits for the worker process, which may still be starting.
    await waitUntil(
      async () => {
        materializer = (
          await slow.pool.query(
            "SELECT materializer_session_id FROM task_environments WHERE task_id = $1 AND status = 'creating'",
            [taskId],
          )
        ).rows[0]?.materializer_session_id;
        return materializer !== undefined;
      },
      'the materializer admitted',
      60_000,
    );
    await slow.temporal.workflow.getHandle(launchWorkflowId(materializer!)).terminate('operator stopped it');
    expect((await pending).status).toBe(500);
    return { repo, taskId, materializer: materializer! };
  }

  it('a launch terminated while its workspace is made stops at its next step and undoes it; the next launch is elected', async () => {
    const slow = await createHarness({ gitBinary: gitWrapper(h.scratch, { sleepOnWorktreeAdd: 3 }) });
    try {
      const { repo, taskId, materializer } = await terminateMaterializer(slow);
      // Its host step runs on through `git worktree add`, then finds its workflow terminated and
      // undoes what it made instead of publishing it or starting an agent; the workflow code still
      // in the worker records the environment failed, never materialized.
      const folder = path.join(slow.config.workspaceRoot, taskDirName(taskId));
      // A failed first launch leaves no session row [R1.4].
      const sessionGone = async () =>
        (await slow.pool.query('SELECT 1 FROM sessions WHERE id = $1', [materializer])).rowCount === 0;
      for (let i = 0; i < 600 && (existsSync(folder) || !(await sessionGone())); i++)
        await new Promise((r) => setTimeout(r, 50));
      expect(existsSync(folder)).toBe(false);
      expect(await sessionGone()).toBe(true);
      expect(
        (await slow.pool.query('SELECT status, materialized FROM task_environments WHERE task_id = $1', [taskId]))
          .rows[0],
      ).toEqual({ status: 'failed', materialized: false });
      expect(worktreePaths(repo)).toEqual([repo]);
      expect(
        (
          await slow.pool.query(
            'SELECT count(*)::int AS n FROM executions x JOIN sessions s ON s.id = x.session_id WHERE s.task_id = $1',
            [taskId],
          )
        ).rows[0].n,
      ).toBe(0);

      const again = await launch(slow, taskId);
      expect(again.status, JSON.stringify(again.body)).toBe(201);
      expect(again.body.role).toBe('materialized');
      await pidOf(slow, again.body.sessionId);
      expect(worktreePaths(repo)).toHaveLength(2);
    } finally {
      await slow.close();
    }
  });

  it('a materializer whose launch was terminated and whose worker died is gone: the environment becomes failed and the launch is refused; then it is re-elected', async () => {
    const slow = await createHarness(
      { gitBinary: gitWrapper(h.scratch, { sleepOnWorktreeAdd: 3 }) },
      { inProcessWorker: false },
    );
    let worker = slow.spawnWorker();
    try {
      const { repo, taskId, materializer } = await terminateMaterializer(slow);
      // Nothing of the launch runs on: the environment stays `creating` under a gone materializer.
      worker.kill('SIGKILL');
      await new Promise((r) => worker.once('exit', r));
      worker = slow.spawnWorker();

      await expectLaunchRefused(slow, taskId, 'workspace_reuse_unsafe');
      expect(
        (await slow.pool.query('SELECT status, materialized FROM task_environments WHERE task_id = $1', [taskId]))
          .rows[0],
      ).toEqual({ status: 'failed', materialized: false });
      expect((await slow.pool.query('SELECT state FROM sessions WHERE id = $1', [materializer])).rows[0].state).toBe(
        'failed',
      );

      // Never materialized, so a later launch is elected and makes the workspace (once the dead
      // worker's orphaned git, which dies on its first write to the closed pipe, is past: waited
      // for by its process, not a fixed time, which a loaded machine outlasts).
      await waitUntil(
        async () => !processesNaming(taskDirName(taskId)),
        "the dead worker's orphaned git to end",
        30_000,
      );
      const again = await launch(slow, taskId);
      expect(again.status, JSON.stringify(again.body)).toBe(201);
      expect(again.body.role).toBe('materialized');
      const slot = path.join(slow.config.workspaceRoot, taskDirName(taskId), path.basename(repo));
      expect(processCwd(await pidOf(slow, again.body.sessionId))).toBe(slot);
      expect(worktreePaths(repo)).toEqual([repo, slot]);
    } finally {
      worker.kill('SIGKILL');
      await slow.close();
    }
  });

  it('a failed environment that was materialized is refused, not re-elected', async () => {
    const { repo, repoId } = await repoFor();
    const taskId = await createTask(h, [repoId]);
    const first = await launch(h, taskId);
    await pidOf(h, first.body.sessionId);
    await h.pool.query("UPDATE task_environments SET status = 'failed' WHERE task_id = $1", [taskId]);
    await expectLaunchRefused(h, taskId, 'workspace_reuse_unsafe', { watch: [repo] });
    expect(
      (await h.pool.query('SELECT status FROM task_environments WHERE task_id = $1', [taskId])).rows[0].status,
    ).toBe('failed');
  });
});

describe('task state refusals', () => {
  it('an archived task refuses every launch with task_archived', async () => {
    const { repo, repoId } = await repoFor();
    const taskId = await createTask(h, [repoId]);
    await h.pool.query('UPDATE tasks SET archived_at = now() WHERE id = $1', [taskId]);
    const before = await lastActivityOf(taskId);
    const body = await expectLaunchRefused(h, taskId, 'task_archived', { watch: [repo] });
    expect(body.error).toMatchObject({ recoverable: false, action: 'unarchive' });
    expect(listDir(h.config.workspaceRoot)).not.toContain(taskDirName(taskId));
    // A refused launch is no activity of the task (idle release reads it).
    expect(await lastActivityOf(taskId)).toEqual(before);
  });

  it('a task with an active cleanup job refuses every launch with task_cleanup_in_progress', async () => {
    const { repo, repoId } = await repoFor();
    const taskId = await createTask(h, [repoId]);
    await h.pool.query(
      "INSERT INTO cleanup_jobs (operation_id, task_id, trigger, state, workflow_id) VALUES ($1, $2, 'archive', 'pending', 'x')",
      [randomUUID(), taskId],
    );
    const before = await lastActivityOf(taskId);
    const body = await expectLaunchRefused(h, taskId, 'task_cleanup_in_progress', { watch: [repo] });
    expect(body.error).toMatchObject({ recoverable: true, retryAfterMs: 5000, action: 'retry' });
    expect(await lastActivityOf(taskId)).toEqual(before);
  });

  it("an admitted launch is the task's activity: its time moves, in the admission that locks the task", async () => {
    const { repoId } = await repoFor();
    const taskId = await createTask(h, [repoId]);
    await h.pool.query("UPDATE tasks SET last_activity_at = now() - interval '3 days' WHERE id = $1", [taskId]);
    const before = await lastActivityOf(taskId);
    expect((await launch(h, taskId)).status).toBe(201);
    expect((await lastActivityOf(taskId)).getTime()).toBeGreaterThan(before.getTime() + 2 * 24 * 3600_000);
  });
});

/** Whether any process of this machine has `text` in its command line (a git or a wrapper working on that path). */
function processesNaming(text: string): boolean {
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text)) return true;
    } catch {
      // gone meanwhile
    }
  }
  return false;
}
