/**
 * Quick-chat expiry under time skipping: the expiry reads idleness on the
 * workflow's clock, so eight skipped days make a stopped quick chat expire: it is deleted through
 * its cleanup, its uncommitted work saved on its hidden ref first (no one can consent).
 */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '../domain/cleanup';
import { taskDirName } from '../domain/task-layout';
import { cleanupWorkflowId } from '../domain/workflow-ids';
import { timeSkippingSystem } from './support/time-skipping';
import { createTask, launch, registerRepo, waitUntil } from './support/scenario';
import { git, makeRepo, worktreePaths } from './support/world';

// The bare test server knows none of the project's search attributes: runs started without them start their children without them.
const system = timeSkippingSystem();

const WEEK_MS = 7 * 24 * 3600_000;
const expire = (workflowId: string) =>
  system.env.client.workflow.execute('expireQuickChats', {
    workflowId,
    taskQueue: system.h.config.taskQueue,
    args: [{ idleMs: WEEK_MS, policy: DEFAULT_RETRY_POLICY }],
  }) as Promise<string[]>;

it('a quick chat idle past the limit on the skipped clock is deleted, its uncommitted work saved; an ordinary task is untouched', async () => {
  const { h, env } = system;
  const dir = makeRepo(h.scratch, 'qc');
  const repositoryId = await registerRepo(h, dir, 'qc');
  const chat = await createTask(h, [repositoryId], { quickChat: true });
  const ordinary = await createTask(h, [repositoryId]);
  for (const taskId of [chat, ordinary]) {
    const res = await launch(h, taskId);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect((await h.api('POST', `/v1/sessions/${res.body.sessionId}/stop`)).status).toBe(200);
  }
  const worktree = path.join(h.config.workspaceRoot, taskDirName(chat), 'qc');
  writeFileSync(path.join(worktree, 'thought.txt'), 'an unsaved thought\n');

  // Now nothing has been idle for a week; eight days later the quick chat has.
  expect(await expire('quick-chat-expiry-now')).toEqual([]);
  await env.sleep('8 days');
  expect(await expire('quick-chat-expiry-later')).toEqual([chat]);

  // The expiry returns once each cleanup started; the cleanup's run id is recorded by its preparation.
  const child = cleanupWorkflowId('quick_chat_expiry', chat, '');
  let workflowId: string | undefined;
  await waitUntil(async () => {
    workflowId = (await h.pool.query('SELECT workflow_id FROM cleanup_jobs WHERE task_id = $1', [chat])).rows[0]
      ?.workflow_id;
    return workflowId !== undefined;
  }, 'the expiry cleanup is prepared');
  expect(workflowId!.startsWith(child)).toBe(true);
  const progress = await env.client.workflow.getHandle(workflowId!).result();
  expect(progress).toMatchObject({
    trigger: 'quick_chat_expiry',
    state: 'succeeded',
    report: { worktrees: [{ outcome: 'saved_and_removed' }] },
  });
  expect((await h.pool.query('SELECT count(*)::int AS n FROM tasks WHERE id = $1', [chat])).rows[0].n).toBe(0);
  expect(existsSync(worktree)).toBe(false);
  expect(worktreePaths(dir)).toEqual([dir, path.join(h.config.workspaceRoot, taskDirName(ordinary), 'qc')]);
  const saved = (await h.api('GET', `/v1/repositories/${repositoryId}/saved-work`)).body.items;
  expect(saved).toEqual([expect.objectContaining({ taskId: chat, repositoryId })]);
  expect(git(dir, 'show', `${saved[0].commit}:thought.txt`)).toBe('an unsaved thought');
  expect((await h.api('GET', `/v1/tasks/${ordinary}`)).body.state).toBe('active');
});
