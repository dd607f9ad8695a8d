/**
 * Requirements an audit found weakly tested, each driven end to end:
 * "already gone counts as done" for a host worktree removed by hand in the middle of a cleanup
 * [R6.4], and what a launch of a task with no repositories does [R2].
 */
import { existsSync, rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OWNERSHIP_MARKER_FILE, taskFolder, worktreePath } from '../domain/task-layout';
import { archive, waitForJob } from './support/cleanup';
import { harnessesPerTest } from './support/harness';
import { agentOutputUntil, createTask, launch, pidOf, registerRepo } from './support/scenario';
import {
  armGitPause,
  clearGitFault,
  git,
  gitWrapper,
  loggedGitCommands,
  makeRepo,
  processCwd,
  worktreePaths,
} from './support/world';

const { harness, scratch } = harnessesPerTest();

describe('requirements driven end to end', () => {
  it('a host worktree removed by hand while its cleanup waits to retry counts as done, its registration pruned [R6.4]', async () => {
    const dir = await scratch();
    const wrapper = gitWrapper(dir, { failSubcommand: 'worktree remove', failTimes: 1_000_000 });
    const h = await harness({ gitBinary: wrapper, cleanupPolicy: { waitsMs: [1_000], maxAttempts: 10 } });
    const repo = makeRepo(h.scratch, 'by-hand');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'by-hand')]);
    const launched = await launch(h, taskId);
    expect(launched.status).toBe(201);
    const worktree = worktreePath(h.config.workspaceRoot, taskId, 'by-hand');
    const job = await archive(h, taskId);
    const waiting = await waitForJob(h, job.operationId, ['retry_wait']);
    expect(waiting.lastError).toBe('git_worktree_remove_failed');
    // The user removes the folder by hand; git works again.
    rmSync(worktree, { recursive: true, force: true });
    clearGitFault(wrapper);
    const done = await waitForJob(h, job.operationId);
    expect(done.report.worktrees).toEqual([
      { repositoryId: expect.any(String), worktreePath: worktree, outcome: 'already_gone' },
    ]);
    expect(worktreePaths(repo)).toEqual([repo]);
  });

  it('a host worktree whose HEAD moved after the audit judged it is not removed on that judgement: kept, its commit kept, the job waits for an operator [R6.6]', async () => {
    const dir = await scratch();
    const logTo = `${dir}/moved-head.log`;
    const wrapper = gitWrapper(dir, { pauseAfterWorktreeList: 3, logTo });
    const h = await harness({ gitBinary: wrapper, cleanupPolicy: { waitsMs: [1_000], maxAttempts: 3 } });
    const repo = makeRepo(h.scratch, 'moved-head');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'moved-head')]);
    const launched = await launch(h, taskId, { command: ['sleep', '600'] });
    expect(launched.status).toBe(201);
    const worktree = worktreePath(h.config.workspaceRoot, taskId, 'moved-head');
    const judged = git(worktree, 'rev-parse', 'HEAD');
    // The audit's listing is read (the worktree on its branch at `judged`), then, before the
    // removal, something the records do not know detaches it and commits there.
    const paused = await armGitPause(wrapper);
    const job = await archive(h, taskId);
    await paused();
    git(worktree, 'checkout', '-q', '--detach');
    git(worktree, '-c', 'user.name=x', '-c', 'user.email=x@x', 'commit', '-q', '--allow-empty', '-m', 'stray');
    const stray = git(worktree, 'rev-parse', 'HEAD');
    expect(stray).not.toBe(judged);
    const waiting = await waitForJob(h, job.operationId, ['needs_operator']);
    expect(waiting.lastError, JSON.stringify(loggedGitCommands(logTo).slice(-12))).toBe('worktree_audit_head_moved');
    expect(worktreePaths(repo)).toEqual([repo, worktree]);
    expect(git(worktree, 'rev-parse', 'HEAD')).toBe(stray);
  });

  it('a task with no repositories: worktree works in an empty task folder of its own (a scratch task), attached again, removed by its archive; local is refused with nothing made', async () => {
    const h = await harness();
    const bare = await createTask(h, []);
    const refused = await launch(h, bare, { executorType: 'local' });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.error.code).toBe('workspace_reuse_unsupported');
    expect(
      (await h.pool.query('SELECT count(*)::int AS n FROM task_environments WHERE task_id = $1', [bare])).rows[0].n,
    ).toBe(0);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM sessions WHERE task_id = $1', [bare])).rows[0].n).toBe(
      0,
    );

    const folder = taskFolder(h.config.workspaceRoot, bare);
    const first = await launch(h, bare, { command: ['sh', '-c', 'pwd; ls -A; echo ready; sleep 600'] });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const out = await agentOutputUntil(h, first.body.executionId, 'ready');
    expect(out.split('\n').slice(0, 2)).toEqual([folder, OWNERSHIP_MARKER_FILE]);
    const second = await launch(h, bare);
    expect(second.body).toMatchObject({ role: 'attached', taskEnvironmentId: first.body.taskEnvironmentId });
    expect(processCwd(await pidOf(h, second.body.sessionId))).toBe(folder);
    await waitForJob(h, (await archive(h, bare)).operationId);
    expect(existsSync(folder)).toBe(false);
  });

  it("co-residency is recorded before the agent process starts: its observation is older than the agent's first instruction [R5.1]", async () => {
    const h = await harness();
    const repo = makeRepo(h.scratch, 'order');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'order')]);
    // A sibling first, so the second launch observes one.
    expect((await launch(h, taskId)).status).toBe(201);
    const res = await launch(h, taskId, { command: ['sh', '-c', 'echo "at $(date +%s%N)"; sleep 600'] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const agentAt = BigInt(/at (\d+)/.exec(await agentOutputUntil(h, res.body.executionId, 'at '))![1]!);
    const observed = (
      await h.pool.query<{ us: string }>(
        "SELECT (extract(epoch FROM observed_at) * 1000000)::bigint::text AS us FROM coresidency_observations WHERE session_id = $1 AND site = 'launch'",
        [res.body.sessionId],
      )
    ).rows;
    expect(observed).toHaveLength(1);
    expect(BigInt(observed[0]!.us) * 1000n).toBeLessThan(agentAt);
  });
});
