/**
 * A shared group's workspace handed over at its owner's archive, then
 * archived by the new owner, launches again. With dirty work kept, the launch adopts the kept
 * worktree where it is (the environment's recorded folder) and the user's uncommitted file is
 * there for the agent; without, the worktree is made again in that folder. Either way the
 * ownership marker is beside the worktrees it vouches for and names the new owner, and no other
 * folder gets one.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNERSHIP_MARKER_FILE, taskDirName } from '../domain/task-layout';
import { archive, waitForJob } from './support/cleanup';
import { createHarness, OPERATOR_TOKEN, type Harness } from './support/harness';
import { agentOutputUntil, groupSharingOne, launch } from './support/scenario';
import { git, processCwd, worktreePaths } from './support/world';
import { pidOf } from './support/scenario';

let h: Harness;
beforeAll(async () => void (h = await createHarness()));
afterAll(async () => h?.close());

const markerIn = (folder: string): unknown =>
  existsSync(path.join(folder, OWNERSHIP_MARKER_FILE))
    ? JSON.parse(readFileSync(path.join(folder, OWNERSHIP_MARKER_FILE), 'utf8'))
    : null;

/** G1 materializes, G2 attaches, G1 is archived (the environment goes to G2), then G2 is stopped and archived. */
async function handedOverAndArchived(dirty: boolean) {
  const { name, repo, repositoryId, g1, g2, first, second } = await groupSharingOne(h, 'handed');
  const folder = path.join(h.config.workspaceRoot, taskDirName(g1));
  const worktree = path.join(folder, name);
  if (dirty) writeFileSync(path.join(worktree, 'notes.txt'), "the user's uncommitted work\n");

  const handOver = await waitForJob(h, (await archive(h, g1)).operationId);
  expect(handOver.report.borrowed).toMatchObject([{ action: 'handed_over', toTaskId: g2 }]);
  expect((await h.api('POST', `/v1/sessions/${second.body.sessionId}/stop`)).status).toBe(200);
  const own = await waitForJob(h, (await archive(h, g2)).operationId);
  expect(own.report.worktrees).toEqual([
    { repositoryId, worktreePath: worktree, outcome: dirty ? 'kept_dirty' : 'removed' },
  ]);
  expect((await h.api('POST', `/v1/tasks/${g2}/unarchive`)).status).toBe(200);
  return { repo, name, g1, g2, folder, worktree, environmentId: first.body.taskEnvironmentId as string };
}

describe('a handed-over group workspace launches again after its new owner archived it', () => {
  it('kept dirty: the launch adopts the kept worktree where it is, the uncommitted file is there for the agent, the marker beside it names the new owner', async () => {
    const t = await handedOverAndArchived(true);
    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await launch(h, t.g2, { command: ['sh', '-c', 'cat notes.txt; echo ready; sleep 600'] });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.taskEnvironmentId).toBe(t.environmentId);
      expect(await agentOutputUntil(h, res.body.executionId, 'ready')).toContain("the user's uncommitted work");
      expect(processCwd(await pidOf(h, res.body.sessionId))).toBe(t.worktree);
    }
    expect(worktreePaths(t.repo)).toEqual([t.repo, t.worktree]);
    expect(markerIn(t.folder)).toMatchObject({ taskId: t.g2, environmentId: t.environmentId });
    expect(existsSync(path.join(h.config.workspaceRoot, taskDirName(t.g2)))).toBe(false);
    const env = (
      await h.pool.query('SELECT status, task_folder, workspace_path FROM task_environments WHERE id = $1', [
        t.environmentId,
      ])
    ).rows[0];
    expect(env).toEqual({ status: 'ready', task_folder: t.folder, workspace_path: t.worktree });
  });

  it('clean: the worktree is made again in the recorded folder, with the marker beside it naming the new owner and none elsewhere', async () => {
    const t = await handedOverAndArchived(false);
    const res = await launch(h, t.g2);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(processCwd(await pidOf(h, res.body.sessionId))).toBe(t.worktree);
    expect(worktreePaths(t.repo)).toEqual([t.repo, t.worktree]);
    expect(markerIn(t.folder)).toMatchObject({ taskId: t.g2, environmentId: t.environmentId });
    expect(existsSync(path.join(h.config.workspaceRoot, taskDirName(t.g2)))).toBe(false);
  });
});

describe('a handed-over group workspace abandoned by the operator launches afresh', () => {
  it("the next launch makes a new folder on a new branch; the old owner's folder and branch stay as they are", async () => {
    const { name, repo, g1, g2, second } = await groupSharingOne(h, 'abandoned');
    const oldWorktree = path.join(h.config.workspaceRoot, taskDirName(g1), name);
    writeFileSync(path.join(oldWorktree, 'notes.txt'), 'kept where it is\n');
    const handOver = await waitForJob(h, (await archive(h, g1)).operationId);
    expect(handOver.report.borrowed).toMatchObject([{ action: 'handed_over', toTaskId: g2 }]);
    expect((await h.api('POST', `/v1/sessions/${second.body.sessionId}/stop`)).status).toBe(200);
    const oldBranch = git(oldWorktree, 'symbolic-ref', '--short', 'HEAD');

    const reset = await h.api('POST', `/v1/tasks/${g2}/environment/reset`, { abandon: true }, OPERATOR_TOKEN);
    expect(reset.status, JSON.stringify(reset.body)).toBeLessThan(300);
    expect((await waitForJob(h, reset.body.operationId)).state).toBe('succeeded');

    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await launch(h, g2);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      const cwd = processCwd(await pidOf(h, res.body.sessionId));
      expect(cwd).not.toBe(oldWorktree);
      expect(git(cwd, 'symbolic-ref', '--short', 'HEAD')).not.toBe(oldBranch);
      expect(existsSync(path.join(cwd, 'notes.txt'))).toBe(false);
    }
    // The abandoned folder, its file and its branch are as they were.
    expect(readFileSync(path.join(oldWorktree, 'notes.txt'), 'utf8')).toBe('kept where it is\n');
    expect(git(oldWorktree, 'symbolic-ref', '--short', 'HEAD')).toBe(oldBranch);
    expect(worktreePaths(repo)).toContain(oldWorktree);
  });
});
