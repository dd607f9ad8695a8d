/**
 * Recovery that works: an audit refusal waits for an operator on its first
 * attempt, touching nothing; the operator abandons the workspace (the next launch materializes
 * afresh elsewhere) or cancels a waiting job; transient failures keep the retry schedule.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { cpSync, existsSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNERSHIP_MARKER_FILE, taskBranchName, taskDirName } from '../domain/task-layout';
import { archive, deleteTask, waitForJob } from './support/cleanup';
import { createHarness, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { agentEnded, createTask, expectSafeError, launch, pidOf, registerRepo } from './support/scenario';
import {
  clearGitFault,
  commitOf,
  fingerprint,
  git,
  gitWrapper,
  makeRepo,
  processCwd,
  worktreePaths,
} from './support/world';

const harnesses: Harness[] = [];
let h: Harness;
beforeAll(async () => {
  h = await createHarness({ orphanGraceMs: 0 });
  harnesses.push(h);
});
afterAll(async () => {
  for (const x of harnesses.reverse()) await x.close().catch(() => {});
});

const op = (hh: Harness, method: string, route: string, body?: unknown) => hh.api(method, route, body, OPERATOR_TOKEN);

/** A task whose worktree was materialized by a session that has since stopped (a reset refuses while one runs). */
async function stoppedTask(hh: Harness, name: string) {
  const repo = makeRepo(hh.scratch, name, { branches: ['other'] });
  const taskId = await createTask(hh, [await registerRepo(hh, repo, name)]);
  const first = await launch(hh, taskId);
  expect(first.status, JSON.stringify(first.body)).toBe(201);
  expect((await hh.api('POST', `/v1/sessions/${first.body.sessionId}/stop`)).status).toBe(200);
  await agentEnded(hh, first.body.sessionId);
  const folder = path.join(hh.config.workspaceRoot, taskDirName(taskId));
  return {
    repo,
    taskId,
    folder,
    worktree: path.join(folder, name),
    branch: taskBranchName(taskId),
    environmentId: first.body.taskEnvironmentId as string,
  };
}

/** git's registration of one worktree: its block of `git worktree list --porcelain`. */
const registration = (repo: string, worktree: string) =>
  git(repo, 'worktree', 'list', '--porcelain')
    .split('\n\n')
    .find((block) => block.startsWith(`worktree ${worktree}\n`)) ?? null;

/** What a refused removal (or an abandonment) must leave exactly as it was: the folder's bytes, git's registration of it, the task branch. */
function world(t: { repo: string; folder: string; worktree: string; branch: string }, extra: string[] = []) {
  return {
    folder: fingerprint(t.folder),
    extra: extra.map((d) => fingerprint(d)),
    registration: registration(t.repo, t.worktree),
    branch: commitOf(t.repo, t.branch),
  };
}

async function resetReachesOperator(hh: Harness, taskId: string): Promise<any> {
  const reset = await op(hh, 'POST', `/v1/tasks/${taskId}/environment/reset`);
  expect(reset.status, JSON.stringify(reset.body)).toBe(202);
  return waitForJob(hh, reset.body.operationId, ['needs_operator', 'succeeded']);
}

const UNSAFE: {
  name: string;
  reason: string;
  make: (t: Awaited<ReturnType<typeof stoppedTask>>, scratch: string) => string[];
}[] = [
  {
    name: 'other branch checked out in the worktree',
    reason: 'worktree_audit_other_branch',
    make: (t) => (git(t.worktree, 'checkout', '-q', 'other'), []),
  },
  {
    name: 'marker naming another task',
    reason: 'worktree_audit_foreign_marker',
    make: (t) => (
      writeFileSync(
        path.join(t.folder, OWNERSHIP_MARKER_FILE),
        JSON.stringify({ kind: 'task-workspaces/ownership', taskId: randomUUID(), environmentId: randomUUID() }),
      ),
      []
    ),
  },
  {
    name: 'folder replaced by an unregistered copy',
    reason: 'worktree_audit_unregistered',
    make: (t, scratch) => {
      const aside = path.join(scratch, `aside-${randomUUID()}`);
      renameSync(t.worktree, aside);
      cpSync(aside, t.worktree, { recursive: true });
      rmSync(path.join(t.worktree, '.git'));
      return [aside];
    },
  },
  {
    name: 'folder replaced by a symlink',
    reason: 'worktree_audit_not_directory',
    make: (t, scratch) => {
      const moved = path.join(scratch, `moved-${randomUUID()}`);
      renameSync(t.worktree, moved);
      symlinkSync(moved, t.worktree);
      return [moved];
    },
  },
];

describe('an audited removal that refuses for a reason retrying cannot fix waits for an operator at once', () => {
  for (const [i, unsafe] of UNSAFE.entries()) {
    it(`${unsafe.name}: needs_operator on the first attempt, the reason in lastError, folder, registration and branch unchanged`, async () => {
      const t = await stoppedTask(h, `unsafe-${i}`);
      const extra = unsafe.make(t, h.scratch);
      const before = world(t, extra);
      const job = await resetReachesOperator(h, t.taskId);
      expect(job).toMatchObject({
        state: 'needs_operator',
        attempts: 1,
        lastError: unsafe.reason,
        nextAttemptAt: null,
      });
      expect(world(t, extra)).toEqual(before);
    });
  }
});

describe('a transient failure keeps the retry schedule', () => {
  it("a worktree remove that fails once is retried after the schedule's first wait, and the reset succeeds", async () => {
    const wrapper = gitWrapper(h.scratch, { failSubcommand: 'worktree remove', failTimes: 1 });
    const hh = await createHarness({ gitBinary: wrapper });
    harnesses.push(hh);
    const t = await stoppedTask(hh, 'transient');
    const reset = await op(hh, 'POST', `/v1/tasks/${t.taskId}/environment/reset`);
    expect(reset.status).toBe(202);
    const job = await waitForJob(hh, reset.body.operationId, ['succeeded', 'needs_operator']);
    expect(job).toMatchObject({ state: 'succeeded', attempts: 2, lastError: null });
    expect(worktreePaths(t.repo)).toEqual([t.repo]);
    const history = await hh.temporal.workflow.getHandle(job.workflowId).fetchHistory();
    expect(history.events!.filter((e) => e.timerStartedEventAttributes)).toHaveLength(1);
  });
});

describe('POST /v1/tasks/:id/environment/reset with {"abandon": true}', () => {
  it('ends the refused reset, abandons the inventory without touching a file; the next launch works afresh at a new path; the sweep keeps the abandoned folder', async () => {
    const t = await stoppedTask(h, 'abandon');
    git(t.worktree, 'checkout', '-q', 'other');
    const before = world(t);
    const stuck = await resetReachesOperator(h, t.taskId);
    expect(stuck).toMatchObject({ state: 'needs_operator', attempts: 1 });
    expect((await launch(h, t.taskId)).body.error.code).toBe('task_cleanup_in_progress');

    for (const body of [{ abandon: 'yes' }, { abandon: true, extra: 1 }, [true]]) {
      const bad = await op(h, 'POST', `/v1/tasks/${t.taskId}/environment/reset`, body);
      expect(bad.status, JSON.stringify(body)).toBe(400);
    }
    expect((await h.api('POST', `/v1/tasks/${t.taskId}/environment/reset`, { abandon: true }, USER_TOKEN)).status).toBe(
      403,
    );
    const abandoned = await op(h, 'POST', `/v1/tasks/${t.taskId}/environment/reset`, { abandon: true });
    expect(abandoned.status, JSON.stringify(abandoned.body)).toBe(200);
    expect(abandoned.body).toMatchObject({ operationId: stuck.operationId, state: 'cancelled' });

    const job = (await h.api('GET', `/v1/cleanup-jobs/${stuck.operationId}`)).body;
    expect(job).toMatchObject({
      state: 'cancelled',
      attempts: 1,
      report: {
        ended: { action: 'abandon', by: 'operator' },
        abandoned: { taskFolder: t.folder, worktrees: [{ worktreePath: t.worktree, branch: t.branch }] },
      },
    });
    expect(
      (
        await h.pool.query('SELECT status FROM environment_repos WHERE environment_id = $1', [t.environmentId])
      ).rows.map((r) => r.status),
    ).toEqual(['abandoned']);
    expect(
      (await h.pool.query('SELECT status FROM task_environments WHERE id = $1', [t.environmentId])).rows[0].status,
    ).toBe('released');
    expect(world(t)).toEqual(before);

    // The barrier is lifted: the next launch materializes afresh, in a new folder on a new branch.
    const next = await launch(h, t.taskId);
    expect(next.status, JSON.stringify(next.body)).toBe(201);
    expect(next.body.role).toBe('materialized');
    const fresh = path.join(h.config.workspaceRoot, `${taskDirName(t.taskId)}-r1`, 'abandon');
    expect(processCwd(await pidOf(h, next.body.sessionId))).toBe(fresh);
    expect(worktreePaths(t.repo).sort()).toEqual([t.repo, t.worktree, fresh].sort());
    expect(git(fresh, 'branch', '--show-current')).toBe(`${t.branch}-r1`);
    expect(world(t)).toEqual(before);

    const sweep = await op(h, 'POST', '/v1/orphan-sweep', {});
    expect(sweep.status).toBe(200);
    expect(existsSync(t.worktree) && existsSync(fresh)).toBe(true);
    expect(world(t)).toEqual(before);

    // While an agent of the environment runs, an abandonment is refused and changes nothing.
    const refused = await op(h, 'POST', `/v1/tasks/${t.taskId}/environment/reset`, { abandon: true });
    expect(refused.status).toBe(409);
    expectSafeError(refused.body, 'session_running', [t.folder]);
    expect(
      (await h.pool.query('SELECT status FROM task_environments WHERE id = $1', [t.environmentId])).rows[0].status,
    ).toBe('ready');

    // With no job active, an abandonment is a job of its own.
    expect((await h.api('POST', `/v1/sessions/${next.body.sessionId}/stop`)).status).toBe(200);
    await agentEnded(h, next.body.sessionId);
    const own = await op(h, 'POST', `/v1/tasks/${t.taskId}/environment/reset`, { abandon: true });
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    expect((await h.api('GET', `/v1/cleanup-jobs/${own.body.operationId}`)).body).toMatchObject({
      trigger: 'environment_abandon',
      state: 'succeeded',
      attempts: 0,
      report: { abandoned: { worktrees: [{ worktreePath: fresh }] } },
    });
    expect(existsSync(fresh)).toBe(true);
  });
});

describe('POST /v1/cleanup-jobs/:operationId/cancel', () => {
  it('ends an archive job in retry_wait: cancelled, the barrier lifted, the task unarchivable and launchable; a finished job is 409', async () => {
    const wrapper = gitWrapper(h.scratch, { failSubcommand: 'worktree remove', failTimes: 1000 });
    const hh = await createHarness({ gitBinary: wrapper, cleanupPolicy: { waitsMs: [60_000], maxAttempts: 8 } });
    harnesses.push(hh);
    const t = await stoppedTask(hh, 'cancel-archive');
    const accepted = await archive(hh, t.taskId);
    await waitForJob(hh, accepted.operationId, ['retry_wait']);
    const route = `/v1/cleanup-jobs/${accepted.operationId}/cancel`;
    expect((await hh.api('POST', route, undefined, USER_TOKEN)).status).toBe(403);
    const cancelled = await op(hh, 'POST', route);
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect(cancelled.body).toMatchObject({ operationId: accepted.operationId, state: 'cancelled' });
    expect((await hh.api('GET', `/v1/cleanup-jobs/${accepted.operationId}`)).body).toMatchObject({
      state: 'cancelled',
      attempts: 1,
      report: { ended: { action: 'cancel', by: 'operator' } },
    });
    expect(await hh.temporal.workflow.getHandle(accepted.workflowId).result()).toMatchObject({ state: 'cancelled' });

    expect((await launch(hh, t.taskId)).body.error.code).toBe('task_archived');
    const unarchived = await hh.api('POST', `/v1/tasks/${t.taskId}/unarchive`);
    expect(unarchived.status).toBe(200);
    expect(unarchived.body.state).toBe('active');
    clearGitFault(wrapper);
    expect((await launch(hh, t.taskId)).status).toBe(201);

    const again = await op(hh, 'POST', route);
    expect(again.status).toBe(409);
    expectSafeError(again.body, 'cleanup_job_finished');
    expectSafeError((await op(hh, 'POST', `/v1/cleanup-jobs/${randomUUID()}/cancel`)).body, 'not_found');
    const bad = await op(hh, 'POST', '/v1/cleanup-jobs/not-a-uuid/cancel');
    expect(bad.status).toBe(400);
  });

  it('ends a delete job in needs_operator (operator CLI): its worktree is recorded abandoned, stays on disk and the orphan sweep keeps it', async () => {
    const t = await stoppedTask(h, 'cancel-delete');
    writeFileSync(
      path.join(t.folder, OWNERSHIP_MARKER_FILE),
      JSON.stringify({ kind: 'task-workspaces/ownership', taskId: randomUUID(), environmentId: randomUUID() }),
    );
    const before = world(t);
    const deleted = await deleteTask(h, t.taskId);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(202);
    expect(await waitForJob(h, deleted.body.operationId, ['needs_operator'])).toMatchObject({
      attempts: 1,
      lastError: 'worktree_audit_foreign_marker',
    });

    // Not a synchronous child: the worker runs in this process and must answer the CLI's update.
    const { stdout: out } = await promisify(execFile)('bin/tws.mjs', ['cancel', deleted.body.operationId], {
      env: { ...process.env, TWS_API_URL: h.baseUrl, TWS_OPERATOR_TOKEN: OPERATOR_TOKEN },
      encoding: 'utf8',
    });
    expect(out).toContain('cancelled');
    const job = (await h.api('GET', `/v1/cleanup-jobs/${deleted.body.operationId}`)).body;
    expect(job).toMatchObject({
      state: 'cancelled',
      report: {
        ended: { action: 'cancel', by: 'operator' },
        abandoned: { taskFolder: t.folder, worktrees: [{ worktreePath: t.worktree, branch: t.branch }] },
      },
    });
    expect(world(t)).toEqual(before);

    const sweep = await op(h, 'POST', '/v1/orphan-sweep', {});
    expect(sweep.status).toBe(200);
    expect(sweep.body.kept).toContainEqual({ name: taskDirName(t.taskId), reason: 'live' });
    expect(world(t)).toEqual(before);
  });
});
