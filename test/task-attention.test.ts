/**
 * What the board reads of each task (`activity`, `attention` on GET /v1/tasks and GET
 * /v1/tasks/:id): each reason from rows real operations made (a merge refused for a conflict, a
 * restore that did not apply, a resume that failed, an archive waiting for an operator), the same
 * in the list and in the task, and settled by what settles it. A restore's outcome is told on
 * /v1/events as a change of its task.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskBranchName, taskDirName } from '../domain/task-layout';
import { archive, releaseIdleTask, waitForJob } from './support/cleanup';
import { commitIn, finish, taskWithCommits } from './support/finishing';
import { createHarness, OPERATOR_TOKEN, scratchFolder, type Harness } from './support/harness';
import { createTask, launch, registerRepo, waitUntil } from './support/scenario';
import { clearGitFault, commitOf, git, gitWrapper, makeRepo } from './support/world';

let h: Harness;
let gitFault: string;
const cleanups: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  // Removing a worktree fails only while a test arms the fault: an archive then waits for an operator.
  gitFault = gitWrapper(await scratchFolder(cleanups), { failSubcommand: 'worktree remove', failTimes: 1000 });
  clearGitFault(gitFault);
  h = await createHarness({ gitBinary: gitFault });
});
afterAll(async () => {
  await h?.close();
  for (const c of cleanups.reverse()) await c();
});

/** The task as the list shows it and as its own route does: the board's facts must agree. */
async function factsOf(taskId: string) {
  const items: any[] = [];
  for (let cursor: string | null = null, first = true; first || cursor; first = false) {
    const page: { status: number; body: any } = await h.api(
      'GET',
      `/v1/tasks?limit=200${cursor ? `&cursor=${cursor}` : ''}`,
    );
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    items.push(...page.body.items);
    cursor = page.body.nextCursor;
  }
  const listed = items.find((t) => t.id === taskId);
  const one = await h.api('GET', `/v1/tasks/${taskId}`);
  expect(one.status).toBe(200);
  expect({ activity: one.body.activity, attention: one.body.attention }).toEqual({
    activity: listed.activity,
    attention: listed.attention,
  });
  return { activity: listed.activity as string, attention: listed.attention as Record<string, unknown> | null };
}

const mergesOf = async (taskId: string) =>
  (
    await h.pool.query<{ operation_id: string; state: string; code: string | null }>(
      `SELECT operation_id, state, error->>'code' AS code FROM git_operations WHERE task_id = $1 AND kind = 'merge'
        ORDER BY created_at`,
      [taskId],
    )
  ).rows;

describe("the board's facts of a task [console board]", () => {
  it('a task with no agent and nothing wrong is idle with no attention; one with an agent at work is working', async () => {
    const repo = makeRepo(h.scratch, 'calm');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'calm')]);
    expect(await factsOf(taskId)).toEqual({ activity: 'idle', attention: null });
    const launched = await launch(h, taskId);
    expect(launched.status, JSON.stringify(launched.body)).toBe(201);
    expect(await factsOf(taskId)).toEqual({ activity: 'working', attention: null });
    expect((await h.api('POST', `/v1/sessions/${launched.body.sessionId}/stop`)).status).toBe(200);
    expect(await factsOf(taskId)).toEqual({ activity: 'idle', attention: null });
  });

  it('saved work a launch could not put back: restore_conflict naming that launch, told on the feed as a change of the task; a merge since settles it', async () => {
    const dir = makeRepo(h.scratch, 'restore', { files: { 'README.md': '# restore\n' } });
    const repositoryId = await registerRepo(h, dir, 'restore');
    const taskId = await createTask(h, [repositoryId]);
    const first = await launch(h, taskId);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect((await h.api('POST', `/v1/sessions/${first.body.sessionId}/stop`)).status).toBe(200);
    const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), 'restore');
    writeFileSync(path.join(worktree, 'README.md'), '# restore\nmy edit\n');
    expect((await releaseIdleTask(h, taskId)).state).toBe('succeeded');
    // Someone commits to the kept branch meanwhile, on the same lines: the saved work cannot apply.
    const side = path.join(h.scratch, `side-${randomUUID()}`);
    git(dir, 'worktree', 'add', '-q', side, taskBranchName(taskId));
    commitIn(side, { 'README.md': '# restore\ntheir edit\n' }, 'moved on');
    git(dir, 'worktree', 'remove', side);
    const { rows: before } = await h.pool.query<{ id: string }>('SELECT coalesce(max(id), 0) AS id FROM events');

    const again = await launch(h, taskId);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect((await h.api('GET', `/v1/sessions/${again.body.sessionId}`)).body.restore).toBe('conflict');
    expect(await factsOf(taskId)).toEqual({
      activity: 'working',
      attention: { reason: 'restore_conflict', operationId: null, sessionId: again.body.sessionId },
    });
    const told = await h.pool.query(
      `SELECT kind, entity_id, change FROM events WHERE id > $1 AND kind = 'task' AND task_id = $2`,
      [before[0]!.id, taskId],
    );
    expect(told.rows).toContainEqual({ kind: 'task', entity_id: taskId, change: 'updated' });

    // The work goes on and is merged: the conflict is behind it.
    expect((await h.api('POST', `/v1/sessions/${again.body.sessionId}/stop`)).status).toBe(200);
    commitIn(worktree, { 'more.txt': 'more\n' }, 'more work');
    const merged = await finish(h, 'POST', `/v1/tasks/${taskId}/merge`, { strategy: 'squash' });
    expect(merged.status, JSON.stringify(merged.body)).toBe(200);
    expect(merged.body.state).toBe('merged');
    expect(await factsOf(taskId)).toEqual({ activity: 'idle', attention: null });
  });

  it('a merge refused for a conflict: merge_conflict naming that merge, the branches unmoved; a later merge that merges settles it', async () => {
    const w = await taskWithCommits(h, 'clash', [{ 'shared.txt': 'the task says this\n' }], {
      files: { 'shared.txt': 'first\n' },
    });
    commitIn(w.repo, { 'shared.txt': 'the base says that\n' }, 'meanwhile on main');
    const base = commitOf(w.repo, 'main');
    const refused = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'squash' });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.error.code).toBe('merge_conflict');
    expect(commitOf(w.repo, 'main')).toBe(base);
    const [op] = await mergesOf(w.taskId);
    expect(op).toMatchObject({ state: 'refused', code: 'merge_conflict' });
    const facts = await factsOf(w.taskId);
    expect(facts).toEqual({
      activity: 'idle',
      attention: { reason: 'merge_conflict', operationId: op!.operation_id, sessionId: null },
    });
    // Reasons and ids only: no path, branch or file name of the conflict.
    expect(JSON.stringify(facts)).not.toMatch(/shared\.txt|main|clash/);

    // The task takes the base in, keeping its side, and merges.
    git(
      w.worktree,
      '-c',
      'user.name=t',
      '-c',
      'user.email=t@example.com',
      'merge',
      '-q',
      '-X',
      'ours',
      'main',
      '-m',
      'take main in',
    );
    const merged = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'squash' });
    expect(merged.status, JSON.stringify(merged.body)).toBe(200);
    expect(merged.body.state).toBe('merged');
    expect(await factsOf(w.taskId)).toEqual({ activity: 'idle', attention: null });
  });

  it('a resume that cannot make its workspace again: launch_failed naming its session; a launch that starts settles it', async () => {
    const repo = makeRepo(h.scratch, 'failing');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'failing')]);
    const first = await launch(h, taskId);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect((await h.api('POST', `/v1/sessions/${first.body.sessionId}/stop`)).status).toBe(200);
    await waitForJob(h, (await archive(h, taskId)).operationId);
    expect((await h.api('POST', `/v1/tasks/${taskId}/unarchive`)).status).toBe(200);
    // Something else took the worktree's place meanwhile: git will not make the worktree there.
    const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), 'failing');
    mkdirSync(worktree, { recursive: true });
    writeFileSync(path.join(worktree, 'not-yours.txt'), "someone else's\n");
    const resumed = await h.api('POST', `/v1/sessions/${first.body.sessionId}/resume`, {});
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(409);
    expect((await h.api('GET', `/v1/sessions/${first.body.sessionId}`)).body.state).toBe('failed');
    expect(await factsOf(taskId)).toEqual({
      activity: 'idle',
      attention: { reason: 'launch_failed', operationId: null, sessionId: first.body.sessionId },
    });
    rmSync(worktree, { recursive: true });
    const next = await launch(h, taskId);
    expect(next.status, JSON.stringify(next.body)).toBe(201);
    expect(await factsOf(taskId)).toEqual({ activity: 'working', attention: null });
  });

  it('an archive whose worktree cannot be removed: cleanup_needs_operator naming the job, until an operator retries it', async () => {
    const repo = makeRepo(h.scratch, 'stuck');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'stuck')]);
    const launched = await launch(h, taskId, { command: ['true'] });
    expect(launched.status, JSON.stringify(launched.body)).toBe(201);
    await waitUntil(
      async () => (await h.api('GET', `/v1/sessions/${launched.body.sessionId}`)).body.state === 'exited',
      'the agent ended',
    );
    writeFileSync(`${gitFault}.count`, '0');
    try {
      const { operationId } = await archive(h, taskId);
      await waitForJob(h, operationId, ['needs_operator']);
      expect(await factsOf(taskId)).toEqual({
        activity: 'idle',
        attention: { reason: 'cleanup_needs_operator', operationId, sessionId: null },
      });
      clearGitFault(gitFault);
      const retried = await h.api('POST', `/v1/cleanup-jobs/${operationId}/retry`, {}, OPERATOR_TOKEN);
      expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
      await waitForJob(h, operationId);
      expect(await factsOf(taskId)).toEqual({ activity: 'idle', attention: null });
    } finally {
      clearGitFault(gitFault);
    }
  });
});
