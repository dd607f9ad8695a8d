/**
 * The default retry schedule itself, in the time-skipping test server: 8 attempts over the
 * documented waits (1m, 5m, 15m, 1h, 3h, 6h, 12h), then needs_operator [R6.4].
 */
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY, type CleanupInput } from '../domain/cleanup';
import { cleanupWorkflowId } from '../domain/workflow-ids';
import { timeSkippingSystem } from './support/time-skipping';
import { createTask, launch, registerRepo } from './support/scenario';
import { gitWrapper, makeRepo } from './support/world';

const system = timeSkippingSystem((h) => ({
  gitBinary: gitWrapper(h.scratch, { failSubcommand: 'worktree remove', failTimes: 1000 }),
}));

it('runs 8 attempts over the documented waits, then needs_operator, with the row and the workflow telling the same story', async () => {
  const { h, env } = system;
  const repo = makeRepo(h.scratch, 'schedule');
  const taskId = await createTask(h, [await registerRepo(h, repo, 'schedule')]);
  expect((await launch(h, taskId)).status).toBe(201);

  const operationId = randomUUID();
  const input: CleanupInput = {
    operationId,
    taskId,
    trigger: 'archive',
    discardChanges: false,
    policy: DEFAULT_RETRY_POLICY,
    alreadyPrepared: false,
  };
  const handle = await env.client.workflow.start('cleanupTask', {
    workflowId: cleanupWorkflowId('archive', taskId, operationId),
    taskQueue: h.config.taskQueue,
    args: [input],
  });
  await env.sleep('23 hours');

  const progress = await handle.query<{ state: string; attempts: number; lastError: string }>('progress');
  expect(progress).toMatchObject({ state: 'needs_operator', attempts: 8, lastError: 'git_worktree_remove_failed' });
  const job = (
    await h.pool.query(
      'SELECT state, attempts, last_error, next_attempt_at FROM cleanup_jobs WHERE operation_id = $1',
      [operationId],
    )
  ).rows[0];
  expect(job).toEqual({
    state: 'needs_operator',
    attempts: 8,
    last_error: 'git_worktree_remove_failed',
    next_attempt_at: null,
  });

  const history = await handle.fetchHistory();
  const waits = history
    .events!.filter((e) => e.timerStartedEventAttributes)
    .map((e) => Number(e.timerStartedEventAttributes!.startToFireTimeout!.seconds ?? 0));
  const MIN = 60;
  expect(waits).toEqual([1 * MIN, 5 * MIN, 15 * MIN, 60 * MIN, 180 * MIN, 360 * MIN, 720 * MIN]);
});
