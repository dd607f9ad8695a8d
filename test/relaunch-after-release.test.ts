/**
 * A randomized soak met `workspace_materialization_failed` on relaunches after
 * idle releases and abandons. Each way a shared group's workspace goes away while its members
 * are idle (an idle release, an abandon, one after the other, two abandons in a row) is followed
 * here by launches of the member that did not make it first, then of the one that did: every
 * launch is admitted, the group has one workspace, and nothing of the old one is lost.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskDirName } from '../domain/task-layout';
import { savedWorkOf, waitForJob } from './support/cleanup';
import { createHarness, OPERATOR_TOKEN, type Harness } from './support/harness';
import { createTask, groupSharingOne, launch, pidOf } from './support/scenario';
import { git, processCwd, worktreePaths } from './support/world';

let h: Harness;
beforeAll(async () => void (h = await createHarness()));
afterAll(async () => h?.close());

/** A group of two on one repository: G1 makes the workspace, G2 attaches; a file of work in it; both stopped. */
async function idleGroup() {
  const { name, repo, repositoryId, g1, g2, first, second } = await groupSharingOne(h, 'relaunch');
  const worktree = path.join(h.config.workspaceRoot, taskDirName(g1), name);
  writeFileSync(path.join(worktree, 'notes.txt'), 'work of the group\n');
  for (const s of [first, second])
    expect((await h.api('POST', `/v1/sessions/${s.body.sessionId}/stop`)).status).toBe(200);
  return { name, repo, repositoryId, g1, g2, worktree, branch: git(worktree, 'symbolic-ref', '--short', 'HEAD') };
}

/** The idle release of the group's workspace, through the operator's route; its job succeeded. */
async function releaseGroup(g: { g1: string; g2: string; worktree: string }) {
  const res = await h.api('POST', '/v1/idle-release', { hostId: h.config.hostId, idleForMs: 1 }, OPERATOR_TOKEN);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const released = (res.body.released as { taskId: string; operationId: string }[]).filter((r) =>
    [g.g1, g.g2].includes(r.taskId),
  );
  expect(released, JSON.stringify(res.body)).toHaveLength(1);
  expect((await waitForJob(h, released[0]!.operationId)).state).toBe('succeeded');
  expect(existsSync(g.worktree)).toBe(false);
}

/** The operator's abandon of the group's workspace, asked through the task that owns it; its job succeeded. */
async function abandon(taskId: string) {
  const reset = await h.api('POST', `/v1/tasks/${taskId}/environment/reset`, { abandon: true }, OPERATOR_TOKEN);
  expect(reset.status, JSON.stringify(reset.body)).toBeLessThan(300);
  if (reset.body.operationId) expect((await waitForJob(h, reset.body.operationId)).state).toBe('succeeded');
}

/** G2, then G1, launch: both admitted, into one workspace; the folder each agent works in. */
async function bothLaunch(g: { g1: string; g2: string }) {
  const byG2 = await launch(h, g.g2);
  expect(byG2.status, JSON.stringify(byG2.body)).toBe(201);
  expect(byG2.body.role).toBe('materialized');
  const byG1 = await launch(h, g.g1);
  expect(byG1.status, JSON.stringify(byG1.body)).toBe(201);
  expect(byG1.body).toMatchObject({ role: 'attached', taskEnvironmentId: byG2.body.taskEnvironmentId });
  const cwd = processCwd(await pidOf(h, byG2.body.sessionId));
  expect(processCwd(await pidOf(h, byG1.body.sessionId))).toBe(cwd);
  return { cwd, sessions: [byG2.body.sessionId as string, byG1.body.sessionId as string] };
}

const stopAll = async (sessions: string[]) => {
  for (const s of sessions) expect((await h.api('POST', `/v1/sessions/${s}/stop`)).status).toBe(200);
};

describe("a shared group's workspace launches again after it went away while idle", () => {
  it('released idle: the member that did not make it materializes it again where it was, with the work restored; the other attaches', async () => {
    const g = await idleGroup();
    await releaseGroup(g);
    const { cwd } = await bothLaunch(g);
    expect(cwd).toBe(g.worktree);
    expect(git(cwd, 'symbolic-ref', '--short', 'HEAD')).toBe(g.branch);
    expect(readFileSync(path.join(cwd, 'notes.txt'), 'utf8')).toBe('work of the group\n');
    expect(worktreePaths(g.repo)).toEqual([g.repo, g.worktree]);
  });

  it('abandoned twice in a row: each time a new folder on a new branch, and every abandoned folder and branch as it was', async () => {
    const g = await idleGroup();
    await abandon(g.g1);
    const once = await bothLaunch(g);
    expect(once.cwd).not.toBe(g.worktree);
    const onceBranch = git(once.cwd, 'symbolic-ref', '--short', 'HEAD');
    expect(onceBranch).not.toBe(g.branch);
    writeFileSync(path.join(once.cwd, 'second.txt'), 'work after the first abandon\n');
    await stopAll(once.sessions);

    await abandon(g.g1);
    const twice = await bothLaunch(g);
    expect([g.worktree, once.cwd]).not.toContain(twice.cwd);
    expect([g.branch, onceBranch]).not.toContain(git(twice.cwd, 'symbolic-ref', '--short', 'HEAD'));
    expect(existsSync(path.join(twice.cwd, 'notes.txt'))).toBe(false);
    // Nothing lost: each abandoned folder keeps its file on its branch.
    expect(readFileSync(path.join(g.worktree, 'notes.txt'), 'utf8')).toBe('work of the group\n');
    expect(git(g.worktree, 'symbolic-ref', '--short', 'HEAD')).toBe(g.branch);
    expect(readFileSync(path.join(once.cwd, 'second.txt'), 'utf8')).toBe('work after the first abandon\n');
    expect(git(once.cwd, 'symbolic-ref', '--short', 'HEAD')).toBe(onceBranch);
  });

  it('released idle, then abandoned: the next launches start afresh on a new branch; the saved work stays on its ref', async () => {
    const g = await idleGroup();
    await releaseGroup(g);
    await abandon(g.g1);
    const { cwd } = await bothLaunch(g);
    expect(git(cwd, 'symbolic-ref', '--short', 'HEAD')).not.toBe(g.branch);
    expect(existsSync(path.join(cwd, 'notes.txt'))).toBe(false);
    // The released branch is kept, and the work saved at the release is on its ref, abandoned.
    expect(git(g.repo, 'rev-parse', '--verify', '--quiet', `refs/heads/${g.branch}`)).not.toBe('');
    const saved = [...(await savedWorkOf(h, g.repositoryId, g.g1)), ...(await savedWorkOf(h, g.repositoryId, g.g2))];
    expect(saved).toHaveLength(1);
    expect(saved[0]).toMatchObject({ restore: 'abandoned', trigger: 'idle_release' });
    expect(git(g.repo, 'show', `${saved[0].commit}:notes.txt`)).toBe('work of the group');
  });
});

describe("a shared group's clean workspace reset by its owner's operator while every member is idle", () => {
  it('is removed for the whole group, the branch kept; the other member makes it again there from that branch, the first attaches', async () => {
    const { name, repo, g1, g2, first, second } = await groupSharingOne(h, 'reset');
    const worktree = path.join(h.config.workspaceRoot, taskDirName(g1), name);
    const branch = git(worktree, 'symbolic-ref', '--short', 'HEAD');
    await stopAll([first.body.sessionId, second.body.sessionId]);
    const reset = await h.api('POST', `/v1/tasks/${g1}/environment/reset`, {}, OPERATOR_TOKEN);
    expect(reset.status, JSON.stringify(reset.body)).toBe(202);
    const job = await waitForJob(h, reset.body.operationId);
    expect(job).toMatchObject({ state: 'succeeded', report: { borrowed: [] } });
    expect(existsSync(worktree)).toBe(false);
    expect(worktreePaths(repo)).toEqual([repo]);
    expect(git(repo, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`)).not.toBe('');
    const { cwd } = await bothLaunch({ g1, g2 });
    expect(cwd).toBe(worktree);
    expect(git(cwd, 'symbolic-ref', '--short', 'HEAD')).toBe(branch);
    expect(worktreePaths(repo)).toEqual([repo, worktree]);
  });
});

describe('a reset or abandon asked of a task that works in a workspace it does not own', () => {
  it("is refused 400 naming the task that owns it (its group's, its parent's), and changes nothing", async () => {
    const g = await idleGroup();
    const child = await createTask(h, [g.repositoryId], { parentTaskId: g.g1, workspace: { mode: 'inherit_parent' } });
    const before = await h.pool.query('SELECT id, status, workspace_path FROM task_environments ORDER BY id');
    for (const taskId of [g.g2, child])
      for (const body of [{ abandon: true }, {}]) {
        const res = await h.api('POST', `/v1/tasks/${taskId}/environment/reset`, body, OPERATOR_TOKEN);
        expect(res.status, JSON.stringify(res.body)).toBe(400);
        expect(res.body.error.code).toBe('invalid_request');
        expect(res.body.error.message).toContain(`task ${g.g1}`);
        expect(JSON.stringify(res.body)).not.toContain(h.scratch);
      }
    expect((await h.pool.query('SELECT id, status, workspace_path FROM task_environments ORDER BY id')).rows).toEqual(
      before.rows,
    );
    expect((await h.pool.query('SELECT 1 FROM cleanup_jobs WHERE task_id = ANY($1)', [[g.g2, child]])).rowCount).toBe(
      0,
    );
    expect(readFileSync(path.join(g.worktree, 'notes.txt'), 'utf8')).toBe('work of the group\n');
    // The owner's own reset is not refused.
    await abandon(g.g1);
  });
});
