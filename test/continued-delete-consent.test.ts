/**
 * A continued delete knows its consent was given: the consent of a delete's
 * request (`discardChanges=true`) is kept on its job, so a new run of the job (its run was lost,
 * here terminated while it waited for an operator; the operator's retry continues it) saves the
 * uncommitted work and removes the worktree, as the first run would have, instead of keeping it.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { worktreePath } from '../domain/task-layout';
import { deleteTask, waitForJob } from './support/cleanup';
import { harnessesPerTest, OPERATOR_TOKEN } from './support/harness';
import { createTask, launch, registerRepo } from './support/scenario';
import { clearGitFault, git, gitWrapper, makeRepo, worktreePaths } from './support/world';

const { harness, scratch } = harnessesPerTest();

describe('a continued delete', () => {
  it('a consented delete continued by a new run saves and removes the dirty worktree', async () => {
    const dir = await scratch();
    const wrapper = gitWrapper(dir, { failSubcommand: 'worktree remove', failTimes: 1_000_000 });
    const h = await harness({ gitBinary: wrapper });
    const repo = makeRepo(h.scratch, 'consented');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'consented')]);
    const launched = await launch(h, taskId);
    expect(launched.status).toBe(201);
    const worktree = worktreePath(h.config.workspaceRoot, taskId, 'consented');
    writeFileSync(path.join(worktree, 'draft.txt'), 'uncommitted\n');

    const deleted = await deleteTask(h, taskId, 'discardChanges=true');
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(202);
    const waiting = await waitForJob(h, deleted.body.operationId, ['needs_operator']);
    expect(waiting.lastError).toBe('git_worktree_remove_failed');
    // Its run is lost (terminated), then git works again and the operator retries: a new run.
    const job = (
      await h.pool.query('SELECT workflow_id, discard_changes FROM cleanup_jobs WHERE operation_id = $1', [
        deleted.body.operationId,
      ])
    ).rows[0];
    expect(job.discard_changes).toBe(true);
    await h.temporal.workflow.getHandle(job.workflow_id).terminate('lost, for the test');
    clearGitFault(wrapper);
    const retried = await h.api(
      'POST',
      `/v1/cleanup-jobs/${deleted.body.operationId}/retry`,
      undefined,
      OPERATOR_TOKEN,
    );
    expect(retried.status, JSON.stringify(retried.body)).toBe(202);
    const done = await waitForJob(h, deleted.body.operationId);
    expect(done.report.worktrees).toMatchObject([{ outcome: 'saved_and_removed' }]);
    expect(worktreePaths(repo)).toEqual([repo]);
    expect(git(repo, 'show', `${done.report.worktrees[0].savedCommit}:draft.txt`)).toBe('uncommitted');
  });
});
