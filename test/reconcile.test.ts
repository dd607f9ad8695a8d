/** The periodic consistency check: a job whose workflow closed while the row says it is active is continued, and counted. */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { archive, waitForJob } from './support/cleanup';
import { harnessesPerTest, OPERATOR_TOKEN } from './support/harness';
import { createTask, launch, registerRepo } from './support/scenario';
import { clearGitFault, gitWrapper, makeRepo, worktreePaths } from './support/world';

const { harness, scratch } = harnessesPerTest();

describe('consistency check', () => {
  it('continues an active cleanup job whose workflow was terminated, to succeeded, and counts the repair in /metrics', async () => {
    const dir = await scratch();
    const wrapper = gitWrapper(dir, { failSubcommand: 'worktree remove', failTimes: 1000 });
    const h = await harness({ gitBinary: wrapper, cleanupPolicy: { waitsMs: [600_000], maxAttempts: 8 } });
    const repo = makeRepo(h.scratch, 'stranded');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'stranded')]);
    expect((await launch(h, taskId)).status).toBe(201);
    const accepted = await archive(h, taskId);
    await waitForJob(h, accepted.operationId, ['retry_wait']);
    // The workflow ends while its job is active (as a lost run, or an operator's terminate, leaves it).
    await h.temporal.workflow.getHandle(accepted.workflowId).terminate('lost');
    clearGitFault(wrapper);

    const check = () =>
      h.temporal.workflow.execute('reconcileRecords', {
        workflowId: `reconcile/${randomUUID()}`,
        taskQueue: h.config.taskQueue,
        args: [{ hostId: h.config.hostId }],
      });
    // A job younger than the check's minimum age is its workflow's business: left alone.
    expect(await check()).toMatchObject({ records: { repaired: {} } });
    await h.pool.query("UPDATE cleanup_jobs SET updated_at = now() - interval '2 minutes' WHERE operation_id = $1", [
      accepted.operationId,
    ]);
    expect(await check()).toMatchObject({ records: { repaired: { cleanup_job_resumed: 1 }, undecided: 0 } });

    const job = await waitForJob(h, accepted.operationId, ['succeeded'], 60_000);
    expect(job.state).toBe('succeeded');
    expect(worktreePaths(repo)).toEqual([repo]);
    // The row says succeeded a moment before its run completes: wait for the run, then read it.
    await h.temporal.workflow.getHandle(accepted.workflowId).result();
    expect((await h.temporal.workflow.getHandle(accepted.workflowId).describe()).status.name).toBe('COMPLETED');
    const metrics = await (await fetch(`${h.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/reconcile_repaired_total\{kind="cleanup_job_resumed"\} 1/);
    // Nothing is left to repair: a second check changes nothing.
    await h.pool.query("UPDATE cleanup_jobs SET updated_at = now() - interval '2 minutes'");
    expect(await check()).toMatchObject({ records: { repaired: {} } });
  });

  it('an operator retry or an unarchive of a job whose workflow was lost gives it a new run: retried to succeeded, or cancelled and the task active', async () => {
    const dir = await scratch();
    const wrapper = gitWrapper(dir, { failSubcommand: 'worktree remove', failTimes: 1000 });
    const h = await harness({ gitBinary: wrapper, cleanupPolicy: { waitsMs: [600_000], maxAttempts: 8 } });
    const stranded = async (name: string) => {
      const repo = makeRepo(h.scratch, name);
      const taskId = await createTask(h, [await registerRepo(h, repo, name)]);
      expect((await launch(h, taskId)).status).toBe(201);
      const accepted = await archive(h, taskId);
      await waitForJob(h, accepted.operationId, ['retry_wait']);
      await h.temporal.workflow.getHandle(accepted.workflowId).terminate('lost');
      return { repo, taskId, ...accepted };
    };
    const retried = await stranded('retried');
    const kept = await stranded('unarchived');
    clearGitFault(wrapper);

    const retry = await h.api('POST', `/v1/cleanup-jobs/${retried.operationId}/retry`, undefined, OPERATOR_TOKEN);
    expect(retry.status, JSON.stringify(retry.body)).toBe(202);
    expect((await waitForJob(h, retried.operationId, ['succeeded'])).state).toBe('succeeded');
    expect(worktreePaths(retried.repo)).toEqual([retried.repo]);

    const unarchived = await h.api('POST', `/v1/tasks/${kept.taskId}/unarchive`);
    expect(unarchived.status, JSON.stringify(unarchived.body)).toBe(200);
    expect(unarchived.body.state).toBe('active');
    // Cancelled before any attempt of the new run: the worktree is still there for the active task.
    expect(await waitForJob(h, kept.operationId, ['cancelled'])).toMatchObject({ state: 'cancelled', attempts: 1 });
    expect(worktreePaths(kept.repo)).toHaveLength(2);
    expect((await launch(h, kept.taskId)).status).toBe(201);
  });
});
